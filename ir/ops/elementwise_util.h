// Helpers shared by the elementwise op families (elementwise_ops.cc, activation_ops.cc): the
// result layout and type of an elementwise call, and reference loops templated on the element
// function so that the per-element work is inlined.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tandem::ir::ops {

// The layout of an elementwise result: the layout shared by every operand of the result's rank.
// Operands of a lower rank are broadcast against the physical shape of the others (scalars,
// bias vectors, a [1,1,C] bias of an NHWC convolution) and do not count. When the counted
// operands disagree, the result has no layout.
std::string ResultLayout(const std::vector<Type>& inputs, const Shape& result_shape);

// The type of a unary elementwise call: the operand's shape and dtype, with its layout.
Type InferUnary(const std::vector<Type>& inputs, const Attrs& attrs);

// out[i] = fn(x[i]), computed in double and stored in the result dtype.
template <typename Fn>
Tensor ApplyUnary(const Tensor& x, const TensorType& type, Fn fn) {
  if (x.shape() != type.shape) {
    throw Error(fmt::format("operand shape {} differs from the result shape {}",
                            ShapeToString(x.shape()), ShapeToString(type.shape)));
  }
  Tensor out(type);
  int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) out.SetDouble(i, fn(x.GetDouble(i)));
  return out;
}

// out[i] = fn(a[i], b[i]) with numpy broadcasting, computed in double.
template <typename Fn>
Tensor ApplyBinary(const Tensor& a, const Tensor& b, const TensorType& type, Fn fn) {
  if (BroadcastShapes(a.shape(), b.shape()) != type.shape) {
    throw Error(fmt::format("operand shapes {} and {} do not broadcast to the result shape {}",
                            ShapeToString(a.shape()), ShapeToString(b.shape()),
                            ShapeToString(type.shape)));
  }
  Tensor out(type);
  int64_t n = out.num_elements();
  bool a_full = a.shape() == type.shape;
  bool b_full = b.shape() == type.shape;
  if (a_full && b_full) {
    for (int64_t i = 0; i < n; ++i) out.SetDouble(i, fn(a.GetDouble(i), b.GetDouble(i)));
  } else if (a_full && b.num_elements() == 1) {
    double y = b.GetDouble(0);
    for (int64_t i = 0; i < n; ++i) out.SetDouble(i, fn(a.GetDouble(i), y));
  } else if (b_full && a.num_elements() == 1) {
    double x = a.GetDouble(0);
    for (int64_t i = 0; i < n; ++i) out.SetDouble(i, fn(x, b.GetDouble(i)));
  } else {
    ForEachIndex(type.shape, [&](const std::vector<int64_t>& index, int64_t flat) {
      out.SetDouble(flat, fn(a.GetDouble(BroadcastOffset(index, a.shape())),
                             b.GetDouble(BroadcastOffset(index, b.shape()))));
    });
  }
  return out;
}

}  // namespace tandem::ir::ops
