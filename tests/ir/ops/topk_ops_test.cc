// topk: type inference, reference semantics against hand-computed values (ties in index order),
// and errors.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "tests/ir/expect_error.h"

namespace tandem::ir {
namespace {

using testing::ExpectError;

std::vector<Tensor> TopK(const Tensor& x, Attrs attrs) {
  Type type = InferCallType("topk", {Type(x.type())}, attrs);
  std::vector<Tensor> results = EvaluateReference("topk", {x}, attrs, type);
  EXPECT_EQ(results.size(), 2u);
  EXPECT_EQ(results.at(0).type(), type.fields().at(0).tensor());
  EXPECT_EQ(results.at(1).type(), type.fields().at(1).tensor());
  return results;
}

TEST(TopKOp, LargestAndSmallestAlongEachAxis) {
  // Rows [3, 1, 4, 1] and [5, 9, 2, 6].
  Tensor x = Tensor::FromDoubles({2, 4}, DataType::kFloat32, {3, 1, 4, 1, 5, 9, 2, 6});
  std::vector<Tensor> top = TopK(x, {{"k", int64_t{2}}});
  ASSERT_EQ(top[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(top[0].ToDoubles(), (std::vector<double>{4, 3, 9, 6}));
  EXPECT_EQ(top[1].dtype(), DataType::kInt64);
  EXPECT_EQ(top[1].ToDoubles(), (std::vector<double>{2, 0, 1, 3}));
  std::vector<Tensor> bottom = TopK(x, {{"k", int64_t{3}}, {"largest", int64_t{0}}});
  EXPECT_EQ(bottom[0].ToDoubles(), (std::vector<double>{1, 1, 3, 2, 5, 6}));
  EXPECT_EQ(bottom[1].ToDoubles(), (std::vector<double>{1, 3, 0, 2, 0, 3}));
  // Along axis 0: columns [3, 5], [1, 9], [4, 2], [1, 6].
  std::vector<Tensor> columns = TopK(x, {{"k", int64_t{1}}, {"axis", int64_t{0}}});
  ASSERT_EQ(columns[0].shape(), (Shape{1, 4}));
  EXPECT_EQ(columns[0].ToDoubles(), (std::vector<double>{5, 9, 4, 6}));
  EXPECT_EQ(columns[1].ToDoubles(), (std::vector<double>{1, 1, 0, 1}));
}

TEST(TopKOp, TiesTakeTheLowerIndexFirst) {
  Tensor x = Tensor::FromDoubles({6}, DataType::kInt32, {2, 7, 2, 7, 0, 2});
  std::vector<Tensor> top = TopK(x, {{"k", int64_t{4}}});
  EXPECT_EQ(top[0].dtype(), DataType::kInt32);
  EXPECT_EQ(top[0].ToDoubles(), (std::vector<double>{7, 7, 2, 2}));
  EXPECT_EQ(top[1].ToDoubles(), (std::vector<double>{1, 3, 0, 2}));
  std::vector<Tensor> bottom = TopK(x, {{"k", int64_t{3}}, {"largest", int64_t{0}}});
  EXPECT_EQ(bottom[0].ToDoubles(), (std::vector<double>{0, 2, 2}));
  EXPECT_EQ(bottom[1].ToDoubles(), (std::vector<double>{4, 0, 2}));
}

TEST(TopKOp, Errors) {
  TensorType matrix{{2, 3}, DataType::kFloat32, ""};
  auto infer = [](const TensorType& type, Attrs attrs) {
    InferCallType("topk", {Type(type)}, attrs);
  };
  ExpectError([&] { infer(matrix, {}); }, {"topk", "'k'"});
  ExpectError([&] { infer(matrix, {{"k", int64_t{4}}}); }, {"topk", "k = 4", "[1, 3]"});
  ExpectError([&] { infer(matrix, {{"k", int64_t{0}}}); }, {"topk", "k = 0"});
  ExpectError(
      [&] {
        infer(matrix, {{"k", int64_t{1}}, {"largest", int64_t{2}}});
      },
      {"topk", "'largest' must be 0 or 1"});
  ExpectError(
      [&] {
        infer(TensorType{{}, DataType::kFloat32, ""}, {{"k", int64_t{1}}});
      },
      {"topk", "rank 1 or more"});
}

}  // namespace
}  // namespace tandem::ir
