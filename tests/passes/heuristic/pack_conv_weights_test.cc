// PackConvWeights: a channels-last conv2d with a constant weight gets the weight in panels of
// output channels (kernel layout OHWI{nb}o) at compile time (IR text in, IR text out); the cases
// that must not fire; the same values on the test models in NHWC, on the reference interpreter
// and compiled with default schedules.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::CountOps;
using rewrite_testing::ExpectRewrite;
using rewrite_testing::ExpectUnchanged;

TEST(PackConvWeights, CutsAnHwioWeightIntoOutputChannelPanels) {
  // W HWIO [1, 1, I=2, O=4] in panels of 2: P[p, i, 0, 0, c] = W[0, 0, i, 2p + c].
  ExpectRewrite("InferType, PackConvWeights(block=2)", R"(
graph @main(%x: f32[1,3,3,2]{NHWC}) -> f32[1,3,3,4]{NHWC} {
  %w = constant f32[1,1,2,4] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
  %y = conv2d(%x, %w) {data_layout="NHWC", kernel_layout="HWIO"}
  return %y
})",
                R"(
graph @main(%x: f32[1,3,3,2]{NHWC}) -> f32[1,3,3,4]{NHWC} {
  %w_packed = constant f32[2,1,1,2,2] [1.0, 2.0, 5.0, 6.0, 3.0, 4.0, 7.0, 8.0]
  %y = conv2d(%x, %w_packed) {data_layout="NHWC", kernel_layout="OHWI2o"}
  return %y
})");
}

TEST(PackConvWeights, OrdersEachPanelByTapThenInputChannel) {
  // W HWIO [KH=2, KW=1, I=2, O=4], W[h, 0, i, o] = 1 + 4 (2h + i) + o, in panels of 2:
  // P[p, h, 0, i, c] = W[h, 0, i, 2p + c], the order in which a register tile reads it.
  ExpectRewrite("InferType, PackConvWeights(block=2)", R"(
graph @main(%x: f32[1,3,3,2]{NHWC}) -> f32[1,2,3,4]{NHWC} {
  %w = constant f32[2,1,2,4] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]
  %y = conv2d(%x, %w) {data_layout="NHWC", kernel_layout="HWIO"}
  return %y
})",
                R"(
graph @main(%x: f32[1,3,3,2]{NHWC}) -> f32[1,2,3,4]{NHWC} {
  %w_packed = constant f32[2,2,1,2,2] [1.0, 2.0, 5.0, 6.0, 9.0, 10.0, 13.0, 14.0, 3.0, 4.0, 7.0, 8.0, 11.0, 12.0, 15.0, 16.0]
  %y = conv2d(%x, %w_packed) {data_layout="NHWC", kernel_layout="OHWI2o"}
  return %y
})");
}

// The default panel is two vector registers of the target (16 f32 on AVX2, 32 on AVX-512), one
// cache line (16) where two registers do not divide the output channels (48 on AVX-512), one
// vector register where that does not either (24 or 1000 on AVX2: 8); none where no such width
// divides them (40 on AVX-512: the weight keeps its HWIO layout, whose last axis is O).
TEST(PackConvWeights, DefaultPanelIsTwoVectorsOfTheTargetOrACacheLine) {
  auto panel_of = [](int64_t out_channels, const std::string& target) -> int64_t {
    std::string values = "[0.5";
    for (int64_t k = 1; k < 2 * out_channels; ++k) values += ", 0.5";
    values += "]";
    ir::IRModule input = ir::ParseModule(fmt::format(R"(
graph @main(%x: f32[1,2,2,2]{{NHWC}}) -> f32[1,2,2,{0}]{{NHWC}} {{
  %w = constant f32[1,1,2,{0}] {1}
  %y = conv2d(%x, %w) {{data_layout="NHWC", kernel_layout="HWIO"}}
  return %y
}})",
                                                     out_channels, values),
                                         "input");
    ir::IRModule packed =
        rewrite_testing::Run("InferType, PackConvWeights", input, ir::ParseTarget(target));
    const ir::GraphFunction& main = packed.Get("main");
    const ir::Node& call = main.node(main.Find("y"));
    return main.type_of(call.inputs[1]).tensor().shape.back();
  };
  EXPECT_EQ(panel_of(64, "llvm -cpu=x86-64-v3"), 16);
  EXPECT_EQ(panel_of(64, "llvm -cpu=skylake-avx512"), 32);
  EXPECT_EQ(panel_of(48, "llvm -cpu=skylake-avx512"), 16);
  EXPECT_EQ(panel_of(48, "llvm -cpu=x86-64-v3"), 16);
  EXPECT_EQ(panel_of(24, "llvm -cpu=x86-64-v3"), 8);
  EXPECT_EQ(panel_of(1000, "llvm -cpu=x86-64-v3"), 8);
  EXPECT_EQ(panel_of(40, "llvm -cpu=skylake-avx512"), 40);
}

// Many output channels that no panel width divides (250 on AVX-512: not a multiple of 32, 16
// or a vector) are padded with zero channels to whole 16-channel panels (256) and the result
// sliced back to 250, in the convolution's layout: the same values, on the reference
// interpreter and compiled. Fewer channels (40) are left unpacked.
TEST(PackConvWeights, PadsManyChannelsThatNoPanelDivides) {
  const int64_t out_channels = 250;
  std::string values = "[";
  for (int64_t k = 0; k < 3 * out_channels; ++k) {
    values += fmt::format("{}{}", k ? ", " : "", static_cast<double>((k * 37) % 23) / 8.0 - 1.0);
  }
  values += "]";
  ir::IRModule input = ir::ParseModule(fmt::format(R"(
graph @main(%x: f32[1,5,5,3]{{NHWC}}) -> f32[1,5,5,{0}]{{NHWC}} {{
  %w = constant f32[1,1,3,{0}] {1}
  %y = conv2d(%x, %w) {{data_layout="NHWC", kernel_layout="HWIO"}}
  %r = relu(%y)
  return %r
}})",
                                                   out_channels, values),
                                       "input");
  ir::IRModule packed = rewrite_testing::Run("InferType, PackConvWeights", input,
                                             ir::ParseTarget("llvm -cpu=skylake-avx512"));
  const ir::GraphFunction& main = packed.Get("main");
  const ir::Node& slice = main.node(main.Find("y"));
  ASSERT_EQ(slice.op, "strided_slice") << ir::PrintModule(packed);
  EXPECT_EQ(ir::ToString(slice.type), "f32[1,5,5,250]{NHWC}");
  const ir::Node& conv = main.node(slice.inputs[0]);
  EXPECT_EQ(conv.attrs.GetString("kernel_layout"), "OHWI16o");
  EXPECT_EQ(main.type_of(conv.inputs[1]).tensor().shape, (ir::Shape{16, 1, 1, 3, 16}));
  std::vector<ir::Tensor> inputs = backends::RandomInputs(input.Get("main"), 3);
  std::vector<ir::Tensor> expected = backends::RunReference(input, inputs);
  EXPECT_LT(ir::RelativeError(backends::RunReference(packed, inputs)[0], expected[0]), 1e-6);
  std::vector<ir::Tensor> compiled =
      backends::Build(rewrite_testing::Run("InferType, FuseOps, Legalize", packed))->Run(inputs);
  EXPECT_LT(ir::RelativeError(compiled[0], expected[0]), 1e-6);
}

TEST(PackConvWeights, LeavesWhatItCannotPack) {
  const char* pipeline = "InferType, PackConvWeights(block=2)";
  // NCHW data: the kernels vectorize over width, not over output channels.
  ExpectUnchanged(pipeline, R"(
graph @main(%x: f32[1,1,3,3]) -> f32[1,4,3,3] {
  %w = constant f32[4,1,1,1] [1.0, 2.0, 3.0, 4.0]
  %y = conv2d(%x, %w)
  return %y
})");
  // A depthwise convolution, a weight that is an input, and O = 3 (not a multiple of 2).
  ExpectUnchanged(pipeline, R"(
graph @main(%x: f32[1,3,3,4]{NHWC}, %v: f32[1,1,4,4]) -> (f32[1,3,3,4]{NHWC}, f32[1,3,3,4]{NHWC}, f32[1,3,3,3]{NHWC}) {
  %w = constant f32[1,1,1,4] [1.0, 2.0, 3.0, 4.0]
  %d = conv2d(%x, %w) {data_layout="NHWC", kernel_layout="HWIO", groups=4}
  %e = conv2d(%x, %v) {data_layout="NHWC", kernel_layout="HWIO"}
  %u = constant f32[1,1,4,3] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
  %f = conv2d(%x, %u) {data_layout="NHWC", kernel_layout="HWIO"}
  %t = tuple(%d, %e, %f)
  return %t
})");
  EXPECT_THROW(rewrite_testing::Run("InferType, PackConvWeights(block=1)",
                                    rewrite_testing::Model("resnet_basic_block")),
               ir::Error);
}

TEST(PackConvWeights, PreservesTheModelsInNhwcOnTheReferenceAndCompiled) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    if (name.rfind("bert", 0) == 0) continue;  // no convolutions
    SCOPED_TRACE(name);
    ir::IRModule packed = rewrite_testing::Run(
        "InferType, SimplifyExpr, FoldConstant, ConvertLayout(layout=\"NHWC\"), FoldConstant, "
        "InferType, PackConvWeights(block=4), FuseOps",
        rewrite_testing::Model(name));
    int blocked = 0;
    for (const ir::Node& node : packed.Get("main").nodes) {
      if (node.kind == ir::NodeKind::kCall && node.op == "conv2d" &&
          node.attrs.GetString("kernel_layout") == "OHWI4o") {
        ++blocked;
      }
    }
    EXPECT_GT(blocked, 0);
    rewrite_testing::ExpectSameOutputs(name, packed);
    rewrite_testing::ExpectCompiledSameOutputs(name, packed);
  }
}

}  // namespace
}  // namespace tandem::passes
