#include "passes/heuristic/row_reshape_pairs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"

namespace tandem::passes {

namespace {

// The tensor type of `id`, or nullptr for a tuple.
const ir::TensorType* TensorTypeOf(const ir::GraphFunction& fn, ir::ValueId id) {
  const ir::Type& type = fn.type_of(id);
  return type.is_tensor() ? &type.tensor() : nullptr;
}

// True when a value of `shape` broadcast against a row-wise value varies along the last axis at
// most: every extent before the last is 1.
bool VariesAlongLastAxisAtMost(const ir::Shape& shape) {
  for (size_t a = 0; a + 1 < shape.size(); ++a) {
    if (shape[a] != 1) return false;
  }
  return true;
}

// True when `axis` names the last of `rank` axes.
bool IsLastAxis(int64_t axis, int64_t rank) {
  return axis == -1 || axis == rank - 1;
}

// One region found from a reshape `first`: the type its operand takes with the restored leading
// axes (its remaining axes merged into one row), its ops in graph order, the restoring reshapes.
struct Region {
  ir::ValueId first = -1;
  ir::TensorType rows;
  std::vector<ir::ValueId> ops;
  std::set<ir::ValueId> restores;
};

class RegionFinder {
 public:
  explicit RegionFinder(const ir::GraphFunction& fn) : fn_(fn), uses_(ir::UseCounts(fn)) {}

  // Steps atop the analysis of the region of the reshape `first`:
  //   1. walk the nodes after `first` in order until every read of a region value is seen; a
  //      node reading a region value is a restoring reshape, or a row-wise op that joins the
  //      region; anything else ends the analysis, as does a region value the function returns;
  //   2. the restoring reshapes agree on the leading axes, which lead `first`'s operand, whose
  //      remaining axes hold one row of the regrouped value;
  //   3. the region's ops, applied on the restored axes, give each restoring reshape its type.
  std::optional<Region> Find(ir::ValueId first) {
    const ir::Node& reshape = fn_.node(first);
    const ir::TensorType* source = TensorTypeOf(fn_, reshape.inputs[0]);
    if (!reshape.type.is_tensor() || source == nullptr || !source->layout.empty()) {
      return std::nullopt;
    }
    grouped_ = reshape.type.tensor();
    if (grouped_.rank() < 2 || !grouped_.layout.empty()) return std::nullopt;
    Region region{first, {}, {}, {}};
    std::set<ir::ValueId> values = {first};
    int64_t unseen_reads = uses_[static_cast<size_t>(first)];
    for (size_t i = static_cast<size_t>(first) + 1; i < fn_.nodes.size() && unseen_reads > 0; ++i) {
      ir::ValueId id = static_cast<ir::ValueId>(i);
      const ir::Node& node = fn_.node(id);
      int64_t reads = std::count_if(node.inputs.begin(), node.inputs.end(),
                                    [&](ir::ValueId input) { return values.count(input) != 0; });
      if (reads == 0) continue;
      unseen_reads -= reads;
      if (IsReshapeLike(node) && node.type.is_tensor()) {
        region.restores.insert(id);
      } else if (IsRowWise(node, values)) {
        region.ops.push_back(id);
        values.insert(id);
        unseen_reads += uses_[i];
      } else {
        return std::nullopt;
      }
    }
    if (region.ops.empty() || region.restores.empty()) return std::nullopt;
    for (ir::ValueId value : values) {
      if (value == fn_.output) return std::nullopt;
    }
    // 2. The restored leading axes.
    ir::Shape leading;
    for (ir::ValueId restore : region.restores) {
      const ir::Shape& shape = fn_.node(restore).type.tensor().shape;
      const ir::Shape& before = fn_.type_of(fn_.node(restore).inputs[0]).tensor().shape;
      if (shape.size() < 2 || shape.back() != before.back()) return std::nullopt;
      ir::Shape these(shape.begin(), shape.end() - 1);
      if (restore != *region.restores.begin() && these != leading) return std::nullopt;
      leading = these;
    }
    if (leading.size() >= source->shape.size() ||
        !std::equal(leading.begin(), leading.end(), source->shape.begin())) {
      return std::nullopt;
    }
    int64_t row = 1;
    for (size_t a = leading.size(); a < source->shape.size(); ++a) row *= source->shape[a];
    if (row != grouped_.shape.back()) return std::nullopt;
    leading.push_back(row);
    region.rows = ir::TensorType{leading, source->dtype, ""};
    // 3. The region's types on the restored axes.
    std::map<ir::ValueId, ir::Type> types = {{first, ir::Type(region.rows)}};
    for (ir::ValueId op : region.ops) {
      std::optional<ir::Type> result = Retyped(fn_, fn_.node(op), types, region.rows.rank());
      if (!result) return std::nullopt;
      types[op] = *result;
    }
    for (ir::ValueId restore : region.restores) {
      if (types.at(fn_.node(restore).inputs[0]) != fn_.node(restore).type) return std::nullopt;
    }
    return region;
  }

  // `node`'s attributes for the region's rank `rank`: a last-axis reduction or softmax names the
  // new last axis.
  static ir::Attrs AttrsAtRank(const ir::Node& node, int64_t rank) {
    ir::Attrs attrs = node.attrs;
    if (attrs.Has("axes")) attrs.Set("axes", std::vector<int64_t>{rank - 1});
    if (attrs.Has("axis")) attrs.Set("axis", int64_t{rank - 1});
    return attrs;
  }

  // The result type of `node` with its region operands of the types in `types`, on the region's
  // rank; nullopt when the op does not accept them.
  static std::optional<ir::Type> Retyped(const ir::GraphFunction& fn, const ir::Node& node,
                                         const std::map<ir::ValueId, ir::Type>& types,
                                         int64_t rank) {
    std::vector<ir::Type> inputs;
    for (ir::ValueId input : node.inputs) {
      auto it = types.find(input);
      inputs.push_back(it != types.end() ? it->second : fn.type_of(input));
    }
    try {
      return ir::OpRegistry::Global().Get(node.op).infer_type(inputs, AttrsAtRank(node, rank));
    } catch (const ir::Error&) {
      return std::nullopt;
    }
  }

 private:
  // True when `node`, reading the region values `values`, computes each row of its result from
  // the same row of its region operands: dense or matmul reading the region as its rows with a
  // rank-2 weight; an elementwise or broadcasting op without an axis, whose other operands vary
  // along the last axis at most; a reduction over the last axis that keeps it; a softmax over
  // the last axis.
  bool IsRowWise(const ir::Node& node, const std::set<ir::ValueId>& values) const {
    if (node.kind != ir::NodeKind::kCall || !node.type.is_tensor()) return false;
    const ir::TensorType& result = node.type.tensor();
    if (result.rank() != grouped_.rank() ||
        !std::equal(grouped_.shape.begin(), grouped_.shape.end() - 1, result.shape.begin())) {
      return false;
    }
    const ir::OpDef* def = ir::OpRegistry::Global().Find(node.op);
    if (def == nullptr) return false;
    auto outside_ok = [&](size_t i, bool rank_two_weight) {
      const ir::TensorType* type = TensorTypeOf(fn_, node.inputs[i]);
      if (type == nullptr) return false;
      if (rank_two_weight) return type->rank() == 2;
      return type->rank() <= grouped_.rank() && VariesAlongLastAxisAtMost(type->shape);
    };
    if (node.op == "dense" || node.op == "matmul") {
      return node.inputs.size() == 2 && values.count(node.inputs[0]) != 0 &&
             values.count(node.inputs[1]) == 0 && outside_ok(1, true);
    }
    if (node.op == "softmax" || node.op == "log_softmax") {
      return IsLastAxis(node.attrs.GetInt("axis"), grouped_.rank());
    }
    if (def->pattern == ir::PatternKind::kReduction) {
      if (node.inputs.size() != 1 || !node.attrs.Has("axes") || !node.attrs.Has("keepdims")) {
        return false;
      }
      const std::vector<int64_t>& axes = node.attrs.GetInts("axes");
      return axes.size() == 1 && IsLastAxis(axes[0], grouped_.rank()) &&
             node.attrs.GetInt("keepdims") == 1 && node.attrs.values().size() == 2;
    }
    bool pointwise = def->pattern == ir::PatternKind::kElementwise ||
                     def->pattern == ir::PatternKind::kBroadcast;
    if (!pointwise || node.attrs.Has("axis")) return false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (values.count(node.inputs[i]) == 0 && !outside_ok(i, false)) return false;
    }
    return true;
  }

  const ir::GraphFunction& fn_;
  std::vector<int> uses_;
  ir::TensorType grouped_;
};

}  // namespace

std::optional<ir::GraphFunction> DropRowReshapePairs(const ir::GraphFunction& fn) {
  // 1. Find the regions, each node claimed once.
  RegionFinder finder(fn);
  std::map<ir::ValueId, size_t> owner;  // region op or reshape -> index of its region
  std::vector<Region> regions;
  for (size_t id = 0; id < fn.nodes.size(); ++id) {
    if (!IsReshapeLike(fn.nodes[id]) || owner.count(static_cast<ir::ValueId>(id)) != 0) continue;
    std::optional<Region> region = finder.Find(static_cast<ir::ValueId>(id));
    if (!region) continue;
    owner[region->first] = regions.size();
    for (ir::ValueId op : region->ops) owner[op] = regions.size();
    for (ir::ValueId restore : region->restores) owner[restore] = regions.size();
    regions.push_back(std::move(*region));
  }
  if (regions.empty()) return std::nullopt;
  // 2. Rebuild: the first reshape keeps the leading axes, the region's ops work on them, and the
  //    restoring reshapes disappear.
  return RewriteNodes(
      fn,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        auto it = owner.find(id);
        if (it == owner.end()) return -1;
        const Region& region = regions[it->second];
        const ir::Node& node = fn.node(id);
        std::vector<ir::ValueId> inputs;
        for (ir::ValueId input : node.inputs) inputs.push_back(map[static_cast<size_t>(input)]);
        if (id == region.first) {
          ir::ValueId source = inputs[0];
          if (out.type_of(source) == ir::Type(region.rows)) return source;
          return AppendCall(out, "reshape", {source}, ir::Attrs{{"newshape", region.rows.shape}},
                            node.name, node.annotations);
        }
        if (region.restores.count(id) != 0) {
          if (out.type_of(inputs[0]) == node.type) return inputs[0];
          return AppendCall(out, "reshape", {inputs[0]},
                            ir::Attrs{{"newshape", node.type.tensor().shape}}, node.name,
                            node.annotations);
        }
        return AppendCall(out, node.op, inputs, RegionFinder::AttrsAtRank(node, region.rows.rank()),
                          node.name, node.annotations);
      });
}

}  // namespace tandem::passes
