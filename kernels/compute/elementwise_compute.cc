// Elementwise and broadcast ops: one spatial block over the result.
#include <cmath>
#include <numbers>

#include "ir/error.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {
namespace {

using ir::Expr;
using ir::Var;

// a / b; integers truncate like the reference, and a division by zero gives what the
// reference's double division saturates to: the largest value for a > 0, the lowest for a < 0,
// 0 for 0 / 0.
Expr Divide(const Expr& a, const Expr& b) {
  ir::DataType t = a->dtype;
  if (ir::IsFloat(t)) return a / b;
  Expr zero = Constant(t, 0);
  Expr by_zero = ir::Select(a > zero, Constant(t, INFINITY),
                            ir::Select(a < zero, Constant(t, -INFINITY), zero));
  return ir::Select(b == zero, by_zero, a / ir::Select(b == zero, Constant(t, 1), b));
}

Expr ApplyBinary(const std::string& op, const Expr& a, const Expr& b) {
  if (op == "add") return a + b;
  if (op == "subtract") return a - b;
  if (op == "multiply") return a * b;
  if (op == "divide") return Divide(a, b);
  if (op == "pow") return ir::Call("pow", {a, b}, a->dtype);
  bool is_float = ir::IsFloat(a->dtype);
  // Float maximum and minimum propagate a NaN of either operand: Max and Min keep a NaN `a`
  // only.
  if (op == "maximum") return is_float ? ir::Select(b != b, b, ir::Max(a, b)) : ir::Max(a, b);
  if (op == "minimum") return is_float ? ir::Select(b != b, b, ir::Min(a, b)) : ir::Min(a, b);
  if (op == "prelu") return ir::Select(a < Constant(a->dtype, 0), b * a, a);
  throw LoweringError(op, "not a binary elementwise op");
}

Expr Gelu(const Expr& x, const std::string& approximate) {
  ir::DataType t = x->dtype;
  auto c = [t](double v) { return ir::FloatImm(v, t); };
  if (approximate == "tanh") {
    Expr inner = c(std::sqrt(2.0 / std::numbers::pi)) * (x + c(0.044715) * x * x * x);
    return c(0.5) * x * (c(1.0) + ir::Call("tanh", {inner}, t));
  }
  return x * c(0.5) * (c(1.0) + ir::Call("erf", {x * c(1.0 / std::numbers::sqrt2)}, t));
}

Expr Clip(const Expr& x, double low, double high) {
  Expr v = x;
  if (low > -INFINITY) v = ir::Max(v, ir::FloatImm(low, x->dtype));
  if (high < INFINITY) v = ir::Min(v, ir::FloatImm(high, x->dtype));
  return v;
}

Expr ApplyUnary(const OpCall& call, const Expr& x) {
  const std::string& op = call.op;
  ir::DataType dtype = x->dtype;
  if (op == "relu") return ir::Max(x, Constant(dtype, 0));
  if (op == "sigmoid" || op == "tanh" || op == "exp" || op == "log" || op == "sqrt" ||
      op == "erf" || op == "abs" || op == "floor" || op == "ceil" || op == "round") {
    return ir::Call(op, {x}, dtype);
  }
  // Compound formulas run in a float type and convert back like the reference does.
  Expr value = ir::Cast(MathType(dtype), x);
  if (op == "gelu") {
    const std::string& approximate = call.attrs.GetString("approximate");
    if (approximate != "none" && approximate != "tanh") {
      throw LoweringError(
          op, "approximate must be \"none\" or \"tanh\" but is \"" + approximate + "\"");
    }
    value = Gelu(value, approximate);
  } else if (op == "clip") {
    value = Clip(value, call.attrs.GetFloat("min"), call.attrs.GetFloat("max"));
  } else if (op == "leaky_relu" || op == "elu") {
    ir::DataType t = value->dtype;
    Expr alpha = ir::FloatImm(call.attrs.GetFloat("alpha"), t);
    Expr negative = op == "leaky_relu"
                        ? alpha * value
                        : alpha * (ir::Call("exp", {value}, t) - ir::FloatImm(1.0, t));
    value = ir::Select(value < ir::FloatImm(0.0, t), negative, value);
  } else {
    throw LoweringError(op, "not a unary elementwise op");
  }
  return ir::Cast(dtype, value);
}

}  // namespace

void LowerBinary(ComputeBuilder& builder, const OpCall& call) {
  const ir::Shape& shape = call.output_types[0].shape;
  const ir::Buffer& a = call.inputs[0];
  const ir::Buffer& b = call.inputs[1];
  builder.Compute(call.op, call.outputs[0], AxisNames(shape.size()),
                  [&](const std::vector<Var>& i) {
                    Expr x = ir::Load(a, BroadcastIndex(i, shape, a->shape));
                    Expr y = ir::Load(b, BroadcastIndex(i, shape, b->shape));
                    return ApplyBinary(call.op, x, y);
                  });
}

void LowerUnary(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  builder.Compute(call.op, call.outputs[0], AxisNames(x->shape.size()),
                  [&](const std::vector<Var>& i) { return ApplyUnary(call, ir::Load(x, i)); });
}

void LowerCast(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  ir::DataType dtype = call.outputs[0]->dtype;
  builder.Compute("cast", call.outputs[0], AxisNames(x->shape.size()),
                  [&](const std::vector<Var>& i) { return ir::Cast(dtype, ir::Load(x, i)); });
}

}  // namespace tandem::kernels
