// scatter_nd (ONNX ScatterND): a copy of `data` with slices replaced by (or combined with) the
// slices of `updates` at positions given by run-time `indices`.
//
// indices has shape [b..., k] (1 <= k <= rank of data): each row of k values addresses the
// slice data[i0, ..., ik-1, :...]; updates has shape [b..., data.shape[k:]...]. Negative indices
// count from the end; any other value outside [-extent, extent) is an error naming the value and
// its position in the indices, in the reference and (through the intrinsic "checked_index") in
// compiled kernels, as for gather. reduction "none" replaces (when rows repeat a position, the
// last one wins; ONNX leaves that undefined), "add", "mul", "max" and "min" combine every update
// of a position with the data, in double.
#include <fmt/format.h>

#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

const std::vector<std::string>& Reductions() {
  static const std::vector<std::string> reductions = {"none", "add", "mul", "max", "min"};
  return reductions;
}

const std::string& Reduction(const Attrs& attrs) {
  const std::string& reduction = attrs.GetString("reduction");
  for (const std::string& known : Reductions()) {
    if (reduction == known) return reduction;
  }
  throw Error(
      fmt::format("attribute 'reduction' must be one of none, add, mul, max, min but is "
                  "'{}'",
                  reduction));
}

Type InferScatterND(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& data = TensorOperand(inputs, 0, "data");
  const TensorType& indices = TensorOperand(inputs, 1, "indices");
  const TensorType& updates = TensorOperand(inputs, 2, "updates");
  Reduction(attrs);
  if (indices.dtype != DataType::kInt64 && indices.dtype != DataType::kInt32) {
    throw Error(fmt::format("indices must be i64 or i32 but are {}", ToString(indices.dtype)));
  }
  if (updates.dtype != data.dtype) {
    throw Error(fmt::format("updates {} must have the dtype of data {}", ToString(updates),
                            ToString(data)));
  }
  int64_t k = indices.rank() > 0 ? indices.shape.back() : 0;
  if (k < 1 || k > data.rank()) {
    throw Error(
        fmt::format("the last extent of indices {} must lie in [1, {}] (the rank of data "
                    "{})",
                    ShapeToString(indices.shape), data.rank(), ShapeToString(data.shape)));
  }
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != expected) {
    throw Error(fmt::format("updates {} must have shape {} for indices {} and data {}",
                            ShapeToString(updates.shape), ShapeToString(expected),
                            ShapeToString(indices.shape), ShapeToString(data.shape)));
  }
  return TensorType{data.shape, data.dtype, ""};
}

double Combine(const std::string& reduction, double current, double update) {
  if (reduction == "add") return current + update;
  if (reduction == "mul") return current * update;
  if (reduction == "max") return std::max(current, update);
  if (reduction == "min") return std::min(current, update);
  return update;
}

std::vector<Tensor> EvaluateScatterND(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                      const Type& output) {
  const Tensor& data = inputs.at(0);
  const Tensor& indices = inputs.at(1);
  const Tensor& updates = inputs.at(2);
  const std::string& reduction = Reduction(attrs);
  const Shape& shape = data.shape();
  size_t k = static_cast<size_t>(indices.shape().back());
  std::vector<int64_t> strides = RowMajorStrides(shape);
  int64_t slice = NumElements(Shape(shape.begin() + static_cast<int64_t>(k), shape.end()));
  int64_t rows = k > 0 ? indices.num_elements() / static_cast<int64_t>(k) : 0;
  Tensor out = data.Clone();
  if (out.type() != output.tensor()) {
    throw Error(fmt::format("result type {} differs from data {}", ToString(output),
                            ToString(data.type())));
  }
  for (int64_t row = 0; row < rows; ++row) {
    int64_t offset = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t where = row * static_cast<int64_t>(k) + static_cast<int64_t>(d);
      offset += WrapIndex(IndexAt(indices, where), shape[d], where, indices.shape()) * strides[d];
    }
    for (int64_t e = 0; e < slice; ++e) {
      double update = updates.GetDouble(row * slice + e);
      if (reduction == "none") {
        out.SetDouble(offset + e, update);
      } else {
        out.SetDouble(offset + e, Combine(reduction, out.GetDouble(offset + e), update));
      }
    }
  }
  return {out};
}

}  // namespace

void RegisterScatterNDOps(OpRegistry& registry) {
  OpDef def;
  def.name = "scatter_nd";
  def.doc =
      "ONNX ScatterND: data with the slices addressed by the rows of the i64/i32 indices "
      "[b..., k] replaced by (reduction none; the last of repeated rows wins) or combined with "
      "(add, mul, max, min) the slices of updates [b..., data.shape[k:]...]. Negative indices "
      "count from the end; an index outside [-extent, extent) is an error naming it.";
  def.min_inputs = 3;
  def.max_inputs = 3;
  def.attrs = {{"reduction", AttrKind::kString, AttrValue(std::string("none")),
                "none, add, mul, max or min"}};
  def.pattern = PatternKind::kOpaque;
  def.infer_type = InferScatterND;
  def.reference = EvaluateScatterND;
  registry.Register(std::move(def));
}

}  // namespace tandem::ir::ops
