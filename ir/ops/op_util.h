// Helpers shared by the op definitions: operand checks, axis normalization, broadcasting and
// index iteration for the reference implementations.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/error.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tandem::ir::ops {

// The tensor type of operand `index`; throws Error naming the operand (`role`, e.g. "data")
// when it is a tuple.
const TensorType& TensorOperand(const std::vector<Type>& inputs, size_t index,
                                const std::string& role);
// Maps a possibly negative axis into [0, rank); throws Error when out of range.
int64_t NormalizeAxis(int64_t axis, int64_t rank, const std::string& what = "axis");
// Numpy-style broadcast of two shapes; throws Error when incompatible.
Shape BroadcastShapes(const Shape& a, const Shape& b);
// Row-major strides (in elements).
std::vector<int64_t> RowMajorStrides(const Shape& shape);
// Calls fn(index, flat) for every index of `shape` in row-major order.
void ForEachIndex(const Shape& shape,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& fn);
// Flat offset into a tensor of `input_shape` for an output index of a broadcast op (the input is
// right-aligned against the output; extents of 1 broadcast).
int64_t BroadcastOffset(const std::vector<int64_t>& output_index, const Shape& input_shape);
// Throws Error unless all operands share one dtype; returns it.
DataType CommonDataType(const std::vector<Type>& inputs);
// The position that run-time index `value` (at flat position `where` of an index tensor of
// `indices_shape`) addresses on an axis of `extent`: value, or value + extent when negative;
// throws Error naming the value, its position and the range [-extent, extent) otherwise.
int64_t WrapIndex(int64_t value, int64_t extent, int64_t where, const Shape& indices_shape);
// Element `flat` of an i64 or i32 index tensor.
int64_t IndexAt(const Tensor& indices, int64_t flat);
// Checks that an int-list attribute has the expected length.
void CheckLength(const Attrs& attrs, const std::string& name, size_t expected);
// A tensor viewed as [outer, extent, inner] around `axis` (products of the axes before it, its
// extent, the product of the axes after it).
struct AxisView {
  int64_t outer = 1, extent = 1, inner = 1;
};
AxisView ViewAround(const Shape& shape, int64_t axis);
// The value of a 0/1 int attribute (ONNX's boolean flags); Error naming it otherwise.
bool Flag(const Attrs& attrs, const std::string& name);
// The operand's "axis" attribute, normalized against its rank; Error for a rank-0 operand.
int64_t OperandAxis(const TensorType& x, const Attrs& attrs);

}  // namespace tandem::ir::ops
