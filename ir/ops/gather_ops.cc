// Gathers on indices computed at run time: gather (ONNX Gather: whole slices of `data` picked
// along one axis, e.g. an embedding lookup of token ids) and gather_elements (ONNX
// GatherElements: one element per index, the index replacing the position along the axis).
//
// Indices are integer tensors (i64 or i32). An index i addresses position i of the axis when
// 0 <= i < extent and position i + extent when -extent <= i < 0 (ONNX's negative indices); any
// other value is an error naming the value, its position in the indices and the allowed range.
// Compiled kernels check the same range (the kernel IR intrinsic "checked_index", see
// ir/kernel/expr.h) and report the same error from the executable instead of reading out of
// bounds. The reference copies elements bit for bit, so i64 data beyond 2^53 survives.
#include <fmt/format.h>

#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

const TensorType& CheckIndices(const std::vector<Type>& inputs) {
  const TensorType& indices = TensorOperand(inputs, 1, "indices");
  if (indices.dtype != DataType::kInt64 && indices.dtype != DataType::kInt32) {
    throw Error(fmt::format("indices must be i64 or i32 but are {}", ToString(indices.dtype)));
  }
  return indices;
}

Type InferGather(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& data = TensorOperand(inputs, 0, "data");
  const TensorType& indices = CheckIndices(inputs);
  if (data.rank() == 0) throw Error("data must have rank 1 or more");
  size_t axis = static_cast<size_t>(NormalizeAxis(attrs.GetInt("axis"), data.rank()));
  if (data.shape[axis] == 0 && indices.num_elements() > 0) {
    throw Error(fmt::format("axis {} of data {} has no element to gather", axis,
                            ShapeToString(data.shape)));
  }
  Shape shape(data.shape.begin(), data.shape.begin() + static_cast<int64_t>(axis));
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + static_cast<int64_t>(axis) + 1, data.shape.end());
  return TensorType{shape, data.dtype, ""};
}

std::vector<Tensor> EvaluateGather(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                   const Type& output) {
  const Tensor& data = inputs.at(0);
  const Tensor& indices = inputs.at(1);
  size_t axis = static_cast<size_t>(NormalizeAxis(attrs.GetInt("axis"), data.rank()));
  const Shape& shape = data.shape();
  int64_t outer = NumElements(Shape(shape.begin(), shape.begin() + static_cast<int64_t>(axis)));
  int64_t inner = NumElements(Shape(shape.begin() + static_cast<int64_t>(axis) + 1, shape.end()));
  int64_t extent = shape[axis];
  size_t slice = static_cast<size_t>(inner * SizeOf(data.dtype()));
  Tensor out(output.tensor());
  const auto* src = static_cast<const uint8_t*>(data.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  int64_t count = indices.num_elements();
  std::vector<int64_t> wrapped(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    wrapped[static_cast<size_t>(i)] = WrapIndex(IndexAt(indices, i), extent, i, indices.shape());
  }
  for (int64_t o = 0; o < outer && slice > 0; ++o) {
    for (int64_t position : wrapped) {
      std::memcpy(dst, src + static_cast<size_t>(o * extent + position) * slice, slice);
      dst += slice;
    }
  }
  return {out};
}

Type InferGatherElements(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& data = TensorOperand(inputs, 0, "data");
  const TensorType& indices = CheckIndices(inputs);
  if (data.rank() == 0) throw Error("data must have rank 1 or more");
  if (indices.rank() != data.rank()) {
    throw Error(fmt::format("indices {} must have the rank of data {}",
                            ShapeToString(indices.shape), ShapeToString(data.shape)));
  }
  size_t axis = static_cast<size_t>(NormalizeAxis(attrs.GetInt("axis"), data.rank()));
  if (data.shape[axis] == 0 && indices.num_elements() > 0) {
    throw Error(fmt::format("axis {} of data {} has no element to gather", axis,
                            ShapeToString(data.shape)));
  }
  for (size_t k = 0; k < data.shape.size(); ++k) {
    if (k != axis && indices.shape[k] > data.shape[k]) {
      throw Error(fmt::format("indices {} exceed data {} on axis {}", ShapeToString(indices.shape),
                              ShapeToString(data.shape), k));
    }
  }
  return TensorType{indices.shape, data.dtype, ""};
}

std::vector<Tensor> EvaluateGatherElements(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                           const Type& output) {
  const Tensor& data = inputs.at(0);
  const Tensor& indices = inputs.at(1);
  size_t axis = static_cast<size_t>(NormalizeAxis(attrs.GetInt("axis"), data.rank()));
  int64_t extent = data.shape()[axis];
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  size_t width = static_cast<size_t>(SizeOf(data.dtype()));
  Tensor out(output.tensor());
  const auto* src = static_cast<const uint8_t*>(data.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  ForEachIndex(indices.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) {
      int64_t position =
          k == axis ? WrapIndex(IndexAt(indices, flat), extent, flat, indices.shape()) : index[k];
      offset += position * strides[k];
    }
    std::memcpy(dst + static_cast<size_t>(flat) * width, src + static_cast<size_t>(offset) * width,
                width);
  });
  return {out};
}

void RegisterGather(OpRegistry& registry, const std::string& name, const std::string& doc,
                    InferTypeFunction infer, ReferenceFunction reference) {
  OpDef def;
  def.name = name;
  def.doc = doc;
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.attrs = {{"axis", AttrKind::kInt, AttrValue(int64_t{0}), "the axis the indices select on"}};
  def.pattern = PatternKind::kInjective;
  def.infer_type = std::move(infer);
  def.reference = std::move(reference);
  registry.Register(std::move(def));
}

}  // namespace

void RegisterGatherOps(OpRegistry& registry) {
  RegisterGather(registry, "gather",
                 "ONNX Gather: out[a..., i..., b...] = data[a..., indices[i...], b...] along "
                 "`axis`; the result's shape is data's with that axis replaced by the shape of "
                 "the i64/i32 indices. Negative indices count from the end; an index outside "
                 "[-extent, extent) is an error naming it.",
                 InferGather, EvaluateGather);
  RegisterGather(registry, "gather_elements",
                 "ONNX GatherElements: out[p] = data[p with p[axis] replaced by indices[p]]; the "
                 "result has the shape of the indices (same rank as data, no larger off the "
                 "axis). Negative indices count from the end; an index outside [-extent, extent) "
                 "is an error naming it.",
                 InferGatherElements, EvaluateGatherElements);
}

}  // namespace tandem::ir::ops
