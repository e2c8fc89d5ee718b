// topk in three reduction blocks: the rank of every element on its line (how many elements come
// before it: larger, or smaller with largest=0, or equal at a lower index), then for each output
// position p the index and the value of the element of rank p. Quadratic in the axis extent, and
// exact like the reference (which ranks the same way).
#include "ir/ops/op_util.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

// `s` with position `along` on `axis`.
std::vector<Expr> AlongAxis(const std::vector<Var>& s, size_t axis, const Expr& along) {
  std::vector<Expr> index(s.begin(), s.end());
  index[axis] = along;
  return index;
}

}  // namespace

void LowerTopK(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  const ir::Buffer& values = call.outputs.at(0);
  const ir::Buffer& indices = call.outputs.at(1);
  size_t axis = static_cast<size_t>(
      ir::ops::NormalizeAxis(call.attrs.GetInt("axis"), static_cast<int64_t>(x->shape.size())));
  bool largest = call.attrs.GetInt("largest") == 1;
  int64_t extent = x->shape[axis];
  std::vector<std::string> names = AxisNames(x->shape.size());
  std::vector<ReduceAxis> along = {ReduceAxis{"k", extent}};
  ir::Buffer rank = builder.AddIntermediate(x->name + "_rank", ir::DataType::kInt64, x->shape);
  builder.Reduce("topk_rank", rank, names, along, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   Expr v = ir::Load(x, AlongAxis(s, axis, s[axis]));
                   Expr w = ir::Load(x, AlongAxis(s, axis, r[0]));
                   Expr before = (largest ? w > v : w < v) || (w == v && r[0] < s[axis]);
                   return ir::Select(before, ir::IntImm(1), ir::IntImm(0));
                 });
  // The element of rank p: the only j on the line with rank[j] == p.
  auto holds_rank = [&](const std::vector<Var>& s, const Var& j) {
    return ir::Load(rank, AlongAxis(s, axis, j)) == ir::Cast(ir::DataType::kInt64, s[axis]);
  };
  builder.Reduce("topk_indices", indices, names, along, Reducer::kMin,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   return ir::Select(holds_rank(s, r[0]), ir::Cast(ir::DataType::kInt64, r[0]),
                                     ir::IntImm(extent));
                 });
  builder.Reduce("topk_values", values, names, along, Reducer::kMax,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   return ir::Select(holds_rank(s, r[0]), ir::Load(x, AlongAxis(s, axis, r[0])),
                                     ReducerIdentity(Reducer::kMax, x->dtype));
                 });
}

}  // namespace tandem::kernels
