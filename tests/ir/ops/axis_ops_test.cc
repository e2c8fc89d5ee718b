// The ops along one axis (argmax, argmin, cumsum) and the reductions min and prod: type
// inference, reference semantics against hand-computed values, and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "tests/ir/expect_error.h"

namespace tandem::ir {
namespace {

using testing::ExpectError;

Tensor Evaluate(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  std::vector<Type> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  Type type = InferCallType(op, types, attrs);
  std::vector<Tensor> results = EvaluateReference(op, inputs, attrs, type);
  EXPECT_EQ(results.at(0).type(), type.tensor());
  return results.at(0);
}

void ExpectTensor(const Tensor& t, const Shape& shape, DataType dtype,
                  const std::vector<double>& expected) {
  ASSERT_EQ(t.shape(), shape);
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.ToDoubles(), expected);
}

Tensor Floats(Shape shape, std::vector<double> values) {
  return Tensor::FromDoubles(std::move(shape), DataType::kFloat32, values);
}

TEST(AxisOps, ArgMaxAndArgMin) {
  // Rows [3, 1, 3] and [0, 2, 2]; columns [3, 0], [1, 2], [3, 2].
  Tensor x = Floats({2, 3}, {3, 1, 3, 0, 2, 2});
  ExpectTensor(Evaluate("argmax", {x}, {{"axis", int64_t{1}}}), {2, 1}, DataType::kInt64, {0, 1});
  ExpectTensor(Evaluate("argmax", {x}, {{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}}),
               {2, 1}, DataType::kInt64, {2, 2});
  ExpectTensor(Evaluate("argmin", {x}, {{"keepdims", int64_t{0}}}), {3}, DataType::kInt64,
               {1, 0, 1});
  ExpectTensor(Evaluate("argmin", {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}), {2},
               DataType::kInt64, {1, 0});
}

TEST(AxisOps, CumsumVariants) {
  Tensor x = Floats({3, 2}, {1, 10, 2, 20, 3, 30});
  ExpectTensor(Evaluate("cumsum", {x}), {3, 2}, DataType::kFloat32, {1, 10, 3, 30, 6, 60});
  ExpectTensor(Evaluate("cumsum", {x}, {{"exclusive", int64_t{1}}}), {3, 2}, DataType::kFloat32,
               {0, 0, 1, 10, 3, 30});
  ExpectTensor(Evaluate("cumsum", {x}, {{"reverse", int64_t{1}}}), {3, 2}, DataType::kFloat32,
               {6, 60, 5, 50, 3, 30});
  ExpectTensor(
      Evaluate("cumsum", {x},
               {{"axis", int64_t{-1}}, {"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}),
      {3, 2}, DataType::kFloat32, {10, 0, 20, 0, 30, 0});
  Tensor ints = Tensor::FromDoubles({4}, DataType::kInt32, {1, -2, 3, -4});
  ExpectTensor(Evaluate("cumsum", {ints}), {4}, DataType::kInt32, {1, -1, 2, -2});
}

TEST(AxisOps, MinAndProdReductions) {
  Tensor x = Floats({2, 3}, {4, -1, 2, 0.5, 3, -2});
  ExpectTensor(Evaluate("min", {x}, {{"axes", std::vector<int64_t>{1}}}), {2}, DataType::kFloat32,
               {-1, -2});
  ExpectTensor(Evaluate("prod", {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{1}}}),
               {1, 3}, DataType::kFloat32, {2, -3, -4});
  ExpectTensor(Evaluate("prod", {x}), {}, DataType::kFloat32, {24});
  Tensor with_nan = Floats({3}, {1, NAN, -5});
  EXPECT_TRUE(std::isnan(Evaluate("min", {with_nan}).GetDouble(0)));
  Tensor empty(Shape{2, 0}, DataType::kFloat32);
  ExpectTensor(Evaluate("prod", {empty}, {{"axes", std::vector<int64_t>{1}}}), {2},
               DataType::kFloat32, {1, 1});
}

TEST(AxisOps, Errors) {
  TensorType scalar{{}, DataType::kFloat32, ""};
  TensorType empty_axis{{2, 0}, DataType::kFloat32, ""};
  TensorType matrix{{2, 3}, DataType::kFloat32, ""};
  auto infer = [](const std::string& op, const TensorType& type, Attrs attrs) {
    InferCallType(op, {Type(type)}, attrs);
  };
  ExpectError([&] { infer("argmax", scalar, {}); }, {"argmax", "rank 1 or more"});
  ExpectError(
      [&] {
        infer("argmin", empty_axis, {{"axis", int64_t{1}}});
      },
      {"argmin", "empty", "no extreme element"});
  ExpectError(
      [&] {
        infer("cumsum", matrix, {{"axis", int64_t{2}}});
      },
      {"cumsum", "axis 2 is out of range"});
  ExpectError(
      [&] {
        infer("cumsum", matrix, {{"reverse", int64_t{2}}});
      },
      {"cumsum", "'reverse' must be 0 or 1"});
  ExpectError(
      [&] {
        infer("min", empty_axis, {{"axes", std::vector<int64_t>{1}}});
      },
      {"min", "extent 0"});
}

}  // namespace
}  // namespace tandem::ir
