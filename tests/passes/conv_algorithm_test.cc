// The Winograd rewrite behind TuneConvAlgorithm (passes/conv_algorithm.h): the IR it writes,
// the convolutions it leaves alone, its choice text, that it preserves semantics (reference
// interpreter before vs after) and that the compiled program computes what the reference does,
// with the epilogue fused into the output transform.
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "frontend/model_builders.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "passes/backend_placement.h"
#include "passes/conv_algorithm.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::CountOps;

void ExpectEqualModules(const ir::IRModule& got, const ir::IRModule& want) {
  EXPECT_TRUE(ir::StructuralEqual(got, want)) << ir::StructuralDiff(got, want) << "\n--- got:\n"
                                              << ir::PrintModule(got) << "--- expected:\n"
                                              << ir::PrintModule(want);
}

TEST(ConvAlgorithm, RewritesAConvolutionIntoTheWinogradChain) {
  ir::IRModule input = ir::ParseModule(R"(
graph @main(%x: f32[1,2,5,5], %w: f32[3,2,3,3]) -> f32[1,3,5,5] {
  %c = conv2d(%x, %w) {padding=[1,1,1,1]}
  %r = relu(%c)
  return %r
})",
                                       "input");
  ir::IRModule expected = ir::ParseModule(R"(
graph @main(%x: f32[1,2,5,5], %w: f32[3,2,3,3]) -> f32[1,3,5,5] {
  %c_weight_transform = winograd_weight_transform(%w) {tile=2}
  %c_input_transform = winograd_input_transform(%x) {tile=2, padding=[1,1,1,1]}
  %c_batch_matmul = batch_matmul(%c_input_transform, %c_weight_transform)
  %c = winograd_output_transform(%c_batch_matmul) {tile=2, output_shape=[1,3,5,5]}
  %r = relu(%c)
  return %r
})",
                                          "expected");
  ExpectEqualModules(ApplyConvAlgorithm(input, "main", "winograd_2x2"), expected);
  ExpectEqualModules(ApplyConvAlgorithm(input, "main", "winograd_2x2:c"), expected);
  ExpectEqualModules(ApplyConvAlgorithm(input, "main", "direct"), input);
}

TEST(ConvAlgorithm, TransformsConstantWeightsAtRewriteTime) {
  ir::IRModule module = rewrite_testing::Model("resnet_basic_block");
  ir::IRModule rewritten = ApplyConvAlgorithm(module, "main", "winograd_4x4");
  EXPECT_EQ(CountOps(rewritten, "conv2d"), 0);
  EXPECT_EQ(CountOps(rewritten, "winograd_weight_transform"), 0);
  EXPECT_EQ(CountOps(rewritten, "winograd_input_transform"), 2);
  EXPECT_EQ(CountOps(rewritten, "winograd_output_transform"), 2);
  // The original [K, C, 3, 3] weights are gone, the transformed [36, C, K] ones are constants.
  const ir::GraphFunction& main = rewritten.Get("main");
  for (const ir::Node& node : main.nodes) {
    if (node.kind != ir::NodeKind::kConstant || node.type.tensor().rank() != 3) continue;
    EXPECT_EQ(node.type.tensor().shape[0], 36) << node.name;
  }
  EXPECT_EQ(main.Find("conv1_weight"), -1);
}

TEST(ConvAlgorithm, FoldConstantFoldsTheWeightTransformOfAConstant) {
  ir::IRModule module = ir::ParseModule(R"(
graph @main(%x: f32[2,1]) -> f32[16,1,2] {
  %w = constant f32[2,1,3,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
  %u = winograd_weight_transform(%w) {tile=2}
  return %u
})",
                                        "input");
  ir::IRModule folded = rewrite_testing::Run("InferType, FoldConstant", module);
  EXPECT_EQ(CountOps(folded, "winograd_weight_transform"), 0);
  const ir::Node& result = folded.Get("main").node(folded.Get("main").output);
  ASSERT_EQ(result.kind, ir::NodeKind::kConstant);
  // U[0, 0, 0] = g[0, 0] (G's first row is [1, 0, 0]); U[5, 0, 0] = row 1 of G g G^T at column
  // 1: ((1+4+7) + (2+5+8) + (3+6+9)) / 4 = 11.25.
  EXPECT_FLOAT_EQ(result.value.data<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(result.value.data<float>()[5 * 2], 11.25f);
}

// Convolutions the rewrite must leave alone: stride 2, 1x1, grouped, dilated, 5x5, blocked
// layouts, integer.
TEST(ConvAlgorithm, LeavesIneligibleConvolutionsUnchanged) {
  const char* text = R"(
graph @main(%x: f32[1,16,8,8], %w3: f32[16,16,3,3], %w1: f32[16,16,1,1], %wg: f32[16,8,3,3], %w5: f32[16,16,5,5], %xb: f32[1,1,8,8,16], %wb: f32[1,1,3,3,16,16], %xi: i32[1,2,6,6], %wi: i32[2,2,3,3]) -> (f32[1,16,4,4], f32[1,16,8,8], f32[1,16,8,8], f32[1,16,6,6], f32[1,16,4,4], f32[1,1,8,8,16]{NCHW16c}, i32[1,2,4,4]) {
  %stride2 = conv2d(%x, %w3) {strides=[2,2], padding=[1,1,1,1]}
  %pointwise = conv2d(%x, %w1)
  %grouped = conv2d(%x, %wg) {groups=2, padding=[1,1,1,1]}
  %dilated = conv2d(%x, %w3) {dilation=[2,2], padding=[1,1,1,1]}
  %five = conv2d(%x, %w5)
  %blocked = conv2d(%xb, %wb) {padding=[1,1,1,1], data_layout="NCHW16c", kernel_layout="OIHW16i16o"}
  %int = conv2d(%xi, %wi)
  %t = tuple(%stride2, %pointwise, %grouped, %dilated, %five, %blocked, %int)
  return %t
})";
  ir::IRModule module = rewrite_testing::Run("InferType", ir::ParseModule(text, "input"));
  EXPECT_TRUE(EligibleConvolutions(module.Get("main")).empty());
  for (const char* choice : {"winograd_2x2", "winograd_4x4"}) {
    ExpectEqualModules(ApplyConvAlgorithm(module, "main", choice), module);
  }
  EXPECT_THROW(ApplyConvAlgorithm(module, "main", "winograd_4x4:stride2"), ir::Error);
}

TEST(ConvAlgorithm, LeavesConvolutionsPlacedOnABackendAlone) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 8, 6, 6}});
  ir::ValueId w1 = b.Constant(ir::Tensor::Random(ir::TensorType{{8, 8, 3, 3}}, 1), "w1");
  ir::ValueId w2 = b.Constant(ir::Tensor::Random(ir::TensorType{{8, 8, 3, 3}}, 2), "w2");
  ir::Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  ir::ValueId placed = b.Call("conv2d", {x, w1}, pad, "placed");
  ir::ValueId ours = b.Call("conv2d", {placed, w2}, pad, "ours");
  ir::IRModule module;
  module.Add(b.Finish(ours));
  module = ApplyPlacements(module, "main", {{"onednn", "convolution", {"placed"}}});
  std::string extern_name;
  for (const auto& [name, function] : module.graph_functions()) {
    if (!function->ExternBackend().empty()) extern_name = name;
  }
  ASSERT_FALSE(extern_name.empty());
  EXPECT_EQ(EligibleConvolutions(module.Get("main")), std::vector<std::string>{"ours"});
  ir::IRModule rewritten = ApplyConvAlgorithm(module, "main", "winograd_4x4");
  EXPECT_TRUE(ir::StructuralEqual(rewritten.Get(extern_name), module.Get(extern_name)));
  EXPECT_EQ(CountOps(rewritten, "winograd_output_transform"), 1);
  EXPECT_THROW(ApplyConvAlgorithm(module, extern_name, "winograd_4x4"), ir::Error);
  // A conv annotated for an external backend is not eligible either.
  ir::GraphBuilder c("main");
  ir::ValueId y = c.Input("x", ir::TensorType{{1, 8, 6, 6}});
  ir::ValueId conv = c.Call(
      "conv2d", {y, c.Constant(ir::Tensor::Random(ir::TensorType{{8, 8, 3, 3}}, 3))}, pad, "conv");
  c.Annotate(conv, "backend", std::string("onednn"));
  EXPECT_TRUE(EligibleConvolutions(c.Finish(conv)).empty());
}

TEST(ConvAlgorithm, ChoiceTextRoundTripsAndBadTextIsAnError) {
  ir::IRModule module = rewrite_testing::Model("resnet_basic_block");
  const ir::GraphFunction& main = module.Get("main");
  std::vector<std::string> convs = EligibleConvolutions(main);
  ASSERT_EQ(convs.size(), 2u);
  std::map<std::string, int64_t> tiles{{convs[0], 4}, {convs[1], 2}};
  std::string text = ConvAlgorithmText(tiles);
  EXPECT_EQ(text, "winograd_2x2:" + convs[1] + ";winograd_4x4:" + convs[0]);
  EXPECT_EQ(ParseConvAlgorithmText(text, main), tiles);
  EXPECT_EQ(ConvAlgorithmText({}), "direct");
  EXPECT_TRUE(ParseConvAlgorithmText("direct", main).empty());
  EXPECT_EQ(ParseConvAlgorithmText("winograd_4x4", main).size(), 2u);
  for (std::string bad :
       {std::string("winograd_3x3"), std::string("fast"),
        "winograd_4x4:" + convs[0] + "," + convs[0], std::string("winograd_4x4:nope"),
        std::string("winograd_4x4:"), "winograd_4x4:" + convs[0] + ";x", "direct:" + convs[0]}) {
    EXPECT_THROW(ParseConvAlgorithmText(bad, main), ir::Error) << bad;
  }
  // A mixed choice rewrites exactly the named convolutions.
  ir::IRModule mixed = ApplyConvAlgorithm(module, "main", "winograd_2x2:" + convs[1]);
  EXPECT_EQ(CountOps(mixed, "conv2d"), 1);
  EXPECT_EQ(CountOps(mixed, "winograd_output_transform"), 1);
}

// A graph with batch 2, asymmetric padding, odd extents and a bias + relu + residual epilogue.
ir::IRModule EpilogueModel() {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{2, 6, 9, 7}});
  ir::ValueId w = b.Constant(ir::Tensor::Random(ir::TensorType{{6, 6, 3, 3}}, 5), "w");
  ir::ValueId bias = b.Constant(ir::Tensor::Random(ir::TensorType{{6, 1, 1}}, 6), "bias");
  ir::ValueId conv =
      b.Call("conv2d", {x, w}, ir::Attrs{{"padding", std::vector<int64_t>{1, 0, 1, 2}}}, "conv");
  ir::ValueId biased = b.Call("add", {conv, bias}, {}, "biased");
  ir::ValueId relu = b.Call("relu", {biased}, {}, "relu");
  ir::ValueId sum = b.Call("add", {relu, x}, {}, "sum");
  ir::IRModule module;
  module.Add(b.Finish(sum));
  return module;
}

TEST(ConvAlgorithm, PreservesSemanticsOnTheReferenceInterpreter) {
  for (const char* algorithm : {"winograd_2x2", "winograd_4x4"}) {
    SCOPED_TRACE(algorithm);
    for (const char* name : {"resnet_basic_block", "resnet_bottleneck"}) {
      ir::IRModule rewritten = ApplyConvAlgorithm(rewrite_testing::Model(name), "main", algorithm);
      EXPECT_GT(CountOps(rewritten, "winograd_output_transform"), 0) << name;
      rewrite_testing::ExpectSameOutputs(name, rewritten);
    }
    ir::IRModule model = EpilogueModel();
    std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 3);
    std::vector<ir::Tensor> want = backends::RunReference(model, inputs);
    std::vector<ir::Tensor> got =
        backends::RunReference(ApplyConvAlgorithm(model, "main", algorithm), inputs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-6);
  }
}

TEST(ConvAlgorithm, CompiledProgramMatchesTheReferenceWithTheEpilogueFused) {
  for (const char* algorithm : {"winograd_2x2", "winograd_4x4"}) {
    SCOPED_TRACE(algorithm);
    ir::IRModule model = EpilogueModel();
    ir::IRModule fused =
        rewrite_testing::Run("InferType, FuseOps", ApplyConvAlgorithm(model, "main", algorithm));
    // bias, relu and the residual add join the output transform's kernel.
    const ir::GraphFunction& main = fused.Get("main");
    const ir::Attrs& out = main.node(main.Find("conv")).annotations;
    ASSERT_TRUE(out.Has("group"));
    for (const char* epilogue : {"biased", "relu", "sum"}) {
      EXPECT_EQ(main.node(main.Find(epilogue)).annotations.GetInt("group", -1), out.GetInt("group"))
          << epilogue;
    }
    ir::IRModule lowered = rewrite_testing::Run("Legalize", fused);
    std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 4);
    std::vector<ir::Tensor> want = backends::RunReference(model, inputs);
    std::vector<ir::Tensor> got = backends::Build(lowered)->Run(inputs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-5);
  }
  // A ResNet block at its real channel count, to see float32 error at C = 64.
  ir::IRModule block = frontend::ResNetBasicBlock({.channels = 64, .height = 14, .width = 14});
  std::vector<ir::Tensor> inputs = backends::RandomInputs(block.Get("main"), 5);
  std::vector<ir::Tensor> want = backends::RunReference(block, inputs);
  for (const char* algorithm : {"winograd_2x2", "winograd_4x4"}) {
    ir::IRModule compiled =
        rewrite_testing::Run("InferType, SimplifyExpr, FoldConstant, FuseOps, Legalize",
                             ApplyConvAlgorithm(block, "main", algorithm));
    std::vector<ir::Tensor> got = backends::Build(compiled)->Run(inputs);
    ASSERT_EQ(got.size(), 1u);
    double error = ir::RelativeError(got[0], want[0]);
    EXPECT_LT(error, 1e-5) << algorithm;
    RecordProperty(std::string(algorithm) + "_relative_error", std::to_string(error));
  }
}

}  // namespace
}  // namespace tandem::passes

namespace tandem::passes {
namespace {

// After ConvertLayout to NHWC the convolutions are NHWC/HWIO: they are eligible, and their
// chains read and write NHWC (no transpose in the transforms, none around the chain).
TEST(ConvAlgorithm, RewritesNhwcConvolutionsIntoNhwcTransforms) {
  ir::IRModule model = EpilogueModel();
  ir::IRModule nhwc = rewrite_testing::Run(
      "InferType, ConvertLayout(layout=\"NHWC\"), FoldConstant, InferType", model);
  EXPECT_EQ(EligibleConvolutions(nhwc.Get("main")), (std::vector<std::string>{"conv"}));
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 7);
  std::vector<ir::Tensor> want = backends::RunReference(model, inputs);
  for (const char* algorithm : {"winograd_2x2", "winograd_4x4"}) {
    SCOPED_TRACE(algorithm);
    ir::IRModule rewritten = ApplyConvAlgorithm(nhwc, "main", algorithm);
    int layout_transforms = CountOps(nhwc, "layout_transform");
    EXPECT_EQ(CountOps(rewritten, "layout_transform"), layout_transforms);
    for (const ir::Node& n : rewritten.Get("main").nodes) {
      if (n.op == "winograd_input_transform" || n.op == "winograd_output_transform") {
        EXPECT_EQ(n.attrs.GetString("layout"), "NHWC") << n.name;
      }
    }
    std::vector<ir::Tensor> got = backends::RunReference(rewritten, inputs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-6);
    ir::IRModule lowered = rewrite_testing::Run("InferType, FuseOps, Legalize", rewritten);
    std::vector<ir::Tensor> compiled = backends::Build(lowered)->Run(inputs);
    ASSERT_EQ(compiled.size(), 1u);
    EXPECT_LT(ir::RelativeError(compiled[0], want[0]), 1e-5);
  }
}

// A Winograd chain written in NCHW moves into NHWC as a whole: the transforms take the NHWC
// layout, and only the model's input, its result and the bias constant (folded later) are
// transposed.
TEST(ConvAlgorithm, ConvertLayoutMovesAWinogradChainIntoNhwc) {
  ir::IRModule model = EpilogueModel();
  ir::IRModule chain = ApplyConvAlgorithm(model, "main", "winograd_4x4");
  ir::IRModule nhwc = rewrite_testing::Run("InferType, ConvertLayout(layout=\"NHWC\")", chain);
  EXPECT_EQ(CountOps(nhwc, "layout_transform"), 3);
  for (const ir::Node& n : nhwc.Get("main").nodes) {
    if (n.op == "winograd_input_transform" || n.op == "winograd_output_transform") {
      EXPECT_EQ(n.attrs.GetString("layout"), "NHWC") << n.name;
    }
  }
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 8);
  std::vector<ir::Tensor> got = backends::RunReference(nhwc, inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LT(ir::RelativeError(got[0], backends::RunReference(model, inputs)[0]), 1e-6);
}

}  // namespace
}  // namespace tandem::passes
