// Parametric activations: leaky_relu, elu (both with a float alpha) and prelu (a slope tensor
// broadcast to the data). The activations without parameters (relu, sigmoid, gelu, ...) are
// in elementwise_ops.cc.
//
// Reference semantics compute every element in double and convert to the result dtype, like
// the other elementwise ops; NaN stays NaN.
#include <fmt/format.h>

#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/elementwise_util.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

// Throws Error unless attribute `name` is a finite number.
double FiniteAttr(const Attrs& attrs, const std::string& name) {
  double value = attrs.GetFloat(name);
  if (!std::isfinite(value)) {
    throw Error(fmt::format("attribute '{}' must be a finite number but is {}", name, value));
  }
  return value;
}

// A unary activation with one float attribute `alpha` (default `fallback`): fn(x, alpha).
template <typename Fn>
void RegisterAlphaActivation(OpRegistry& registry, const std::string& name, const std::string& doc,
                             double fallback, Fn fn) {
  OpDef def;
  def.name = name;
  def.doc = doc;
  def.attrs = {{"alpha", AttrKind::kFloat, AttrValue(fallback), "slope or scale of x < 0"}};
  def.pattern = PatternKind::kElementwise;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    FiniteAttr(attrs, "alpha");
    return InferUnary(inputs, attrs);
  };
  def.reference = [fn](const std::vector<Tensor>& inputs, const Attrs& attrs,
                       const Type& output) -> std::vector<Tensor> {
    double alpha = FiniteAttr(attrs, "alpha");
    return {ApplyUnary(inputs.at(0), output.tensor(), [&](double x) { return fn(x, alpha); })};
  };
  registry.Register(std::move(def));
}

void RegisterPrelu(OpRegistry& registry) {
  OpDef def;
  def.name = "prelu";
  def.doc =
      "x < 0 ? slope * x : x, with slope broadcast to the shape of x (numpy rules, ONNX PRelu's "
      "unidirectional broadcast: the result has the shape of x). Both have one dtype.";
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.pattern = PatternKind::kBroadcast;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    const TensorType& x = TensorOperand(inputs, 0, "x");
    const TensorType& slope = TensorOperand(inputs, 1, "slope");
    DataType dtype = CommonDataType(inputs);
    if (BroadcastShapes(x.shape, slope.shape) != x.shape) {
      throw Error(fmt::format("slope {} does not broadcast to the shape of x {}",
                              ShapeToString(slope.shape), ShapeToString(x.shape)));
    }
    return TensorType{x.shape, dtype, ResultLayout(inputs, x.shape)};
  };
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    return {ApplyBinary(inputs.at(0), inputs.at(1), output.tensor(),
                        [](double x, double slope) { return x < 0 ? slope * x : x; })};
  };
  registry.Register(std::move(def));
}

}  // namespace

void RegisterActivationOps(OpRegistry& registry) {
  RegisterAlphaActivation(registry, "leaky_relu", "x < 0 ? alpha * x : x (ONNX LeakyRelu).", 0.01,
                          [](double x, double alpha) { return x < 0 ? alpha * x : x; });
  RegisterAlphaActivation(
      registry, "elu", "x < 0 ? alpha * (exp(x) - 1) : x (ONNX Elu; Selu is gamma * elu).", 1.0,
      [](double x, double alpha) { return x < 0 ? alpha * (std::exp(x) - 1.0) : x; });
  RegisterPrelu(registry);
}

}  // namespace tandem::ir::ops
