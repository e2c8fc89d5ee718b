// InferType, FoldConstant, DeadCodeElimination, FuseOps, ConvertLayout, Legalize: IR text in and
// expected IR text out, and semantic preservation on the test models.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "tests/passes/pass_test_util.h"

namespace tandem::passes {
namespace {

using testing::CountOps;
using testing::ExpectPreservesSemantics;
using testing::ExpectTransforms;
using testing::RunText;

TEST(InferType, RecomputesStaleTypesAndReportsErrorsAtTheNode) {
  ir::IRModule m = ir::ParseModule(R"(
graph @main(%x: f32[2,3]) -> f32[3,2] {
  %t = transpose(%x) {axes=[1,0]} : f32[3,2]
  return %t
})");
  ir::GraphFunction fn = m.Get("main");
  fn.nodes.back().type = ir::TensorType{{9}, ir::DataType::kFloat32, ""};
  m.Add(fn);
  ir::IRModule fixed = RunText("InferType", m);
  EXPECT_EQ(ir::ToString(fixed.Get("main").nodes.back().type), "f32[3,2]");
  fn.nodes.back().attrs.Set("axes", std::vector<int64_t>{0, 0});
  m.Add(fn);
  try {
    RunText("InferType", m);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().node, "t");
    EXPECT_EQ(e.where().pass, "InferType");
  }
}

TEST(FoldConstant, EvaluatesConstantSubgraphs) {
  ExpectTransforms("FoldConstant", R"(
graph @main(%x: f32[2]) -> f32[2] {
  %a = constant f32[2] [1.0, 2.0]
  %b = constant f32[2] [3.0, 4.0]
  %c = add(%a, %b) : f32[2]
  %d = multiply(%x, %c) : f32[2]
  return %d
})",
                   R"(
graph @main(%x: f32[2]) -> f32[2] {
  %c = constant f32[2] [4.0, 6.0]
  %d = multiply(%x, %c) : f32[2]
  return %d
})");
  // Nothing to fold when an operand is an input.
  std::string same = R"(
graph @main(%x: f32[2]) -> f32[2] {
  %a = constant f32[2] [1.0, 2.0]
  %c = add(%a, %x) : f32[2]
  return %c
})";
  ExpectTransforms("FoldConstant", same, same);
}

TEST(DeadCodeElimination, RemovesUnusedNodes) {
  ExpectTransforms("DeadCodeElimination", R"(
graph @main(%x: f32[2], %unused: f32[3]) -> f32[2] {
  %dead = exp(%x) : f32[2]
  %r = relu(%x) : f32[2]
  return %r
})",
                   R"(
graph @main(%x: f32[2], %unused: f32[3]) -> f32[2] {
  %r = relu(%x) : f32[2]
  return %r
})");
}

TEST(FuseOps, FusesAnEpilogueIntoItsAnchor) {
  ExpectTransforms("InferType, FuseOps", R"(
graph @main(%x: f32[1,2,4,4], %w: f32[2,2,1,1], %b: f32[2,1,1]) -> f32[1,2,4,4] {
  %c = conv2d(%x, %w) : f32[1,2,4,4]
  %a = add(%c, %b) : f32[1,2,4,4]
  %r = relu(%a) : f32[1,2,4,4]
  %s = softmax(%r) : f32[1,2,4,4]
  return %s
})",
                   R"(
graph @main(%x: f32[1,2,4,4], %w: f32[2,2,1,1], %b: f32[2,1,1]) -> f32[1,2,4,4] {
  %c = conv2d(%x, %w) : f32[1,2,4,4] @{group=0}
  %a = add(%c, %b) : f32[1,2,4,4] @{group=0}
  %r = relu(%a) : f32[1,2,4,4] @{group=0}
  %s = softmax(%r) : f32[1,2,4,4]
  return %s
})");
}

TEST(FuseOps, DoesNotFuseTwoAnchorsOrOpaqueOps) {
  // conv -> conv: two anchors; the relu between them joins the first.
  ir::IRModule out = RunText("InferType, FuseOps", ir::ParseModule(R"(
graph @main(%x: f32[1,2,4,4], %w: f32[2,2,1,1]) -> f32[1,2,4,4] {
  %c1 = conv2d(%x, %w) : f32[1,2,4,4]
  %r = relu(%c1) : f32[1,2,4,4]
  %c2 = conv2d(%r, %w) : f32[1,2,4,4]
  %l = layer_norm(%c2, %x, %x) {axis=0} : f32[1,2,4,4]
  return %l
})"));
  const auto& nodes = out.Get("main").nodes;
  auto group = [&](const std::string& name) {
    ir::ValueId id = out.Get("main").Find(name);
    const ir::Node& n = nodes[static_cast<size_t>(id)];
    return n.annotations.Has("group") ? n.annotations.GetInt("group") : int64_t{-1};
  };
  EXPECT_EQ(group("c1"), group("r"));
  EXPECT_NE(group("c1"), -1);
  EXPECT_EQ(group("c2"), -1);
  EXPECT_EQ(group("l"), -1);
}

// An anchor's group takes the injective calls that keep its vector lanes in order (a reshape, a
// transpose of the outer axes) but not a layout transform that moves the innermost axis.
TEST(FuseOps, KeepsCallsThatReorderTheInnermostAxisOutOfAnAnchorsGroup) {
  auto groups = [](const std::string& text) {
    ir::IRModule out = RunText("InferType, FuseOps", ir::ParseModule(text));
    std::map<std::string, int64_t> group;
    const ir::GraphFunction& fn = out.Get("main");
    for (const ir::Node& n : fn.nodes) {
      group[n.name] = n.annotations.Has("group") ? n.annotations.GetInt("group") : int64_t{-1};
    }
    return group;
  };
  std::map<std::string, int64_t> conv = groups(R"(
graph @main(%x: f32[1,4,4,2]{NHWC}, %w: f32[1,1,2,8]) -> f32[1,8,4,4]{NCHW} {
  %c = conv2d(%x, %w) {data_layout="NHWC", kernel_layout="HWIO"}
  %r = relu(%c)
  %t = layout_transform(%r) {src_layout="NHWC", dst_layout="NCHW"}
  return %t
})");
  EXPECT_NE(conv["c"], -1);
  EXPECT_EQ(conv["c"], conv["r"]);
  EXPECT_EQ(conv["t"], -1);
  std::map<std::string, int64_t> matmul = groups(R"(
graph @main(%a: f32[4,8], %b: f32[8,8]) -> f32[2,4,4] {
  %m = matmul(%a, %b)
  %g = gelu(%m)
  %s = reshape(%g) {newshape=[4,2,4]}
  %p = transpose(%s) {axes=[1,0,2]}
  return %p
})");
  EXPECT_NE(matmul["m"], -1);
  EXPECT_EQ(matmul["m"], matmul["g"]);
  EXPECT_EQ(matmul["m"], matmul["s"]);
  EXPECT_EQ(matmul["m"], matmul["p"]);
}

// `converted` (a rewrite of `module`) computes what `module` computes on random inputs.
void ExpectSameResult(const ir::IRModule& module, const ir::IRModule& converted) {
  std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), 3);
  EXPECT_LT(ir::RelativeError(backends::RunReference(RunText("InferType", converted), inputs)[0],
                              backends::RunReference(module, inputs)[0]),
            1e-6);
}

TEST(ConvertLayout, BlocksAConvChainOnce) {
  ir::IRModule out = RunText("InferType, ConvertLayout(layout=\"NCHW4c\")", ir::ParseModule(R"(
graph @main(%x: f32[1,8,6,6]) -> f32[1,8,6,6] {
  %w = constant f32[8,8,1,1] base64"AABAvwAAAL8AAIC+AAAAAAAAgD4AAAA/AABAPwAAQL8AAAC/AACAvgAAAAAAAIA+AAAAPwAAQD8AAEC/AAAAvwAAgL4AAAAAAACAPgAAAD8AAEA/AABAvwAAAL8AAIC+AAAAAAAAgD4AAAA/AABAPwAAQL8AAAC/AACAvgAAAAAAAIA+AAAAPwAAQD8AAEC/AAAAvwAAgL4AAAAAAACAPgAAAD8AAEA/AABAvwAAAL8AAIC+AAAAAAAAgD4AAAA/AABAPwAAQL8AAAC/AACAvgAAAAAAAIA+AAAAPwAAQD8AAEC/AAAAvwAAgL4AAAAAAACAPgAAAD8AAEA/AABAvw=="
  %b = constant f32[8,1,1] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
  %c1 = conv2d(%x, %w) : f32[1,8,6,6]
  %a = add(%c1, %b) : f32[1,8,6,6]
  %r = relu(%a) : f32[1,8,6,6]
  %c2 = conv2d(%r, %w) : f32[1,8,6,6]
  return %c2
})"));
  EXPECT_EQ(CountOps(out, "layout_transform"), 4);  // data in, the weight, the bias, result out
  for (const ir::Node& n : out.Get("main").nodes) {
    if (n.op == "conv2d") {
      EXPECT_EQ(n.attrs.GetString("data_layout"), "NCHW4c");
    }
    if (n.op == "relu") {
      EXPECT_EQ(n.type.tensor().rank(), 5);  // stays blocked
    }
  }
}

TEST(ConvertLayout, KeepsPoolsOfConvertedValuesInNhwc) {
  ir::IRModule module = ir::ParseModule(R"(
graph @main(%x: f32[1,4,6,6]) -> f32[1,4] {
  %w = constant f32[4,4,1,1] [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, -1.0]
  %c = conv2d(%x, %w) : f32[1,4,6,6]
  %m = max_pool2d(%c) {pool_size=[2,2], strides=[2,2]} : f32[1,4,3,3]
  %a = avg_pool2d(%m) {pool_size=[2,2], padding=[1,1,0,0], count_include_pad=1} : f32[1,4,3,3]
  %g = global_avg_pool2d(%a) : f32[1,4,1,1]
  %f = flatten(%g) : f32[1,4]
  return %f
})");
  ir::IRModule out = RunText("InferType, ConvertLayout(layout=\"NHWC\")", module);
  // The data in, the weight, and the pooled [1,1,1,4] value back for flatten: the large
  // activations never go back to NCHW.
  EXPECT_EQ(CountOps(out, "layout_transform"), 3);
  for (const ir::Node& n : out.Get("main").nodes) {
    if (n.op.find("pool") != std::string::npos) {
      EXPECT_EQ(n.attrs.GetString("layout"), "NHWC");
    }
  }
  ExpectSameResult(module, out);
}

// A fire module: two branches of converted convolutions concatenated along the channels stay
// in NHWC (the concat along NHWC's channel axis), so the next convolution reads them with no
// transform; a concat along the height works the same way.
TEST(ConvertLayout, KeepsAConcatOfConvertedBranchesInNhwc) {
  ir::IRModule module = ir::ParseModule(R"(
graph @main(%x: f32[1,4,6,6]) -> f32[1,4,6,6] {
  %w = constant f32[4,4,1,1] [1.0, 0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 0.25, 0.0, 0.0, 1.0, 0.0, -0.5, 0.0, 0.0, -1.0]
  %w8 = constant f32[4,8,1,1] base64"AAAgvwAAgD4AAIC+AAAgPwAAAD4AAMC+AAAAPwAAAAAAAAC/AADAPgAAAL4AACC/AACAPgAAgL4AACA/AAAAPgAAwL4AAAA/AAAAAAAAAL8AAMA+AAAAvgAAIL8AAIA+AACAvgAAID8AAAA+AADAvgAAAD8AAAAAAAAAvwAAwD4="
  %a = conv2d(%x, %w) : f32[1,4,6,6]
  %r = relu(%a) : f32[1,4,6,6]
  %b = conv2d(%r, %w) : f32[1,4,6,6]
  %c = concat(%r, %b) {axis=1} : f32[1,8,6,6]
  %d = conv2d(%c, %w8) : f32[1,4,6,6]
  %h = concat(%d, %a) {axis=-2} : f32[1,4,12,6]
  %m = max_pool2d(%h) {pool_size=[2,1], strides=[2,1]} : f32[1,4,6,6]
  return %m
})");
  ir::IRModule out = RunText("InferType, ConvertLayout(layout=\"NHWC\"), FoldConstant", module);
  // The data in and the result out (the weights fold).
  EXPECT_EQ(CountOps(out, "layout_transform"), 2);
  std::vector<int64_t> axes;
  for (const ir::Node& n : out.Get("main").nodes) {
    if (n.op == "concat") axes.push_back(n.attrs.GetInt("axis"));
  }
  EXPECT_EQ(axes, (std::vector<int64_t>{3, 1}));
  ExpectSameResult(module, out);
}

// A squeeze-excite block: the pooled activation's 1x1 convolutions run in NHWC too, and their
// per-channel result scales the activation with no transform (it already is a channel bias in
// NHWC); in NCHW8c the pooled value's channels are blocked the same way.
TEST(ConvertLayout, KeepsASqueezeExciteScaleInTheConvertedLayout) {
  ir::IRModule module = ir::ParseModule(R"(
graph @main(%x: f32[1,8,6,6]) -> f32[1,8,6,6] {
  %w = constant f32[8,8,1,1] base64"AABAvwAAAL8AAIC+AAAAAAAAgD4AAAA/AABAPwAAQL8AAAC/AACAvgAAAAAAAIA+AAAAPwAAQD8AAEC/AAAAvwAAgL4AAAAAAACAPgAAAD8AAEA/AABAvwAAAL8AAIC+AAAAAAAAgD4AAAA/AABAPwAAQL8AAAC/AACAvgAAAAAAAIA+AAAAPwAAQD8AAEC/AAAAvwAAgL4AAAAAAACAPgAAAD8AAEA/AABAvwAAAL8AAIC+AAAAAAAAgD4AAAA/AABAPwAAQL8AAAC/AACAvgAAAAAAAIA+AAAAPwAAQD8AAEC/AAAAvwAAgL4AAAAAAACAPgAAAD8AAEA/AABAvw=="
  %c = conv2d(%x, %w) : f32[1,8,6,6]
  %g = global_avg_pool2d(%c) : f32[1,8,1,1]
  %s1 = conv2d(%g, %w) : f32[1,8,1,1]
  %s2 = sigmoid(%s1) : f32[1,8,1,1]
  %y = multiply(%c, %s2) : f32[1,8,6,6]
  return %y
})");
  std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), 3);
  std::vector<ir::Tensor> expected = backends::RunReference(module, inputs);
  for (const char* layout : {"NHWC", "NCHW8c"}) {
    SCOPED_TRACE(layout);
    ir::IRModule out = RunText(
        fmt::format("InferType, ConvertLayout(layout=\"{}\"), FoldConstant", layout), module);
    EXPECT_LT(ir::RelativeError(backends::RunReference(RunText("InferType", out), inputs)[0],
                                expected[0]),
              1e-5);
    if (std::string(layout) == "NHWC") {
      // The data in and the result out: weights fold, the scale needs none.
      EXPECT_EQ(CountOps(out, "layout_transform"), 2);
    }
  }
}

TEST(Passes, PreserveSemanticsOnTestModels) {
  // Each pass alone on the C++ model builders; the ONNX models once with all of them.
  ExpectPreservesSemantics("InferType, FoldConstant, DeadCodeElimination", 1e-4, false);
  ExpectPreservesSemantics("InferType, FuseOps", 1e-4, false);
  ExpectPreservesSemantics("InferType, ConvertLayout(layout=\"NHWC\"), FoldConstant", 1e-4, false);
  ExpectPreservesSemantics(
      "InferType, ConvertLayout(layout=\"NCHW8c\"), FoldConstant, FuseOps, "
      "DeadCodeElimination",
      1e-4, true);
}

TEST(Legalize, PreservesSemanticsOfFusedModels) {
  for (auto& [name, module] : testing::TestModels(false)) {
    SCOPED_TRACE(name);
    ir::IRModule out = RunText("InferType, FoldConstant, FuseOps, Legalize", module);
    for (const ir::Node& n : out.Get("main").nodes) EXPECT_NE(n.kind, ir::NodeKind::kCall);
    auto inputs = backends::RandomInputs(module.Get("main"), 3);
    auto want = backends::RunReference(module, inputs);
    auto got = backends::RunReference(out, inputs);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(ir::RelativeError(got[i], want[i]), 1e-4);
  }
}

}  // namespace
}  // namespace tandem::passes
