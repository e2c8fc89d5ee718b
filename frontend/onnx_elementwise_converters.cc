// Converters of the ONNX activations and elementwise math beyond the basic ones: LeakyRelu,
// PRelu, Elu, Selu, HardSigmoid, HardSwish, Softplus, Log, Abs, Floor, Ceil, Round, the
// variadic Sum, Mean, Max and Min, and the com.microsoft fused GELUs (Gelu, FastGelu, BiasGelu)
// that ONNX Runtime's exporters emit.
//
// An op that is a short chain of graph ops with the same semantics becomes that chain (Selu is
// gamma * elu, HardSigmoid a clip of alpha * x + beta, Mean a sum divided by the count); FuseOps
// fuses the chain into one kernel like a single op.
#include <fmt/format.h>

#include <cmath>

#include "frontend/onnx_convert.h"
#include "ir/error.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::DataType;

Value Multiply(NodeContext& ctx, Value x, double factor) {
  return ctx.Call("multiply", {x, ctx.Scalar(factor, ctx.TypeOf(x).dtype)});
}

// The float attribute `name` (default `fallback`); Fail unless it is finite.
double FiniteFloat(NodeContext& ctx, const std::string& name, double fallback) {
  double value = ctx.Float(name, fallback);
  if (!std::isfinite(value)) {
    ctx.Fail(
        fmt::format("attribute '{}' of {} must be finite but is {}", name, ctx.op_type(), value));
  }
  return value;
}

std::vector<Value> ConvertLeakyRelu(NodeContext& ctx) {
  double alpha = FiniteFloat(ctx, "alpha", 0.01);
  return {ctx.Call("leaky_relu", {ctx.Input(0)}, Attrs{{"alpha", alpha}})};
}

std::vector<Value> ConvertPRelu(NodeContext& ctx) {
  Value x = ctx.Input(0), slope = ctx.Input(1);
  if (ctx.InputType(1).dtype != ctx.InputType(0).dtype) {
    ctx.Fail(fmt::format("PRelu slope {} must have the dtype of the input {}",
                         ir::ToString(ctx.InputType(1)), ir::ToString(ctx.InputType(0))));
  }
  return {ctx.Call("prelu", {x, slope})};
}

std::vector<Value> ConvertElu(NodeContext& ctx) {
  double alpha = FiniteFloat(ctx, "alpha", 1.0);
  return {ctx.Call("elu", {ctx.Input(0)}, Attrs{{"alpha", alpha}})};
}

// Selu: gamma * (x <= 0 ? alpha * (exp(x) - 1) : x), which is gamma * elu(x; alpha).
std::vector<Value> ConvertSelu(NodeContext& ctx) {
  double alpha = FiniteFloat(ctx, "alpha", 1.67326319217681884765625);
  double gamma = FiniteFloat(ctx, "gamma", 1.05070102214813232421875);
  Value elu = ctx.Call("elu", {ctx.Input(0)}, Attrs{{"alpha", alpha}});
  return {Multiply(ctx, elu, gamma)};
}

// max(0, min(1, alpha * x + beta)).
Value HardSigmoid(NodeContext& ctx, Value x, double alpha, double beta) {
  Value linear = ctx.Call("add", {Multiply(ctx, x, alpha), ctx.Scalar(beta, ctx.TypeOf(x).dtype)});
  return ctx.Call("clip", {linear}, Attrs{{"min", 0.0}, {"max", 1.0}});
}

std::vector<Value> ConvertHardSigmoid(NodeContext& ctx) {
  double alpha = FiniteFloat(ctx, "alpha", 0.2);
  double beta = FiniteFloat(ctx, "beta", 0.5);
  return {HardSigmoid(ctx, ctx.Input(0), alpha, beta)};
}

// x * HardSigmoid(x; alpha = 1/6, beta = 1/2).
std::vector<Value> ConvertHardSwish(NodeContext& ctx) {
  Value x = ctx.Input(0);
  return {ctx.Call("multiply", {x, HardSigmoid(ctx, x, 1.0 / 6.0, 0.5)})};
}

// log(exp(x) + 1), as ONNX defines it (large x overflows to inf like the definition).
std::vector<Value> ConvertSoftplus(NodeContext& ctx) {
  Value x = ctx.Input(0);
  Value e = ctx.Call("exp", {x});
  return {ctx.Call("log", {ctx.Call("add", {e, ctx.Scalar(1.0, ctx.TypeOf(x).dtype)})})};
}

// Sum, Mean, Max and Min of one or more inputs with numpy broadcasting: a left-to-right chain of
// binary ops (Mean divides the sum by the count).
std::vector<Value> ConvertVariadic(NodeContext& ctx) {
  const std::string& type = ctx.op_type();
  const char* op = type == "Max" ? "maximum" : type == "Min" ? "minimum" : "add";
  if (ctx.num_inputs() == 0) ctx.Fail(fmt::format("{} needs at least one input", type));
  Value result = ctx.Input(0);
  DataType dtype = ctx.InputType(0).dtype;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.InputType(i).dtype != dtype) {
      ctx.Fail(fmt::format("input {} of {} is {} but input 0 is {}", i, type,
                           ir::ToString(ctx.InputType(i)), ir::ToString(ctx.InputType(0))));
    }
    result = ctx.Call(op, {result, ctx.Input(i)});
  }
  if (type == "Mean" && ctx.num_inputs() > 1) {
    result = ctx.Call("divide", {result, ctx.Scalar(static_cast<double>(ctx.num_inputs()), dtype)});
  }
  return {result};
}

Value Gelu(NodeContext& ctx, Value x, const char* approximate) {
  return ctx.Call("gelu", {x}, Attrs{{"approximate", std::string(approximate)}});
}

// com.microsoft Gelu: the exact (erf) GELU.
std::vector<Value> ConvertMicrosoftGelu(NodeContext& ctx) {
  return {Gelu(ctx, ctx.Input(0), "none")};
}

// com.microsoft BiasGelu: the exact GELU of A + B.
std::vector<Value> ConvertBiasGelu(NodeContext& ctx) {
  return {Gelu(ctx, ctx.Call("add", {ctx.Input(0), ctx.Input(1)}), "none")};
}

// com.microsoft FastGelu: the tanh approximation of GELU, of X (+ bias when given).
std::vector<Value> ConvertFastGelu(NodeContext& ctx) {
  Value x = ctx.Input(0);
  if (ctx.HasInput(1)) x = ctx.Call("add", {x, ctx.Input(1)});
  return {Gelu(ctx, x, "tanh")};
}

constexpr char kLog[] = "log", kAbs[] = "abs", kFloor[] = "floor", kCeil[] = "ceil",
               kRound[] = "round";

}  // namespace

void AddElementwiseConverters(ConverterMap& converters) {
  converters["LeakyRelu"] = ConvertLeakyRelu;
  converters["PRelu"] = ConvertPRelu;
  converters["Elu"] = ConvertElu;
  converters["Selu"] = ConvertSelu;
  converters["HardSigmoid"] = ConvertHardSigmoid;
  converters["HardSwish"] = ConvertHardSwish;
  converters["Softplus"] = ConvertSoftplus;
  converters["Log"] = ConvertUnary<kLog>;
  converters["Abs"] = ConvertUnary<kAbs>;
  converters["Floor"] = ConvertUnary<kFloor>;
  converters["Ceil"] = ConvertUnary<kCeil>;
  converters["Round"] = ConvertUnary<kRound>;
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) converters[op] = ConvertVariadic;
  converters[std::string(kMicrosoftDomain) + ".Gelu"] = ConvertMicrosoftGelu;
  converters[std::string(kMicrosoftDomain) + ".BiasGelu"] = ConvertBiasGelu;
  converters[std::string(kMicrosoftDomain) + ".FastGelu"] = ConvertFastGelu;
}

}  // namespace tandem::frontend::onnx_import
