// Elementwise and broadcast ops: add, subtract, multiply, divide, pow, maximum, minimum, relu,
// gelu, sigmoid, tanh, exp, log, sqrt, erf, abs, floor, ceil, round, clip, cast. The parametric
// activations (leaky_relu, elu, prelu) are in activation_ops.cc.
//
// Reference semantics compute every element in double and convert to the result dtype (integer
// results truncate toward zero and saturate, see Tensor::SetDouble). The loops are templated on
// the element function so that the per-element work is inlined.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "ir/op_registry.h"
#include "ir/ops/elementwise_util.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {

std::string ResultLayout(const std::vector<Type>& inputs, const Shape& result_shape) {
  int64_t result_rank = static_cast<int64_t>(result_shape.size());
  std::string layout;
  bool seen = false;
  for (const Type& input : inputs) {
    const TensorType& t = input.tensor();
    if (t.rank() < result_rank) continue;
    if (!seen) {
      layout = t.layout;
      seen = true;
    } else if (t.layout != layout) {
      return "";
    }
  }
  return layout;
}

Type InferUnary(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& x = TensorOperand(inputs, 0, "x");
  return TensorType{x.shape, x.dtype, ResultLayout(inputs, x.shape)};
}

namespace {

template <typename Fn>
void RegisterBinary(OpRegistry& registry, const std::string& name, const std::string& doc, Fn fn) {
  OpDef def;
  def.name = name;
  def.doc = doc;
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.pattern = PatternKind::kBroadcast;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    const TensorType& a = TensorOperand(inputs, 0, "a");
    const TensorType& b = TensorOperand(inputs, 1, "b");
    DataType dtype = CommonDataType(inputs);
    Shape shape = BroadcastShapes(a.shape, b.shape);
    return TensorType{shape, dtype, ResultLayout(inputs, shape)};
  };
  def.reference = [fn](const std::vector<Tensor>& inputs, const Attrs& attrs,
                       const Type& output) -> std::vector<Tensor> {
    return {ApplyBinary(inputs.at(0), inputs.at(1), output.tensor(), fn)};
  };
  registry.Register(std::move(def));
}

template <typename Fn>
void RegisterUnary(OpRegistry& registry, const std::string& name, const std::string& doc, Fn fn) {
  OpDef def;
  def.name = name;
  def.doc = doc;
  def.pattern = PatternKind::kElementwise;
  def.infer_type = InferUnary;
  def.reference = [fn](const std::vector<Tensor>& inputs, const Attrs& attrs,
                       const Type& output) -> std::vector<Tensor> {
    return {ApplyUnary(inputs.at(0), output.tensor(), fn)};
  };
  registry.Register(std::move(def));
}

double GeluErf(double x) {
  return x * 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2));
}

double GeluTanh(double x) {
  const double scale = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(scale * (x + 0.044715 * x * x * x)));
}

void CheckGeluApproximation(const Attrs& attrs) {
  const std::string& approximate = attrs.GetString("approximate");
  if (approximate != "none" && approximate != "tanh") {
    throw Error(fmt::format("attribute 'approximate' must be \"none\" or \"tanh\" but is \"{}\"",
                            approximate));
  }
}

void RegisterGelu(OpRegistry& registry) {
  OpDef def;
  def.name = "gelu";
  def.doc =
      "Gaussian error linear unit. approximate=\"none\": x*0.5*(1+erf(x/sqrt(2))); "
      "approximate=\"tanh\": 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))).";
  def.attrs = {{"approximate", AttrKind::kString, AttrValue(std::string("none")),
                "\"none\" (exact, with erf) or \"tanh\" (tanh approximation)"}};
  def.pattern = PatternKind::kElementwise;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    CheckGeluApproximation(attrs);
    return InferUnary(inputs, attrs);
  };
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    CheckGeluApproximation(attrs);
    if (attrs.GetString("approximate") == "tanh") {
      return {ApplyUnary(inputs.at(0), output.tensor(), GeluTanh)};
    }
    return {ApplyUnary(inputs.at(0), output.tensor(), GeluErf)};
  };
  registry.Register(std::move(def));
}

void CheckClipBounds(const Attrs& attrs) {
  double low = attrs.GetFloat("min");
  double high = attrs.GetFloat("max");
  if (std::isnan(low) || std::isnan(high) || low > high) {
    throw Error(
        fmt::format("attribute 'min' ({}) must not exceed attribute 'max' ({})", low, high));
  }
}

void RegisterClip(OpRegistry& registry) {
  OpDef def;
  def.name = "clip";
  def.doc = "Clamps every element into [min, max]; NaN stays NaN. min must not exceed max.";
  def.attrs = {
      {"min", AttrKind::kFloat, AttrValue(-std::numeric_limits<double>::infinity()), "lower bound"},
      {"max", AttrKind::kFloat, AttrValue(std::numeric_limits<double>::infinity()), "upper bound"},
  };
  def.pattern = PatternKind::kElementwise;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    CheckClipBounds(attrs);
    return InferUnary(inputs, attrs);
  };
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    double low = attrs.GetFloat("min");
    double high = attrs.GetFloat("max");
    return {ApplyUnary(inputs.at(0), output.tensor(),
                       [low, high](double x) { return x < low ? low : (x > high ? high : x); })};
  };
  registry.Register(std::move(def));
}

DataType CastTarget(const Attrs& attrs) {
  try {
    return ParseDataType(attrs.GetString("dtype"));
  } catch (const Error& e) {
    throw Error("attribute 'dtype': " + e.message());
  }
}

void RegisterCast(OpRegistry& registry) {
  OpDef def;
  def.name = "cast";
  def.doc =
      "Converts every element to `dtype` (a data type name such as \"f32\" or \"int64\"). "
      "Conversion to an integer type truncates toward zero and saturates (NaN becomes 0); "
      "conversion to bool gives 1 for every non-zero value.";
  def.attrs = {{"dtype", AttrKind::kString, std::nullopt, "result data type"}};
  def.pattern = PatternKind::kElementwise;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    const TensorType& x = TensorOperand(inputs, 0, "x");
    return TensorType{x.shape, CastTarget(attrs), ResultLayout(inputs, x.shape)};
  };
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    const Tensor& x = inputs.at(0);
    const TensorType& type = output.tensor();
    if (x.dtype() == type.dtype && x.shape() == type.shape) {
      Tensor out(type);  // same dtype: an exact copy (int64 values beyond 2^53 survive)
      if (x.num_bytes() > 0) std::memcpy(out.raw_data(), x.raw_data(), x.num_bytes());
      return {out};
    }
    return {ApplyUnary(x, type, [](double v) { return v; })};
  };
  registry.Register(std::move(def));
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& registry) {
  const std::string broadcast_note =
      " Numpy broadcasting; both operands must have one dtype, which the result keeps "
      "(integers compute in double and truncate toward zero).";
  RegisterBinary(registry, "add", "a + b." + broadcast_note,
                 [](double x, double y) { return x + y; });
  RegisterBinary(registry, "subtract", "a - b." + broadcast_note,
                 [](double x, double y) { return x - y; });
  RegisterBinary(registry, "multiply", "a * b." + broadcast_note,
                 [](double x, double y) { return x * y; });
  RegisterBinary(registry, "divide", "a / b." + broadcast_note,
                 [](double x, double y) { return x / y; });
  RegisterBinary(registry, "pow", "a raised to the power b." + broadcast_note,
                 [](double x, double y) { return std::pow(x, y); });
  RegisterBinary(registry, "maximum",
                 "The larger of a and b; NaN when either is NaN." + broadcast_note,
                 [](double x, double y) { return std::isnan(y) ? y : (x < y ? y : x); });
  RegisterBinary(registry, "minimum",
                 "The smaller of a and b; NaN when either is NaN." + broadcast_note,
                 [](double x, double y) { return std::isnan(y) ? y : (y < x ? y : x); });

  RegisterUnary(registry, "relu", "max(x, 0); NaN stays NaN.",
                [](double x) { return x < 0 ? 0.0 : x; });
  RegisterUnary(registry, "sigmoid", "1 / (1 + exp(-x)).",
                [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  RegisterUnary(registry, "tanh", "Hyperbolic tangent.", [](double x) { return std::tanh(x); });
  RegisterUnary(registry, "exp", "e^x.", [](double x) { return std::exp(x); });
  RegisterUnary(registry, "log", "Natural logarithm (NaN for negative x, -inf for 0).",
                [](double x) { return std::log(x); });
  RegisterUnary(registry, "sqrt", "Square root (NaN for negative x).",
                [](double x) { return std::sqrt(x); });
  RegisterUnary(registry, "erf", "Gauss error function.", [](double x) { return std::erf(x); });
  RegisterUnary(registry, "abs", "|x| (integers: the most negative value saturates).",
                [](double x) { return std::abs(x); });
  RegisterUnary(registry, "floor", "The largest integer not above x.",
                [](double x) { return std::floor(x); });
  RegisterUnary(registry, "ceil", "The smallest integer not below x.",
                [](double x) { return std::ceil(x); });
  // std::nearbyint rounds in the default mode, to nearest with ties to even.
  RegisterUnary(registry, "round", "x rounded to the nearest integer, halves to even (ONNX Round).",
                [](double x) { return std::nearbyint(x); });
  RegisterGelu(registry);
  RegisterClip(registry);
  RegisterCast(registry);
}

}  // namespace tandem::ir::ops
