// CombineParallelMatmul: dense (and matmul with a constant 2-D right operand) calls over one
// input become one dense plus a strided_slice per branch, biases merged when every branch has
// one; cases that must not fire; BERT's Q/K/V projections on the builder and on the ONNX model,
// where each slice then fuses with its branch's reshape.
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
  %y1 = strided_slice(%biased) {axes=[1], begin=[0], end=[2], strides=[1]}
  %y2 = strided_slice(%biased) {axes=[1], begin=[2], end=[3], strides=[1]}
  %t = tuple(%y1, %y2)
  return %t
})");
}

TEST(CombineParallelMatmul, WithoutBiasesAndWithConstantMatmul) {
  // matmul(x, B) with a constant B [K, N] joins as dense with weight transpose(B); the data has
  // a batch axis, so the slices are along axis 2.
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
  %m = strided_slice(%all) {axes=[2], begin=[0], end=[2], strides=[1]}
  %d = strided_slice(%all) {axes=[2], begin=[2], end=[3], strides=[1]}
  %t = tuple(%m, %d)
  return %t
})");
}

TEST(CombineParallelMatmul, BiasesStayWhenNotEveryBranchHasOne) {
  // The second branch has no bias; the third one's bias is [1, N], not [N]; the first branch's
  // bias stays in place after its slice.
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
  %d1 = strided_slice(%all) {axes=[1], begin=[0], end=[1], strides=[1]}
  %b1 = constant f32[1] [0.5]
  %y1 = add(%d1, %b1)
  %d2 = strided_slice(%all) {axes=[1], begin=[1], end=[2], strides=[1]}
  %d3 = strided_slice(%all) {axes=[1], begin=[2], end=[3], strides=[1]}
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

// The strided_slice nodes that take the branches out of a combined result (one reading a value
// named *_combined or *_combined_biased).
std::vector<const ir::Node*> BranchSlices(const ir::GraphFunction& fn) {
  std::vector<const ir::Node*> slices;
  for (const ir::Node& node : fn.nodes) {
    if (node.kind != ir::NodeKind::kCall || node.op != "strided_slice") continue;
    const std::string& input = fn.node(node.inputs[0]).name;
    if (input.ends_with("_combined") || input.ends_with("_combined_biased")) {
      slices.push_back(&node);
    }
  }
  return slices;
}

// After FuseOps, every branch slice is in a fusion group with each node that reads it (the
// branch's reshape or transpose), so it costs no kernel of its own.
void ExpectSlicesFuseWithTheirConsumers(const ir::IRModule& combined) {
  ir::IRModule fused = rewrite_testing::Run("InferType, FuseOps", combined);
  const ir::GraphFunction& fn = fused.Get("main");
  std::vector<const ir::Node*> slices = BranchSlices(fn);
  ASSERT_FALSE(slices.empty());
  std::vector<std::vector<ir::ValueId>> consumers(fn.nodes.size());
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    for (ir::ValueId in : fn.nodes[i].inputs) {
      consumers[static_cast<size_t>(in)].push_back(static_cast<ir::ValueId>(i));
    }
  }
  for (const ir::Node* slice : slices) {
    SCOPED_TRACE(slice->name);
    ASSERT_TRUE(slice->annotations.Has("group")) << "the slice was not fused";
    ir::ValueId id = fn.Find(slice->name);
    ASSERT_FALSE(consumers[static_cast<size_t>(id)].empty());
    for (ir::ValueId reader : consumers[static_cast<size_t>(id)]) {
      const ir::Node& node = fn.node(reader);
      EXPECT_TRUE(node.op == "reshape" || node.op == "transpose") << node.op;
      ASSERT_TRUE(node.annotations.Has("group")) << node.name;
      EXPECT_EQ(node.annotations.GetInt("group"), slice->annotations.GetInt("group")) << node.name;
    }
  }
}

TEST(CombineParallelMatmul, BertQueryKeyValueBecomeOneDense) {
  const ir::IRModule& bert = rewrite_testing::Model("bert_layer");
  ASSERT_EQ(CountOps(bert, "dense"), 6);
  ir::IRModule out = rewrite_testing::Run(kPipeline, bert);
  EXPECT_EQ(CountOps(out, "dense"), 4);  // q/k/v combined; output, ffn1, ffn2 stay
  EXPECT_EQ(CountOps(out, "split"), 0);
  EXPECT_EQ(CountOps(out, "strided_slice"), CountOps(bert, "strided_slice") + 3);
  EXPECT_EQ(CountOps(out, "add"), CountOps(bert, "add") - 2);  // three bias adds become one
  // The combined dense reads the layer input and has all three projections' outputs; each slice
  // takes one projection's 32 columns and keeps the name of the bias add it replaces.
  const ir::GraphFunction& fn = out.Get("main");
  std::vector<const ir::Node*> slices = BranchSlices(fn);
  ASSERT_EQ(slices.size(), 3u);
  const std::vector<std::string> names = {"query", "key", "value"};
  for (size_t i = 0; i < slices.size(); ++i) {
    SCOPED_TRACE(slices[i]->name);
    EXPECT_TRUE(slices[i]->name.starts_with(names[i]));
    int64_t begin = 32 * static_cast<int64_t>(i);
    EXPECT_EQ(slices[i]->attrs.GetInts("begin"), (std::vector<int64_t>{begin}));
    EXPECT_EQ(slices[i]->attrs.GetInts("end"), (std::vector<int64_t>{begin + 32}));
    EXPECT_EQ(slices[i]->attrs.GetInts("strides"), (std::vector<int64_t>{1}));
    EXPECT_EQ(slices[i]->attrs.GetInts("axes"), (std::vector<int64_t>{2}));
    EXPECT_EQ(ir::ToString(slices[i]->type), "f32[1,12,32]");
  }
  rewrite_testing::ExpectSameOutputs("bert_layer", out);
  ExpectSlicesFuseWithTheirConsumers(out);
  // Fused and lowered to kernels (each slice inside its branch's reshape kernel), the layer
  // still computes the same.
  rewrite_testing::ExpectSameOutputs(
      "bert_layer", rewrite_testing::Run("InferType, FuseOps, Legalize(default_schedule=0)", out));
}

TEST(CombineParallelMatmul, PreservesModelSemantics) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    SCOPED_TRACE(name);
    const ir::IRModule& model = rewrite_testing::Model(name);
    ir::IRModule out =
        rewrite_testing::Run("InferType, FoldConstant, CombineParallelMatmul", model);
    if (name == "bert_small") {
      // Two layers: each layer's three projections become one dense, sliced three ways.
      EXPECT_EQ(CountOps(out, "dense"), CountOps(model, "dense") - 4);
      EXPECT_EQ(CountOps(out, "split"), CountOps(model, "split"));
      EXPECT_EQ(BranchSlices(out.Get("main")).size(), 6u);
      EXPECT_EQ(CountOps(out, "strided_slice"), CountOps(model, "strided_slice") + 6);
      ExpectSlicesFuseWithTheirConsumers(out);
    }
    if (ir::StructuralEqual(out, model)) continue;
    rewrite_testing::ExpectSameOutputs(name, out);
  }
}

}  // namespace
}  // namespace tandem::passes
