// The constant-fold memo: the same fold of the same constants is answered from the memo with
// the same values (and storage), other constants are folded anew, and small folds are not kept.
#include "passes/heuristic/constant_fold_memo.h"

#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/structural.h"
#include "passes/pass_registry.h"
#include "passes/pipeline_text.h"

namespace tandem {
namespace {

const ir::Attrs kSwapAxes{{"axes", std::vector<int64_t>{1, 0}}};
const ir::Type kSwapped = ir::TensorType{{64, 32}, ir::DataType::kFloat32, ""};

TEST(ConstantFoldMemo, TheSameFoldOfTheSameConstantIsRemembered) {
  ir::Tensor weight = ir::Tensor::Random(ir::TensorType{{32, 64}}, 7);
  passes::ConstantFoldMemoStats before = passes::ConstantFoldMemoStatistics();
  std::vector<ir::Tensor> first = passes::FoldWithMemo("transpose", {weight}, kSwapAxes, kSwapped);
  std::vector<ir::Tensor> second = passes::FoldWithMemo("transpose", {weight}, kSwapAxes, kSwapped);
  passes::ConstantFoldMemoStats after = passes::ConstantFoldMemoStatistics();
  EXPECT_EQ(after.misses - before.misses, 1);
  EXPECT_EQ(after.hits - before.hits, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].raw_data(), first[0].raw_data());
  std::vector<ir::Tensor> expected =
      ir::EvaluateReference("transpose", {weight}, kSwapAxes, kSwapped);
  EXPECT_EQ(ir::MaxAbsoluteError(second[0], expected[0]), 0.0);
}

TEST(ConstantFoldMemo, OtherConstantsOrAttributesAreFoldedAnew) {
  ir::Tensor weight = ir::Tensor::Random(ir::TensorType{{32, 64}}, 8);
  ir::Tensor other = ir::Tensor::Random(ir::TensorType{{32, 64}}, 9);
  passes::FoldWithMemo("transpose", {weight}, kSwapAxes, kSwapped);
  passes::ConstantFoldMemoStats before = passes::ConstantFoldMemoStatistics();
  std::vector<ir::Tensor> folded = passes::FoldWithMemo("transpose", {other}, kSwapAxes, kSwapped);
  // The same values in other storage: a new constant as far as the memo knows.
  passes::FoldWithMemo("transpose", {weight.Clone()}, kSwapAxes, kSwapped);
  // The same constant, another op.
  passes::FoldWithMemo("relu", {weight}, {}, ir::TensorType{{32, 64}});
  passes::ConstantFoldMemoStats after = passes::ConstantFoldMemoStatistics();
  EXPECT_EQ(after.misses - before.misses, 3);
  EXPECT_EQ(after.hits - before.hits, 0);
  std::vector<ir::Tensor> expected =
      ir::EvaluateReference("transpose", {other}, kSwapAxes, kSwapped);
  EXPECT_EQ(ir::MaxAbsoluteError(folded[0], expected[0]), 0.0);
}

TEST(ConstantFoldMemo, SmallFoldsAreNotKept) {
  ir::Tensor small = ir::Tensor::Random(ir::TensorType{{4, 8}}, 10);
  ir::Type swapped = ir::TensorType{{8, 4}, ir::DataType::kFloat32, ""};
  passes::ConstantFoldMemoStats before = passes::ConstantFoldMemoStatistics();
  passes::FoldWithMemo("transpose", {small}, kSwapAxes, swapped);
  passes::FoldWithMemo("transpose", {small}, kSwapAxes, swapped);
  passes::ConstantFoldMemoStats after = passes::ConstantFoldMemoStatistics();
  EXPECT_EQ(after.hits - before.hits, 0);
  EXPECT_EQ(after.misses - before.misses, 0);
}

TEST(ConstantFoldMemo, FoldConstantGivesTheSameModuleFromTheMemo) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{2, 64}});
  ir::ValueId w = b.Constant(ir::Tensor::Random(ir::TensorType{{32, 64}}, 3));
  ir::ValueId t = b.Call("transpose", {w}, kSwapAxes, "t");
  ir::IRModule module;
  module.Add(b.Finish(b.Call("matmul", {x, t}, {}, "y")));
  passes::PassContext context;
  auto pipeline = passes::ParsePipeline("InferType, FoldConstant");
  ir::IRModule first = context.RunPipeline(*pipeline, module);
  passes::ConstantFoldMemoStats before = passes::ConstantFoldMemoStatistics();
  ir::IRModule second = context.RunPipeline(*pipeline, module);
  EXPECT_EQ(passes::ConstantFoldMemoStatistics().hits - before.hits, 1);
  EXPECT_TRUE(ir::StructuralEqual(first, second));
  EXPECT_EQ(first.Get("main").nodes.size(), 3u);  // x, the folded constant, the matmul
}

}  // namespace
}  // namespace tandem
