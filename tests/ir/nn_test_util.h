// Helpers shared by the neural-network op tests: run one op call through GraphBuilder and the
// reference interpreter, collect type-inference errors, and rearrange tensors with plain loops.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace tandem::ir::testing {

using Ints = std::vector<int64_t>;

inline TensorType F32(Shape shape, std::string layout = "") {
  return TensorType{std::move(shape), DataType::kFloat32, std::move(layout)};
}
inline TensorType F64(Shape shape, std::string layout = "") {
  return TensorType{std::move(shape), DataType::kFloat64, std::move(layout)};
}

// 1, 2, 3, ... in an f32 tensor of `shape`.
inline Tensor Iota(Shape shape) {
  Tensor t(F32(std::move(shape)));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, static_cast<double>(i + 1));
  return t;
}

inline Tensor Values(Shape shape, const std::vector<double>& values,
                     DataType dtype = DataType::kFloat32) {
  return Tensor::FromDoubles(std::move(shape), dtype, values);
}

// Uniform random f64 values in [-1, 1).
inline Tensor RandomF64(Shape shape, uint64_t seed) {
  return Tensor::Random(F64(std::move(shape)), seed);
}

// Builds a function calling `op` once on fresh inputs of the tensors' types (it is verified),
// and runs it with the reference interpreter.
inline Tensor RunOp(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  GraphBuilder builder("main");
  std::vector<ValueId> operands;
  for (size_t i = 0; i < inputs.size(); ++i) {
    operands.push_back(builder.Input("x" + std::to_string(i), inputs[i].type()));
  }
  ValueId call = builder.Call(op, operands, std::move(attrs));
  GraphFunction function = builder.Finish(call);
  Verify(function);
  std::vector<Tensor> results = backends::RunReference(function, inputs);
  EXPECT_EQ(results.size(), 1u);
  EXPECT_EQ(results.at(0).type(), function.type_of(function.output).tensor());
  return results.at(0);
}

inline Type Infer(const std::string& op, const std::vector<TensorType>& operands,
                  Attrs attrs = {}) {
  std::vector<Type> types(operands.begin(), operands.end());
  return InferCallType(op, types, attrs);
}

// The message of the Error that type inference of the call raises ("" and a test failure when
// it raises none).
inline std::string InferError(const std::string& op, const std::vector<TensorType>& operands,
                              Attrs attrs = {}) {
  try {
    Type type = Infer(op, operands, std::move(attrs));
    ADD_FAILURE() << op << ": expected a type error but inferred " << ToString(type);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Checks that `text` (evaluated once) contains `part`.
#define EXPECT_CONTAINS(text, part)                                        \
  do {                                                                     \
    const std::string contains_text_ = (text);                             \
    EXPECT_NE(contains_text_.find(part), std::string::npos)                \
        << "expected to find \"" << (part) << "\" in: " << contains_text_; \
  } while (false)

inline void ExpectValues(const Tensor& actual, const Shape& shape,
                         const std::vector<double>& expected, double tolerance = 1e-5) {
  ASSERT_EQ(actual.shape(), shape);
  ASSERT_EQ(actual.num_elements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.GetDouble(static_cast<int64_t>(i)), expected[i], tolerance)
        << "element " << i;
  }
}

inline void ExpectClose(const Tensor& actual, const Tensor& expected, double tolerance = 1e-12) {
  ASSERT_EQ(actual.shape(), expected.shape());
  EXPECT_LE(MaxAbsoluteError(actual, expected), tolerance);
}

// Axis i of the result is axis order[i] of `t` (a transpose with plain loops).
inline Tensor Permute(const Tensor& t, const Ints& order) {
  Shape shape;
  for (int64_t axis : order) shape.push_back(t.shape()[static_cast<size_t>(axis)]);
  Tensor result(TensorType{shape, t.dtype(), ""});
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < result.num_elements(); ++flat) {
    int64_t source = 0;
    for (size_t axis = 0; axis < t.shape().size(); ++axis) {
      size_t position = 0;
      while (order[position] != static_cast<int64_t>(axis)) ++position;
      source = source * t.shape()[axis] + index[position];
    }
    result.SetDouble(flat, t.GetDouble(source));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return result;
}

inline double Dot(const Tensor& a, const Tensor& b) {
  double sum = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) sum += a.GetDouble(i) * b.GetDouble(i);
  return sum;
}

}  // namespace tandem::ir::testing
