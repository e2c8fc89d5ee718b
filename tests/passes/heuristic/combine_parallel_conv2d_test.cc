// CombineParallelConv2D: parallel conv2d calls over one input become one conv2d plus slices;
// convolutions that differ in what they compute are left alone; semantics on an inception-like
// module and on the test models.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::CountOps;
using rewrite_testing::ExpectRewrite;
using rewrite_testing::ExpectUnchanged;

constexpr const char* kPipeline = "InferType, CombineParallelConv2D";

TEST(CombineParallelConv2D, CombinesTwoBranchesWithDifferentOutputChannels) {
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[1,2,4,4]) -> (f32[1,1,4,4], f32[1,2,4,4]) {
  %w1 = constant f32[1,2,1,1] [1.0, 2.0]
  %a = conv2d(%x, %w1)
  %w2 = constant f32[2,2,1,1] [3.0, 4.0, 5.0, 6.0]
  %b = conv2d(%x, %w2)
  %t = tuple(%a, %b)
  return %t
})",
                R"(
graph @main(%x: f32[1,2,4,4]) -> (f32[1,1,4,4], f32[1,2,4,4]) {
  %w = constant f32[3,2,1,1] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
  %c = conv2d(%x, %w)
  %a = strided_slice(%c) {begin=[0], end=[1], strides=[1], axes=[1]}
  %b = strided_slice(%c) {begin=[1], end=[3], strides=[1], axes=[1]}
  %t = tuple(%a, %b)
  return %t
})");
}

TEST(CombineParallelConv2D, KeepsStridesPaddingAndDilation) {
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[1,1,5,5]) -> (f32[1,1,2,2], f32[1,1,2,2]) {
  %w1 = constant f32[1,1,2,2] [1.0, 2.0, 3.0, 4.0]
  %w2 = constant f32[1,1,2,2] [5.0, 6.0, 7.0, 8.0]
  %a = conv2d(%x, %w1) {strides=[2,2], padding=[1,1,0,0], dilation=[2,2]}
  %r = relu(%a)
  %b = conv2d(%x, %w2) {strides=[2,2], padding=[1,1,0,0], dilation=[2,2]}
  %t = tuple(%r, %b)
  return %t
})",
                R"(
graph @main(%x: f32[1,1,5,5]) -> (f32[1,1,2,2], f32[1,1,2,2]) {
  %w = constant f32[2,1,2,2] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
  %c = conv2d(%x, %w) {strides=[2,2], padding=[1,1,0,0], dilation=[2,2]}
  %a = strided_slice(%c) {begin=[0], end=[1], strides=[1], axes=[1]}
  %r = relu(%a)
  %b = strided_slice(%c) {begin=[1], end=[2], strides=[1], axes=[1]}
  %t = tuple(%r, %b)
  return %t
})");
}

constexpr const char* kThreeBranches = R"(
graph @main(%x: f32[1,1,3,3]) -> (f32[1,1,3,3], f32[1,1,3,3], f32[1,1,3,3]) {
  %w1 = constant f32[1,1,1,1] [1.0]
  %w2 = constant f32[1,1,1,1] [2.0]
  %w3 = constant f32[1,1,1,1] [3.0]
  %a = conv2d(%x, %w1)
  %b = conv2d(%x, %w2)
  %c = conv2d(%x, %w3)
  %t = tuple(%a, %b, %c)
  return %t
})";

TEST(CombineParallelConv2D, MinBranches) {
  ExpectRewrite("InferType, CombineParallelConv2D(min_branches=3)", kThreeBranches, R"(
graph @main(%x: f32[1,1,3,3]) -> (f32[1,1,3,3], f32[1,1,3,3], f32[1,1,3,3]) {
  %w = constant f32[3,1,1,1] [1.0, 2.0, 3.0]
  %all = conv2d(%x, %w)
  %a = strided_slice(%all) {begin=[0], end=[1], strides=[1], axes=[1]}
  %b = strided_slice(%all) {begin=[1], end=[2], strides=[1], axes=[1]}
  %c = strided_slice(%all) {begin=[2], end=[3], strides=[1], axes=[1]}
  %t = tuple(%a, %b, %c)
  return %t
})");
  ExpectUnchanged("InferType, CombineParallelConv2D(min_branches=4)", kThreeBranches);
  EXPECT_THROW(ParsePipeline("CombineParallelConv2D(min_branches=1)"), ir::Error);
}

TEST(CombineParallelConv2D, LeavesConvolutionsThatDiffer) {
  // Different strides.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,1,4,4]) -> (f32[1,1,4,4], f32[1,1,2,2]) {
  %w1 = constant f32[1,1,1,1] [1.0]
  %w2 = constant f32[1,1,1,1] [2.0]
  %a = conv2d(%x, %w1)
  %b = conv2d(%x, %w2) {strides=[2,2]}
  %t = tuple(%a, %b)
  return %t
})");
  // Different kernel sizes (even with padding that gives equal output shapes).
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,1,4,4]) -> (f32[1,1,4,4], f32[1,1,4,4]) {
  %w1 = constant f32[1,1,1,1] [1.0]
  %w2 = constant f32[1,1,3,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %a = conv2d(%x, %w1)
  %b = conv2d(%x, %w2) {padding=[1,1,1,1]}
  %t = tuple(%a, %b)
  return %t
})");
  // Grouped convolutions.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,2,3,3]) -> (f32[1,2,3,3], f32[1,2,3,3]) {
  %w1 = constant f32[2,1,1,1] [1.0, 2.0]
  %w2 = constant f32[2,1,1,1] [3.0, 4.0]
  %a = conv2d(%x, %w1) {groups=2}
  %b = conv2d(%x, %w2) {groups=2}
  %t = tuple(%a, %b)
  return %t
})");
  // A weight that is not a constant.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,1,3,3], %w2: f32[1,1,1,1]) -> (f32[1,1,3,3], f32[1,1,3,3]) {
  %w1 = constant f32[1,1,1,1] [1.0]
  %a = conv2d(%x, %w1)
  %b = conv2d(%x, %w2)
  %t = tuple(%a, %b)
  return %t
})");
  // Different inputs.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,1,3,3], %y: f32[1,1,3,3]) -> (f32[1,1,3,3], f32[1,1,3,3]) {
  %w1 = constant f32[1,1,1,1] [1.0]
  %w2 = constant f32[1,1,1,1] [2.0]
  %a = conv2d(%x, %w1)
  %b = conv2d(%y, %w2)
  %t = tuple(%a, %b)
  return %t
})");
  // Different annotations (e.g. backends chosen for each).
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,1,3,3]) -> (f32[1,1,3,3], f32[1,1,3,3]) {
  %w1 = constant f32[1,1,1,1] [1.0]
  %w2 = constant f32[1,1,1,1] [2.0]
  %a = conv2d(%x, %w1) @{backend="onednn"}
  %b = conv2d(%x, %w2)
  %t = tuple(%a, %b)
  return %t
})");
  // NHWC results carry a layout tag that a slice would drop.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,3,3,1]) -> (f32[1,3,3,1]{NHWC}, f32[1,3,3,1]{NHWC}) {
  %w1 = constant f32[1,1,1,1] [1.0]
  %w2 = constant f32[1,1,1,1] [2.0]
  %a = conv2d(%x, %w1) {data_layout="NHWC", kernel_layout="HWIO"}
  %b = conv2d(%x, %w2) {data_layout="NHWC", kernel_layout="HWIO"}
  %t = tuple(%a, %b)
  return %t
})");
}

// An inception-like module: four branches over one input (two 1x1 and two 3x3 convolutions with
// different output channels), each followed by relu, concatenated.
ir::IRModule InceptionModule() {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{2, 8, 9, 9}, ir::DataType::kFloat32, ""});
  std::vector<ir::ValueId> branches;
  int64_t index = 0;
  for (auto [channels, kernel] :
       std::vector<std::pair<int64_t, int64_t>>{{4, 1}, {6, 3}, {5, 1}, {3, 3}}) {
    ir::Tensor weight = ir::Tensor::Random(
        ir::TensorType{{channels, 8, kernel, kernel}, ir::DataType::kFloat32, ""}, 100 + index,
        -0.3, 0.3);
    int64_t pad = kernel / 2;
    ir::ValueId conv = b.Call("conv2d", {x, b.Constant(weight)},
                              ir::Attrs{{"padding", std::vector<int64_t>{pad, pad, pad, pad}}});
    branches.push_back(b.Call("relu", {conv}));
    ++index;
  }
  ir::IRModule module;
  module.Add(b.Finish(b.Call("concat", branches, ir::Attrs{{"axis", int64_t{1}}})));
  return module;
}

TEST(CombineParallelConv2D, InceptionBranchesComputeTheSame) {
  ir::IRModule model = InceptionModule();
  ir::IRModule out = rewrite_testing::Run(kPipeline, model);
  EXPECT_EQ(CountOps(out, "conv2d"), 2);  // the 1x1 pair and the 3x3 pair
  EXPECT_EQ(CountOps(out, "strided_slice"), 4);
  auto inputs = backends::RandomInputs(model.Get("main"), 5);
  auto want = backends::RunReference(model, inputs);
  auto got = backends::RunReference(out, inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-4);
}

TEST(CombineParallelConv2D, PreservesModelSemantics) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    SCOPED_TRACE(name);
    const ir::IRModule& model = rewrite_testing::Model(name);
    ir::IRModule out =
        rewrite_testing::Run("InferType, SimplifyExpr, CombineParallelConv2D", model);
    if (ir::StructuralEqual(out, model)) continue;
    rewrite_testing::ExpectSameOutputs(name, out);
  }
}

}  // namespace
}  // namespace tandem::passes
