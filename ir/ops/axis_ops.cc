// Ops along one axis: argmax and argmin (the int64 index of the extreme element) and cumsum
// (running sums).
//
// Reference semantics walk each line along the axis in order, accumulating in double. argmax and
// argmin compare with < and >, so the first extreme element wins (the last with
// select_last_index=1); a NaN never compares greater or smaller, so which index a line holding
// NaN gives is unspecified.
#include <fmt/format.h>

#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

Type InferArgExtreme(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& x = TensorOperand(inputs, 0, "x");
  int64_t axis = OperandAxis(x, attrs);
  Flag(attrs, "select_last_index");
  if (x.shape[static_cast<size_t>(axis)] == 0) {
    throw Error(fmt::format("the axis {} of shape {} is empty: there is no extreme element", axis,
                            ShapeToString(x.shape)));
  }
  Shape shape = x.shape;
  if (Flag(attrs, "keepdims")) {
    shape[static_cast<size_t>(axis)] = 1;
  } else {
    shape.erase(shape.begin() + axis);
  }
  return TensorType{shape, DataType::kInt64, ""};
}

Tensor EvaluateArgExtreme(bool is_max, const Tensor& x, const Attrs& attrs,
                          const TensorType& type) {
  int64_t axis = OperandAxis(x.type(), attrs);
  bool last = Flag(attrs, "select_last_index");
  AxisView view = ViewAround(x.shape(), axis);
  Tensor out(type);
  if (out.num_elements() != view.outer * view.inner) {
    throw Error(fmt::format("result type {} does not fit the operand {}", ToString(type),
                            ToString(x.type())));
  }
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t i = 0; i < view.inner; ++i) {
      int64_t best = 0;
      double best_value = x.GetDouble(o * view.extent * view.inner + i);
      for (int64_t k = 1; k < view.extent; ++k) {
        double v = x.GetDouble((o * view.extent + k) * view.inner + i);
        bool better = is_max ? v > best_value : v < best_value;
        if (better || (last && v == best_value)) {
          best = k;
          best_value = v;
        }
      }
      out.SetDouble(o * view.inner + i, static_cast<double>(best));
    }
  }
  return out;
}

void RegisterArgExtreme(OpRegistry& registry, bool is_max) {
  OpDef def;
  def.name = is_max ? "argmax" : "argmin";
  def.doc = fmt::format(
      "The int64 index along `axis` of the {} element of each line (the first one; the last "
      "with select_last_index=1; ONNX Arg{}). keepdims=1 keeps the axis with extent 1. A line "
      "holding NaN gives an unspecified index.",
      is_max ? "largest" : "smallest", is_max ? "Max" : "Min");
  def.attrs = {
      {"axis", AttrKind::kInt, AttrValue(int64_t{0}), "the reduced axis (negative from the end)"},
      {"keepdims", AttrKind::kInt, AttrValue(int64_t{1}), "1: keep the axis as extent 1"},
      {"select_last_index", AttrKind::kInt, AttrValue(int64_t{0}),
       "1: the last of equal extreme elements"},
  };
  def.pattern = PatternKind::kReduction;
  def.infer_type = InferArgExtreme;
  def.reference = [is_max](const std::vector<Tensor>& inputs, const Attrs& attrs,
                           const Type& output) -> std::vector<Tensor> {
    return {EvaluateArgExtreme(is_max, inputs.at(0), attrs, output.tensor())};
  };
  registry.Register(std::move(def));
}

Type InferCumsum(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& x = TensorOperand(inputs, 0, "x");
  OperandAxis(x, attrs);
  Flag(attrs, "exclusive");
  Flag(attrs, "reverse");
  return TensorType{x.shape, x.dtype, ""};
}

Tensor EvaluateCumsum(const Tensor& x, const Attrs& attrs, const TensorType& type) {
  int64_t axis = OperandAxis(x.type(), attrs);
  bool exclusive = Flag(attrs, "exclusive"), reverse = Flag(attrs, "reverse");
  AxisView view = ViewAround(x.shape(), axis);
  Tensor out(type);
  if (out.shape() != x.shape()) {
    throw Error(fmt::format("result type {} differs from the operand {}", ToString(type),
                            ToString(x.type())));
  }
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t i = 0; i < view.inner; ++i) {
      double sum = 0;
      for (int64_t step = 0; step < view.extent; ++step) {
        int64_t k = reverse ? view.extent - 1 - step : step;
        int64_t flat = (o * view.extent + k) * view.inner + i;
        double v = x.GetDouble(flat);
        if (!exclusive) sum += v;
        out.SetDouble(flat, sum);
        if (exclusive) sum += v;
      }
    }
  }
  return out;
}

void RegisterCumsum(OpRegistry& registry) {
  OpDef def;
  def.name = "cumsum";
  def.doc =
      "Running sums along `axis` (ONNX CumSum): out[k] = x[0] + ... + x[k]; exclusive=1 leaves "
      "x[k] out (out[0] = 0); reverse=1 sums from the end. Accumulated in double; the result "
      "keeps the shape and dtype and has no layout.";
  def.attrs = {
      {"axis", AttrKind::kInt, AttrValue(int64_t{0}), "the summed axis (negative from the end)"},
      {"exclusive", AttrKind::kInt, AttrValue(int64_t{0}), "1: leave each element out of its sum"},
      {"reverse", AttrKind::kInt, AttrValue(int64_t{0}), "1: sum from the end of the axis"},
  };
  def.pattern = PatternKind::kOpaque;
  def.infer_type = InferCumsum;
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    return {EvaluateCumsum(inputs.at(0), attrs, output.tensor())};
  };
  registry.Register(std::move(def));
}

}  // namespace

void RegisterAxisOps(OpRegistry& registry) {
  RegisterArgExtreme(registry, true);
  RegisterArgExtreme(registry, false);
  RegisterCumsum(registry);
}

}  // namespace tandem::ir::ops
