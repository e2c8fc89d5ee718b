// Ops along one axis. argmax / argmin: a reduction block finds each line's extreme value, a
// second one the smallest (largest, with select_last_index) index holding it. cumsum: one
// reduction block per output element over the whole axis, summing the elements on its side of
// the output position (quadratic in the axis extent, exact like the reference).
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/ops/op_util.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

// The input index of the element at position `along` of the line through the result index
// `s`: `s` with `along` at `axis` (put in place of the kept unit axis when `kept`, inserted
// otherwise).
std::vector<Expr> LineIndex(const std::vector<Var>& s, size_t axis, const Expr& along, bool kept) {
  std::vector<Expr> index(s.begin(), s.end());
  if (kept) {
    index[axis] = along;
  } else {
    index.insert(index.begin() + static_cast<int64_t>(axis), along);
  }
  return index;
}

size_t OperandAxis(const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  return static_cast<size_t>(
      ir::ops::NormalizeAxis(call.attrs.GetInt("axis"), static_cast<int64_t>(x->shape.size())));
}

}  // namespace

void LowerArgExtreme(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  size_t axis = OperandAxis(call);
  bool kept = call.attrs.GetInt("keepdims") == 1;
  bool last = call.attrs.GetInt("select_last_index") == 1;
  bool is_max = call.op == "argmax";
  if (!is_max && call.op != "argmin") throw LoweringError(call.op, "not argmax or argmin");
  int64_t extent = x->shape[axis];
  std::vector<std::string> names = AxisNames(out->shape.size());
  std::vector<ReduceAxis> along = {ReduceAxis{"k", extent}};
  ir::Buffer extreme = builder.AddIntermediate(x->name + "_extreme", x->dtype, out->shape);
  builder.Reduce(call.op + "_value", extreme, names, along, is_max ? Reducer::kMax : Reducer::kMin,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   return ir::Load(x, LineIndex(s, axis, r[0], kept));
                 });
  // The first index holding the extreme value is the minimum over the line of (index where the
  // value is the extreme, else the extent); the last is the maximum of (index, else -1).
  builder.Reduce(call.op, out, names, along, last ? Reducer::kMax : Reducer::kMin,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   Expr hit = ir::Load(x, LineIndex(s, axis, r[0], kept)) == ir::Load(extreme, s);
                   Expr index = ir::Cast(ir::DataType::kInt64, r[0]);
                   return ir::Select(hit, index, ir::IntImm(last ? -1 : extent));
                 });
}

void LowerCumsum(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  size_t axis = OperandAxis(call);
  bool exclusive = call.attrs.GetInt("exclusive") == 1;
  bool reverse = call.attrs.GetInt("reverse") == 1;
  std::vector<ReduceAxis> along = {ReduceAxis{"k", x->shape[axis]}};
  builder.Reduce("cumsum", out, AxisNames(out->shape.size()), along, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   const Expr position = s[axis];
                   const Expr k = r[0];
                   Expr included = reverse ? (exclusive ? k > position : k >= position)
                                           : (exclusive ? k < position : k <= position);
                   return ir::Select(included, ir::Load(x, LineIndex(s, axis, k, true)),
                                     Constant(x->dtype, 0));
                 });
}

}  // namespace tandem::kernels
