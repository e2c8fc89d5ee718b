// Comparisons, boolean logic and where: one spatial block over the broadcast result.
#include "ir/error.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

Expr Compare(const std::string& op, const Expr& a, const Expr& b) {
  if (op == "equal") return a == b;
  if (op == "less") return a < b;
  if (op == "greater") return a > b;
  if (op == "less_equal") return a <= b;
  if (op == "greater_equal") return a >= b;
  if (op == "logical_and") return a && b;
  if (op == "logical_or") return a || b;
  if (op == "logical_xor") return a != b;
  throw LoweringError(op, "not a comparison or logical op");
}

}  // namespace

void LowerCompare(ComputeBuilder& builder, const OpCall& call) {
  const ir::Shape& shape = call.output_types[0].shape;
  const ir::Buffer& a = call.inputs[0];
  const ir::Buffer& b = call.inputs[1];
  builder.Compute(call.op, call.outputs[0], AxisNames(shape.size()),
                  [&](const std::vector<Var>& i) {
                    Expr x = ir::Load(a, BroadcastIndex(i, shape, a->shape));
                    Expr y = ir::Load(b, BroadcastIndex(i, shape, b->shape));
                    return Compare(call.op, x, y);
                  });
}

void LowerLogicalNot(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  builder.Compute("logical_not", call.outputs[0], AxisNames(x->shape.size()),
                  [&](const std::vector<Var>& i) { return !ir::Load(x, i); });
}

void LowerWhere(ComputeBuilder& builder, const OpCall& call) {
  const ir::Shape& shape = call.output_types[0].shape;
  const ir::Buffer& condition = call.inputs[0];
  const ir::Buffer& x = call.inputs[1];
  const ir::Buffer& y = call.inputs[2];
  builder.Compute(
      "where", call.outputs[0], AxisNames(shape.size()), [&](const std::vector<Var>& i) {
        return ir::Select(ir::Load(condition, BroadcastIndex(i, shape, condition->shape)),
                          ir::Load(x, BroadcastIndex(i, shape, x->shape)),
                          ir::Load(y, BroadcastIndex(i, shape, y->shape)));
      });
}

}  // namespace tandem::kernels
