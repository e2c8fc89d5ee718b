// CombineParallelMatmul: dense (and matmul with a constant 2-D right operand) calls over one
// input become one dense plus split, biases merged when every branch has one; cases that must
// not fire; BERT's Q/K/V projections on the builder and on the ONNX model.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::CountOps;
using rewrite_testing::ExpectRewrite;
using rewrite_testing::ExpectUnchanged;

constexpr const char* kPipeline = "InferType, CombineParallelMatmul";

TEST(CombineParallelMatmul, MergesWeightsAndBiases) {
  // The second bias is added in the other operand order, as PyTorch exports it.
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3]) -> (f32[2,2], f32[2,1]) {
  %w1 = constant f32[2,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  %d1 = dense(%x, %w1)
  %b1 = constant f32[2] [0.5, -0.5]
  %y1 = add(%d1, %b1)
  %w2 = constant f32[1,3] [7.0, 8.0, 9.0]
  %d2 = dense(%x, %w2)
  %b2 = constant f32[1] [2.0]
  %y2 = add(%b2, %d2)
  %t = tuple(%y1, %y2)
  return %t
})",
                R"(
graph @main(%x: f32[2,3]) -> (f32[2,2], f32[2,1]) {
  %w = constant f32[3,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %d = dense(%x, %w)
  %b = constant f32[3] [0.5, -0.5, 2.0]
  %biased = add(%d, %b)
  %s = split(%biased) {axis=1, sections=[2,1]}
  %y1 = tuple_get_item(%s) {index=0}
  %y2 = tuple_get_item(%s) {index=1}
  %t = tuple(%y1, %y2)
  return %t
})");
}

TEST(CombineParallelMatmul, WithoutBiasesAndWithConstantMatmul) {
  // matmul(x, B) with a constant B [K, N] joins as dense with weight transpose(B); the data has
  // a batch axis, so the split is along axis 2.
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,4,3]) -> (f32[2,4,2], f32[2,4,1]) {
  %b1 = constant f32[3,2] [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
  %m = matmul(%x, %b1)
  %w2 = constant f32[1,3] [7.0, 8.0, 9.0]
  %d = dense(%x, %w2)
  %t = tuple(%m, %d)
  return %t
})",
                R"(
graph @main(%x: f32[2,4,3]) -> (f32[2,4,2], f32[2,4,1]) {
  %w = constant f32[3,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %all = dense(%x, %w)
  %s = split(%all) {axis=2, sections=[2,1]}
  %m = tuple_get_item(%s) {index=0}
  %d = tuple_get_item(%s) {index=1}
  %t = tuple(%m, %d)
  return %t
})");
}

TEST(CombineParallelMatmul, BiasesStayWhenNotEveryBranchHasOne) {
  // The second branch has no bias; the third one's bias is [1, N], not [N]; the first branch's
  // bias stays in place after the split.
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3]) -> (f32[2,1], f32[2,1], f32[2,1]) {
  %w1 = constant f32[1,3] [1.0, 2.0, 3.0]
  %w2 = constant f32[1,3] [4.0, 5.0, 6.0]
  %w3 = constant f32[1,3] [7.0, 8.0, 9.0]
  %d1 = dense(%x, %w1)
  %b1 = constant f32[1] [0.5]
  %y1 = add(%d1, %b1)
  %d2 = dense(%x, %w2)
  %d3 = dense(%x, %w3)
  %b3 = constant f32[1,1] [1.5]
  %y3 = add(%d3, %b3)
  %t = tuple(%y1, %d2, %y3)
  return %t
})",
                R"(
graph @main(%x: f32[2,3]) -> (f32[2,1], f32[2,1], f32[2,1]) {
  %w = constant f32[3,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %all = dense(%x, %w)
  %s = split(%all) {axis=1, sections=[1,1,1]}
  %d1 = tuple_get_item(%s) {index=0}
  %b1 = constant f32[1] [0.5]
  %y1 = add(%d1, %b1)
  %d2 = tuple_get_item(%s) {index=1}
  %d3 = tuple_get_item(%s) {index=2}
  %b3 = constant f32[1,1] [1.5]
  %y3 = add(%d3, %b3)
  %t = tuple(%y1, %d2, %y3)
  return %t
})");
}

TEST(CombineParallelMatmul, LeavesSingleAndUnrelatedLayers) {
  // A single dense.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[2,3]) -> f32[2,2] {
  %w = constant f32[2,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  %d = dense(%x, %w)
  return %d
})");
  // A weight that is not a constant leaves one candidate only.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[2,3], %w2: f32[2,3]) -> (f32[2,2], f32[2,2]) {
  %w1 = constant f32[2,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  %a = dense(%x, %w1)
  %b = dense(%x, %w2)
  %t = tuple(%a, %b)
  return %t
})");
  // Different data operands; a matmul whose right operand is not constant.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[2,3], %y: f32[2,3], %z: f32[3,2]) -> (f32[2,2], f32[2,2], f32[2,2]) {
  %w1 = constant f32[2,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  %w2 = constant f32[2,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  %a = dense(%x, %w1)
  %b = dense(%y, %w2)
  %c = matmul(%x, %z)
  %t = tuple(%a, %b, %c)
  return %t
})");
}

TEST(CombineParallelMatmul, MinBranches) {
  constexpr const char* kTwo = R"(
graph @main(%x: f32[2,3]) -> (f32[2,1], f32[2,1]) {
  %w1 = constant f32[1,3] [1.0, 2.0, 3.0]
  %w2 = constant f32[1,3] [4.0, 5.0, 6.0]
  %a = dense(%x, %w1)
  %b = dense(%x, %w2)
  %t = tuple(%a, %b)
  return %t
})";
  ExpectUnchanged("InferType, CombineParallelMatmul(min_branches=3)", kTwo);
  ir::IRModule out = rewrite_testing::Run("InferType, CombineParallelMatmul(min_branches=2)",
                                          ir::ParseModule(kTwo));
  EXPECT_EQ(CountOps(out, "dense"), 1);
  EXPECT_THROW(ParsePipeline("CombineParallelMatmul(min_branches=0)"), ir::Error);
}

TEST(CombineParallelMatmul, BertQueryKeyValueBecomeOneDense) {
  const ir::IRModule& bert = rewrite_testing::Model("bert_layer");
  ASSERT_EQ(CountOps(bert, "dense"), 6);
  ir::IRModule out = rewrite_testing::Run(kPipeline, bert);
  EXPECT_EQ(CountOps(out, "dense"), 4);  // q/k/v combined; output, ffn1, ffn2 stay
  EXPECT_EQ(CountOps(out, "split"), 1);
  EXPECT_EQ(CountOps(out, "add"), CountOps(bert, "add") - 2);  // three bias adds become one
  // The combined dense reads the layer input and has all three projections' outputs.
  const ir::GraphFunction& fn = out.Get("main");
  for (const ir::Node& node : fn.nodes) {
    if (node.kind == ir::NodeKind::kCall && node.op == "split") {
      EXPECT_EQ(node.attrs.GetInts("sections"), (std::vector<int64_t>{32, 32, 32}));
    }
  }
  rewrite_testing::ExpectSameOutputs("bert_layer", out);
}

TEST(CombineParallelMatmul, PreservesModelSemantics) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    SCOPED_TRACE(name);
    const ir::IRModule& model = rewrite_testing::Model(name);
    ir::IRModule out =
        rewrite_testing::Run("InferType, FoldConstant, CombineParallelMatmul", model);
    if (name == "bert_small") {
      // Two layers: each layer's three projections become one dense.
      EXPECT_EQ(CountOps(out, "dense"), CountOps(model, "dense") - 4);
      EXPECT_EQ(CountOps(out, "split"), 2);
    }
    if (ir::StructuralEqual(out, model)) continue;
    rewrite_testing::ExpectSameOutputs(name, out);
  }
}

}  // namespace
}  // namespace tandem::passes
