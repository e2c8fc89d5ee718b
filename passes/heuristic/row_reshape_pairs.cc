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

// True when a value of `shape` broadcast against a row-wise chain value varies along the last
// axis at most: every extent before the last is 1.
bool VariesAlongLastAxisAtMost(const ir::Shape& shape) {
  for (size_t a = 0; a + 1 < shape.size(); ++a) {
    if (shape[a] != 1) return false;
  }
  return true;
}

// The row-wise op `node` applied with the chain value at operand `chain` of type `chain_type`
// instead of its own: the result type, or nullopt when the op is not row-wise in that operand
// or does not accept the type.
std::optional<ir::Type> RowWiseResult(const ir::GraphFunction& fn, const ir::Node& node,
                                      size_t chain, const ir::TensorType& chain_type) {
  if (node.kind != ir::NodeKind::kCall || !node.type.is_tensor()) return std::nullopt;
  const ir::OpDef* def = ir::OpRegistry::Global().Find(node.op);
  if (def == nullptr) return std::nullopt;
  bool linear = node.op == "dense" || node.op == "matmul";
  if (linear) {
    const ir::TensorType* weight =
        node.inputs.size() == 2 ? TensorTypeOf(fn, node.inputs[1]) : nullptr;
    if (chain != 0 || weight == nullptr || weight->rank() != 2) return std::nullopt;
  } else {
    bool pointwise = def->pattern == ir::PatternKind::kElementwise ||
                     def->pattern == ir::PatternKind::kBroadcast;
    if (!pointwise || node.attrs.Has("axis")) return std::nullopt;
    const ir::TensorType* result = &node.type.tensor();
    const ir::TensorType* before = TensorTypeOf(fn, node.inputs[chain]);
    if (before == nullptr || result->shape != before->shape) return std::nullopt;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (i == chain) continue;
      if (node.inputs[i] == node.inputs[chain]) return std::nullopt;
      const ir::TensorType* other = TensorTypeOf(fn, node.inputs[i]);
      if (other == nullptr || other->rank() > chain_type.rank() ||
          !VariesAlongLastAxisAtMost(other->shape)) {
        return std::nullopt;
      }
    }
  }
  std::vector<ir::Type> types;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    types.push_back(i == chain ? ir::Type(chain_type) : fn.type_of(node.inputs[i]));
  }
  try {
    return def->infer_type(types, node.attrs);
  } catch (const ir::Error&) {
    return std::nullopt;
  }
}

// One pair found: the value the first reshape regrouped, the shape it takes on the restored
// leading axes (its trailing axes merged into one row when the first reshape merged them too),
// the chain's ops in order (each with the operand index that reads the chain), and the reshape
// that restores the leading axes.
struct Pair {
  ir::ValueId source = -1;
  ir::TensorType rows;
  std::vector<std::pair<ir::ValueId, size_t>> chain;
  ir::ValueId restore = -1;
};

// Steps atop DropRowReshapePairs' analysis, from a reshape `first` read by `reader`:
//   1. follow single readers through ops that are row-wise on the regrouped value, up to a
//      reshape (the restoring one) that changes only the leading axes;
//   2. the restored leading axes must be the leading axes of the first reshape's operand, whose
//      remaining axes hold one row of the regrouped value;
//   3. the chain's ops applied on those axes must give exactly the restoring reshape's type.
std::optional<Pair> FindPair(const ir::GraphFunction& fn, const std::vector<int>& uses,
                             const std::vector<std::vector<ir::ValueId>>& consumers,
                             ir::ValueId first, ir::ValueId reader) {
  const ir::Node& reshape = fn.node(first);
  const ir::TensorType* source = TensorTypeOf(fn, reshape.inputs[0]);
  const ir::TensorType& grouped = reshape.type.tensor();
  if (source == nullptr || grouped.rank() < 2 || !source->layout.empty() ||
      !grouped.layout.empty()) {
    return std::nullopt;
  }
  Pair pair{reshape.inputs[0], {}, {}, -1};
  ir::ValueId current = first;
  ir::ValueId next = reader;
  while (pair.restore < 0) {
    const ir::Node& node = fn.node(next);
    if (IsReshapeLike(node)) {
      if (pair.chain.empty() || !node.type.is_tensor()) return std::nullopt;
      pair.restore = next;
      break;
    }
    size_t chain = 0;
    int reads = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == current) chain = i, ++reads;
    }
    const ir::TensorType* regrouped = TensorTypeOf(fn, current);
    if (reads != 1 || regrouped == nullptr || !RowWiseResult(fn, node, chain, *regrouped)) {
      return std::nullopt;
    }
    pair.chain.emplace_back(next, chain);
    if (uses[static_cast<size_t>(next)] != 1 || next == fn.output) return std::nullopt;
    current = next;
    next = consumers[static_cast<size_t>(next)].front();
  }
  // 2. The restored leading axes lead the source; the source's other axes form one row.
  const ir::TensorType& restored = fn.node(pair.restore).type.tensor();
  const ir::TensorType& last = fn.type_of(current).tensor();
  if (restored.rank() < 2 || restored.shape.back() != last.shape.back() ||
      restored.rank() > source->rank()) {
    return std::nullopt;
  }
  ir::Shape leading(restored.shape.begin(), restored.shape.end() - 1);
  if (!std::equal(leading.begin(), leading.end(), source->shape.begin())) return std::nullopt;
  int64_t row = 1;
  for (size_t a = leading.size(); a < source->shape.size(); ++a) row *= source->shape[a];
  if (row != grouped.shape.back()) return std::nullopt;
  leading.push_back(row);
  pair.rows = ir::TensorType{leading, source->dtype, ""};
  // 3. The chain on the restored axes.
  ir::TensorType tracked = pair.rows;
  for (const auto& [op, operand] : pair.chain) {
    std::optional<ir::Type> result = RowWiseResult(fn, fn.node(op), operand, tracked);
    if (!result || !result->is_tensor()) return std::nullopt;
    tracked = result->tensor();
  }
  if (tracked != restored) return std::nullopt;
  return pair;
}

}  // namespace

ir::GraphFunction DropRowReshapePairs(const ir::GraphFunction& fn) {
  // 1. Find the pairs, each chain op claimed once.
  std::vector<int> uses = ir::UseCounts(fn);
  std::vector<std::vector<ir::ValueId>> consumers = Consumers(fn);
  std::map<ir::ValueId, ir::ValueId>
      chain_source;  // chain op -> the value its chain operand becomes
  std::map<ir::ValueId, size_t> chain_operand;
  std::map<ir::ValueId, ir::TensorType> row_shape;  // first chain op -> its source as rows
  std::map<ir::ValueId, ir::ValueId> restored;      // restoring reshape -> last chain op
  for (size_t id = 0; id < fn.nodes.size(); ++id) {
    if (!IsReshapeLike(fn.nodes[id]) || !fn.nodes[id].type.is_tensor()) continue;
    std::set<ir::ValueId> readers(consumers[id].begin(), consumers[id].end());
    for (ir::ValueId reader : readers) {
      std::optional<Pair> pair =
          FindPair(fn, uses, consumers, static_cast<ir::ValueId>(id), reader);
      if (!pair || chain_source.count(pair->chain.front().first) != 0) continue;
      ir::ValueId previous = pair->source;
      if (fn.type_of(pair->source) != ir::Type(pair->rows)) {
        row_shape[pair->chain.front().first] = pair->rows;
      }
      for (const auto& [op, operand] : pair->chain) {
        chain_source[op] = previous;
        chain_operand[op] = operand;
        previous = op;
      }
      restored[pair->restore] = previous;
    }
  }
  if (restored.empty()) return fn;
  // 2. Rebuild: chain ops read the value on the original axes; restoring reshapes disappear.
  return RewriteNodes(
      fn,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        const ir::Node& node = fn.node(id);
        if (auto last = restored.find(id); last != restored.end()) {
          ir::ValueId value = map[static_cast<size_t>(last->second)];
          if (out.type_of(value) == node.type) return value;
          return AppendCall(out, "reshape", {value},
                            ir::Attrs{{"newshape", node.type.tensor().shape}}, node.name,
                            node.annotations);
        }
        auto source = chain_source.find(id);
        if (source == chain_source.end()) return -1;
        std::vector<ir::ValueId> inputs;
        for (ir::ValueId input : node.inputs) inputs.push_back(map[static_cast<size_t>(input)]);
        ir::ValueId chain_value = map[static_cast<size_t>(source->second)];
        if (auto rows = row_shape.find(id); rows != row_shape.end()) {
          // The source's trailing axes merged into one row; its leading axes stay apart.
          chain_value =
              AppendCall(out, "reshape", {chain_value}, ir::Attrs{{"newshape", rows->second.shape}},
                         fn.node(source->second).name + "_rows");
        }
        inputs[chain_operand.at(id)] = chain_value;
        return AppendCall(out, node.op, inputs, node.attrs, node.name, node.annotations);
      });
}

}  // namespace tandem::passes
