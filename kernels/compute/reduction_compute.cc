// Reductions: sum, max, min and prod are one reduction block; mean is a sum block into an
// intermediate followed by a block that divides by the number of reduced elements.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/ops/op_util.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

void LowerReduction(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  const ir::Shape& shape = x->shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t>& axes = call.attrs.GetInts("axes");
  bool keepdims = call.attrs.GetInt("keepdims") == 1;
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t axis : axes) reduced[static_cast<size_t>(ir::ops::NormalizeAxis(axis, rank))] = true;

  // For every input axis: the position of its iterator among the spatial or reduction ones.
  std::vector<ReduceAxis> reduce_axes;
  std::vector<size_t> position(shape.size());
  size_t spatial_count = 0;
  int64_t count = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (reduced[k]) {
      position[k] = reduce_axes.size();
      reduce_axes.push_back(ReduceAxis{fmt::format("k{}", reduce_axes.size()), shape[k]});
      count *= shape[k];
      if (keepdims) ++spatial_count;
    } else {
      position[k] = spatial_count++;
    }
  }
  if (spatial_count != out->shape.size()) {
    throw LoweringError(call.op, "the result rank does not match the reduced axes");
  }
  auto value = [&](const std::vector<Var>& s, const std::vector<Var>& r) {
    std::vector<Expr> index;
    for (size_t k = 0; k < shape.size(); ++k) {
      index.push_back(reduced[k] ? r[position[k]] : s[position[k]]);
    }
    return ir::Load(x, index);
  };
  std::vector<std::string> names = AxisNames(out->shape.size());
  if (call.op == "sum" || call.op == "max" || call.op == "min" || call.op == "prod") {
    Reducer reducer = call.op == "sum"   ? Reducer::kSum
                      : call.op == "max" ? Reducer::kMax
                      : call.op == "min" ? Reducer::kMin
                                         : Reducer::kProd;
    builder.Reduce(call.op, out, names, reduce_axes, reducer, value);
    return;
  }
  if (call.op != "mean") throw LoweringError(call.op, "not a reduction op");
  ir::Buffer sum = builder.AddIntermediate(x->name + "_sum", out->dtype, out->shape);
  builder.Reduce("mean_sum", sum, names, reduce_axes, Reducer::kSum, value);
  builder.Compute("mean", out, names, [&](const std::vector<Var>& s) {
    return ir::Load(sum, s) / Constant(out->dtype, static_cast<double>(count));
  });
}

}  // namespace tandem::kernels
