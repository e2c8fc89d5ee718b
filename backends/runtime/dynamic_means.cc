#include "backends/runtime/dynamic_means.h"

#include <fmt/format.h>

#include <set>

#include "ir/graph_append.h"
#include "ir/ops/op_util.h"

namespace tandem::backends {

namespace {

using kernels::AxisExtent;
using kernels::TensorExtents;

// Copies `fn` node by node, with means over a dynamic axis replaced (steps 1-3 of
// DivideMeansByValidLength).
class MeanRewriter {
 public:
  MeanRewriter(const ir::GraphFunction& fn, ir::ValueId extent,
               const kernels::DynamicRanges& ranges, std::map<std::string, TensorExtents>& values)
      : fn_(fn), extent_(extent), ranges_(ranges), values_(values) {
    for (const ir::Node& node : fn.nodes) names_.insert(node.name);
  }

  ir::GraphFunction Run() {
    out_.name = fn_.name;
    out_.attrs = fn_.attrs;
    for (size_t i = 0; i < fn_.nodes.size(); ++i) {
      const ir::Node& node = fn_.nodes[i];
      ir::ValueId id = ReducesDynamicAxis(node) ? RewriteMean(node) : Copy(node);
      new_id_.push_back(id);
    }
    for (ir::ValueId p : fn_.params) out_.params.push_back(new_id_[static_cast<size_t>(p)]);
    out_.output = new_id_[static_cast<size_t>(fn_.output)];
    return out_;
  }

 private:
  bool ReducesDynamicAxis(const ir::Node& node) const {
    return node.kind == ir::NodeKind::kCall && node.op == "mean" &&
           !DynamicReducedAxes(node).empty();
  }

  // The reduced axes of a mean's operand whose extent is dynamic, each with its extent.
  std::vector<AxisExtent> DynamicReducedAxes(const ir::Node& mean) const {
    auto found = values_.find(fn_.node(mean.inputs.at(0)).name);
    if (found == values_.end()) return {};
    std::vector<AxisExtent> dynamic;
    for (size_t axis : ReducedAxes(mean)) {
      if (axis < found->second.size() && found->second[axis].dynamic()) {
        dynamic.push_back(found->second[axis]);
      }
    }
    return dynamic;
  }

  std::vector<size_t> ReducedAxes(const ir::Node& mean) const {
    const ir::Shape& shape = fn_.type_of(mean.inputs.at(0)).tensor().shape;
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> axes = mean.attrs.GetInts("axes", {});
    std::vector<size_t> reduced;
    for (int64_t axis = 0; axis < rank; ++axis) {
      bool listed = axes.empty();
      for (int64_t a : axes) listed = listed || ir::ops::NormalizeAxis(a, rank) == axis;
      if (listed) reduced.push_back(static_cast<size_t>(axis));
    }
    return reduced;
  }

  ir::ValueId Copy(const ir::Node& node) {
    ir::Node copy = node;
    for (ir::ValueId& in : copy.inputs) in = new_id_.at(static_cast<size_t>(in));
    out_.nodes.push_back(std::move(copy));
    return static_cast<ir::ValueId>(out_.nodes.size() - 1);
  }

  // A name not taken in the function, from `base`.
  std::string FreshName(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    names_.insert(name);
    return name;
  }

  // A call appended to the rebuilt function (names come from FreshName, so they stay).
  ir::ValueId Call(const std::string& op, std::vector<ir::ValueId> inputs, ir::Attrs attrs,
                   const std::string& name, const ir::Attrs& annotations = {}) {
    return ir::AppendCall(out_, op, inputs, std::move(attrs), name, annotations);
  }

  ir::ValueId Scalar(double value, ir::DataType dtype, const std::string& base) {
    return ir::AppendConstant(out_, ir::Tensor::FromDoubles({1}, dtype, {value}), FreshName(base));
  }

  // Steps 1-3 for one mean.
  ir::ValueId RewriteMean(const ir::Node& mean) {
    const ir::TensorType& result = mean.type.tensor();
    ir::DataType dtype = result.dtype;
    // 1. The count: the reduced static extents times each dynamic axis's valid length.
    const ir::Shape& shape = fn_.type_of(mean.inputs.at(0)).tensor().shape;
    const TensorExtents& extents = values_.at(fn_.node(mean.inputs.at(0)).name);
    double static_count = 1;
    for (size_t axis : ReducedAxes(mean)) {
      if (axis >= extents.size() || !extents[axis].dynamic()) {
        static_count *= static_cast<double>(shape[axis]);
      }
    }
    ir::ValueId count = -1;
    for (const AxisExtent& axis : DynamicReducedAxes(mean)) {
      const std::string& symbol = ranges_.at(axis.symbol).symbol;
      int64_t s = static_cast<int64_t>(axis.symbol);
      ir::ValueId n = Call("strided_slice", {Sizes(dtype)},
                           ir::Attrs{{"begin", std::vector<int64_t>{s}},
                                     {"end", std::vector<int64_t>{s + 1}},
                                     {"strides", std::vector<int64_t>{1}}},
                           FreshName(fmt::format("{}_{}", mean.name, symbol)));
      ir::ValueId length = n;
      if (axis.scale != 1) {
        length = Call("multiply", {length, Scalar(static_cast<double>(axis.scale), dtype, "scale")},
                      {}, FreshName(mean.name + "_scaled"));
      }
      if (axis.offset != 0) {
        length = Call("add", {length, Scalar(static_cast<double>(axis.offset), dtype, "offset")},
                      {}, FreshName(mean.name + "_length"));
      }
      count = count < 0 ? length
                        : Call("multiply", {count, length}, {}, FreshName(mean.name + "_lengths"));
    }
    if (static_count != 1) {
      count = Call("multiply", {count, Scalar(static_count, dtype, "static_count")}, {},
                   FreshName(mean.name + "_count"));
    }
    if (result.shape.empty()) {
      count = Call("reshape", {count}, ir::Attrs{{"newshape", std::vector<int64_t>{}}},
                   FreshName(mean.name + "_count_scalar"));
    }
    // 2. The sum of the same axes, in the mean's group.
    std::string sum_name = FreshName(mean.name + "_sum");
    ir::ValueId sum = Call("sum", {new_id_.at(static_cast<size_t>(mean.inputs.at(0)))}, mean.attrs,
                           sum_name, mean.annotations);
    values_[sum_name] = values_.count(mean.name) ? values_.at(mean.name) : TensorExtents{};
    // 3. The division, under the mean's name.
    return Call("divide", {sum, count}, {}, mean.name, mean.annotations);
  }

  // The sizes of the symbols in `dtype` (one cast of the extent parameter, made at first use).
  ir::ValueId Sizes(ir::DataType dtype) {
    auto found = sizes_.find(dtype);
    if (found != sizes_.end()) return found->second;
    ir::ValueId sizes =
        Call("cast", {new_id_.at(static_cast<size_t>(extent_))},
             ir::Attrs{{"dtype", ir::ToString(dtype)}},
             FreshName(fmt::format("{}_{}", fn_.node(extent_).name, ir::ToString(dtype))));
    sizes_[dtype] = sizes;
    return sizes;
  }

  const ir::GraphFunction& fn_;
  ir::ValueId extent_;
  const kernels::DynamicRanges& ranges_;
  std::map<std::string, TensorExtents>& values_;
  std::set<std::string> names_;
  std::vector<ir::ValueId> new_id_;
  std::map<ir::DataType, ir::ValueId> sizes_;
  ir::GraphFunction out_;
};

}  // namespace

ir::GraphFunction DivideMeansByValidLength(const ir::GraphFunction& fn, ir::ValueId extent,
                                           const kernels::DynamicRanges& ranges,
                                           std::map<std::string, TensorExtents>& values) {
  return MeanRewriter(fn, extent, ranges, values).Run();
}

}  // namespace tandem::backends
