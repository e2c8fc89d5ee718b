// Reductions: sum, mean, max, min and prod over a set of axes.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

enum class Reduction { kSum, kMean, kMax, kMin, kProd };

// Which axes of `shape` the attributes reduce: `axes` (possibly negative; [] = all axes).
// Duplicate or out-of-range axes are errors.
std::vector<bool> ReducedAxes(const Shape& shape, const Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t>& axes = attrs.GetInts("axes");
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t axis : axes) {
    size_t normalized = static_cast<size_t>(NormalizeAxis(axis, rank, "axis"));
    if (reduced[normalized]) {
      throw Error(fmt::format("axes {} name axis {} twice", ToString(AttrValue(axes)), normalized));
    }
    reduced[normalized] = true;
  }
  return reduced;
}

bool KeepDims(const Attrs& attrs) {
  int64_t keepdims = attrs.GetInt("keepdims");
  if (keepdims != 0 && keepdims != 1) {
    throw Error(fmt::format("attribute 'keepdims' must be 0 or 1 but is {}", keepdims));
  }
  return keepdims == 1;
}

Type InferReduction(Reduction kind, const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& x = TensorOperand(inputs, 0, "x");
  std::vector<bool> reduced = ReducedAxes(x.shape, attrs);
  bool keepdims = KeepDims(attrs);
  Shape shape;
  bool empty_reduction = false;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (!reduced[i]) {
      shape.push_back(x.shape[i]);
      continue;
    }
    if (x.shape[i] == 0) empty_reduction = true;
    if (keepdims) shape.push_back(1);
  }
  bool extreme = kind == Reduction::kMax || kind == Reduction::kMin;
  if (extreme && empty_reduction && NumElements(shape) > 0) {
    throw Error(fmt::format("{} over an axis of extent 0 of shape {} has no value",
                            kind == Reduction::kMax ? "max" : "min", ShapeToString(x.shape)));
  }
  return TensorType{shape, x.dtype, ""};
}

Tensor EvaluateReduction(Reduction kind, const Tensor& x, const Attrs& attrs,
                         const TensorType& type) {
  std::vector<bool> reduced = ReducedAxes(x.shape(), attrs);
  // Output strides per input axis (0 for a reduced axis), so an input index maps to the flat
  // index of the output element it contributes to.
  Shape kept_shape;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) kept_shape.push_back(x.shape()[i]);
  }
  std::vector<int64_t> kept_strides = RowMajorStrides(kept_shape);
  std::vector<int64_t> strides(reduced.size(), 0);
  int64_t count = 1;
  for (size_t i = 0, k = 0; i < reduced.size(); ++i) {
    if (reduced[i]) {
      count *= x.shape()[i];
    } else {
      strides[i] = kept_strides[k++];
    }
  }
  if (NumElements(kept_shape) != type.num_elements()) {
    throw Error(fmt::format("result type {} does not fit a reduction of shape {}", ToString(type),
                            ShapeToString(x.shape())));
  }
  double init = kind == Reduction::kMax    ? -std::numeric_limits<double>::infinity()
                : kind == Reduction::kMin  ? std::numeric_limits<double>::infinity()
                : kind == Reduction::kProd ? 1.0
                                           : 0.0;
  std::vector<double> accumulator(static_cast<size_t>(type.num_elements()), init);
  ForEachIndex(x.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
    int64_t target = 0;
    for (size_t i = 0; i < index.size(); ++i) target += index[i] * strides[i];
    double& acc = accumulator[static_cast<size_t>(target)];
    double v = x.GetDouble(flat);
    if (kind == Reduction::kProd) {
      acc *= v;
    } else if (kind == Reduction::kMax) {
      if (v > acc || std::isnan(v)) acc = v;  // once NaN, stays NaN (nothing compares greater)
    } else if (kind == Reduction::kMin) {
      if (v < acc || std::isnan(v)) acc = v;
    } else {
      acc += v;
    }
  });
  Tensor out(type);
  for (size_t i = 0; i < accumulator.size(); ++i) {
    double v = accumulator[i];
    if (kind == Reduction::kMean) v /= static_cast<double>(count);
    out.SetDouble(static_cast<int64_t>(i), v);
  }
  return out;
}

void RegisterReduction(OpRegistry& registry, const std::string& name, Reduction kind,
                       const std::string& doc) {
  OpDef def;
  def.name = name;
  def.doc = doc +
            " axes: the reduced axes (negative counts from the end; [] = all axes). keepdims=1 "
            "keeps reduced axes with extent 1. The result keeps the dtype and has no layout.";
  def.attrs = {
      {"axes", AttrKind::kInts, AttrValue(std::vector<int64_t>{}), "reduced axes ([] = all)"},
      {"keepdims", AttrKind::kInt, AttrValue(int64_t{0}), "1: keep reduced axes as extent 1"},
  };
  def.pattern = PatternKind::kReduction;
  def.infer_type = [kind](const std::vector<Type>& inputs, const Attrs& attrs) {
    return InferReduction(kind, inputs, attrs);
  };
  def.reference = [kind](const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const Type& output) -> std::vector<Tensor> {
    return {EvaluateReduction(kind, inputs.at(0), attrs, output.tensor())};
  };
  registry.Register(std::move(def));
}

}  // namespace

void RegisterReductionOps(OpRegistry& registry) {
  RegisterReduction(registry, "sum", Reduction::kSum, "Sum over axes (accumulated in double).");
  RegisterReduction(registry, "mean", Reduction::kMean,
                    "Mean over axes (accumulated in double; NaN when the reduced extent is 0).");
  RegisterReduction(registry, "max", Reduction::kMax,
                    "Maximum over axes (NaN if any reduced element is NaN; a reduced axis of "
                    "extent 0 is an error).");
  RegisterReduction(registry, "min", Reduction::kMin,
                    "Minimum over axes (NaN if any reduced element is NaN; a reduced axis of "
                    "extent 0 is an error; ONNX ReduceMin).");
  RegisterReduction(registry, "prod", Reduction::kProd,
                    "Product over axes (accumulated in double; 1 when the reduced extent is 0; "
                    "ONNX ReduceProd).");
}

}  // namespace tandem::ir::ops
