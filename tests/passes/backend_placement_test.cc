// External backends placed by pattern: every placed subgraph is compiled by its backend, run by
// the executor through call_extern, and compared with the reference interpreter on the module
// before placement; patterns that do not match leave the graph alone; placements print, parse
// and replay.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/external/external_backend.h"
#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "passes/backend_placement.h"
#include "tests/passes/pass_test_util.h"

namespace tandem::passes {
namespace {

using ir::Attrs;
using ir::GraphBuilder;
using ir::TensorType;
using ir::ValueId;

ValueId Weight(GraphBuilder& b, ir::Shape shape, uint64_t seed) {
  return b.Constant(ir::Tensor::Random(TensorType{std::move(shape)}, seed, -0.5, 0.5));
}

ir::IRModule ModuleOf(ir::GraphFunction function) {
  ir::IRModule module;
  module.Add(std::move(function));
  return module;
}

int CountExternCalls(const ir::IRModule& module) {
  int n = 0;
  for (const ir::Node& node : module.Get("main").nodes) n += node.kind == ir::NodeKind::kCallExtern;
  return n;
}

// Places `module` with `pipeline`, expects `calls` call_extern nodes (any number when negative:
// what oneDNN has JIT kernels for differs between CPUs), builds it, checks that no placed function
// runs one of oneDNN's reference implementations and compares the outputs with the reference
// interpreter on the unplaced module. Returns what each placed function runs (Describe()).
std::vector<std::string> ExpectPlacedAndCorrect(
    const ir::IRModule& module, int calls,
    const std::string& pipeline = "InferType, PlaceOnBackend") {
  ir::IRModule placed = testing::RunText(pipeline, module);
  if (calls < 0) calls = CountExternCalls(placed);
  EXPECT_EQ(CountExternCalls(placed), calls) << ir::PrintModule(placed);
  std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), 5);
  std::vector<ir::Tensor> want = backends::RunReference(module, inputs);
  // The placed module's own meaning (the extern functions interpreted) is unchanged...
  std::vector<ir::Tensor> interpreted = backends::RunReference(placed, inputs);
  // ...and the backend computes it.
  std::unique_ptr<backends::Executable> exe = backends::Build(placed);
  EXPECT_EQ(exe->external_functions().size(), static_cast<size_t>(calls));
  std::vector<std::string> descriptions;
  for (const auto& [name, function] : exe->external_functions()) {
    std::string implementations = function->Describe();
    EXPECT_EQ(implementations.find("ref:"), std::string::npos) << name << ": " << implementations;
    EXPECT_EQ(implementations.find("simple"), std::string::npos) << name << ": " << implementations;
    descriptions.push_back(implementations);
  }
  std::vector<ir::Tensor> got = exe->Run(inputs);
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return descriptions;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LT(ir::RelativeError(interpreted[i], want[i]), 1e-6);
    EXPECT_LT(ir::RelativeError(got[i], want[i]), 1e-4) << "output " << i;
  }
  return descriptions;
}

struct ConvCase {
  std::string name;
  std::string op;
  ir::Shape data, weight;
  Attrs attrs;
};

TEST(OnednnBackend, ConvolutionsOfEveryKindMatchTheReference) {
  std::vector<ConvCase> cases = {
      {"conv1d",
       "conv1d",
       {1, 8, 20},
       {12, 8, 3},
       Attrs{{"strides", std::vector<int64_t>{2}}, {"padding", std::vector<int64_t>{1, 1}}}},
      {"conv2d",
       "conv2d",
       {1, 8, 12, 12},
       {16, 8, 3, 3},
       Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"strided asymmetric",
       "conv2d",
       {1, 3, 15, 13},
       {8, 3, 5, 3},
       Attrs{{"strides", std::vector<int64_t>{2, 3}},
             {"padding", std::vector<int64_t>{2, 1, 1, 0}}}},
      {"grouped",
       "conv2d",
       {1, 16, 10, 10},
       {32, 4, 3, 3},
       Attrs{{"groups", int64_t{4}}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"depthwise",
       "conv2d",
       {1, 16, 10, 10},
       {16, 1, 3, 3},
       Attrs{{"groups", int64_t{16}}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"dilated",
       "conv2d",
       {1, 4, 16, 16},
       {8, 4, 3, 3},
       Attrs{{"dilation", std::vector<int64_t>{2, 2}},
             {"padding", std::vector<int64_t>{2, 2, 2, 2}}}},
      {"conv3d",
       "conv3d",
       {1, 3, 6, 10, 10},
       {8, 3, 3, 3, 3},
       Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1, 1, 1}}}},
      {"transposed",
       "conv2d_transpose",
       {1, 8, 5, 5},
       {8, 4, 4, 4},
       Attrs{{"strides", std::vector<int64_t>{2, 2}},
             {"padding", std::vector<int64_t>{1, 1, 1, 1}}}},
  };
  for (const ConvCase& c : cases) {
    for (bool constant_weight : {true, false}) {  // packed once, or an input of every call
      SCOPED_TRACE(c.name + (constant_weight ? " (constant weights)" : " (weights as input)"));
      GraphBuilder b("main");
      ValueId x = b.Input("x", TensorType{c.data});
      ValueId w = constant_weight ? Weight(b, c.weight, 3) : b.Input("w", TensorType{c.weight});
      ValueId y = b.Call(c.op, {x, w}, c.attrs);
      int64_t channels = b.TensorTypeOf(y).shape[1];
      ir::Shape bias_shape(b.TensorTypeOf(y).shape.size(), 1);
      bias_shape[1] = channels;
      y = b.Call("add", {y, Weight(b, bias_shape, 4)});
      y = b.Call("relu", {y});
      ExpectPlacedAndCorrect(ModuleOf(b.Finish(y)), 1);
    }
  }
}

TEST(OnednnBackend, BlockedAndChannelsLastLayoutsAreTakenAsTheyAre) {
  for (const char* layout : {"NCHW16c", "NCHW8c", "NHWC"}) {
    SCOPED_TRACE(layout);
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{1, 16, 9, 9}});
    ValueId y = b.Call("conv2d", {x, Weight(b, {32, 16, 3, 3}, 7)},
                       Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
    y = b.Call("add", {y, Weight(b, {1, 32, 1, 1}, 8)});
    y = b.Call("relu", {y});
    y = b.Call("conv2d", {y, Weight(b, {16, 32, 1, 1}, 9)});
    ExpectPlacedAndCorrect(
        ModuleOf(b.Finish(y)), 2,
        fmt::format("InferType, ConvertLayout(layout=\"{}\"), FoldConstant, InferType, "
                    "PlaceOnBackend",
                    layout));
  }
}

// An ONNX-style bias ([C,1,1], converted to [1,1,C] tagged HWC by ConvertLayout to NHWC) and a
// clip after a depthwise convolution are post-ops of the convolution in every layout: nothing
// of the chains is left to our own kernels.
TEST(OnednnBackend, LowerRankBiasAndClipFuseInEveryLayout) {
  for (const char* layout : {"NCHW", "NHWC"}) {
    SCOPED_TRACE(layout);
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{1, 16, 9, 9}});
    ValueId y =
        b.Call("conv2d", {x, Weight(b, {16, 1, 3, 3}, 7)},
               Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t{16}}});
    y = b.Call("add", {y, Weight(b, {16, 1, 1}, 8)});
    y = b.Call("clip", {y}, Attrs{{"min", 0.0}, {"max", 6.0}});
    y = b.Call("conv2d", {y, Weight(b, {24, 16, 1, 1}, 9)});
    y = b.Call("add", {y, Weight(b, {24, 1, 1}, 10)});
    ir::IRModule module = ModuleOf(b.Finish(y));
    std::string pipeline = fmt::format(
        "InferType, ConvertLayout(layout=\"{}\"), FoldConstant, InferType, PlaceOnBackend", layout);
    ExpectPlacedAndCorrect(module, 2, pipeline);
    ir::IRModule placed = testing::RunText(pipeline, module);
    for (const ir::Node& node : placed.Get("main").nodes) {
      EXPECT_NE(node.op, "add") << ir::PrintModule(placed);
      EXPECT_NE(node.op, "clip") << ir::PrintModule(placed);
    }
  }
  // Blocked layouts (grouped convolutions stay NCHW there, so ungrouped ones): the bias is a
  // blocked [C/8,1,1,8] constant, unblocked for oneDNN at build time.
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{1, 16, 9, 9}});
  ValueId y = b.Call("conv2d", {x, Weight(b, {16, 16, 3, 3}, 7)},
                     Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  y = b.Call("add", {y, Weight(b, {16, 1, 1}, 8)});
  y = b.Call("relu", {y});
  y = b.Call("conv2d", {y, Weight(b, {24, 16, 1, 1}, 9)});
  y = b.Call("add", {y, Weight(b, {24, 1, 1}, 10)});
  ir::IRModule module = ModuleOf(b.Finish(y));
  std::string pipeline =
      "InferType, ConvertLayout(layout=\"NCHW8c\"), FoldConstant, InferType, PlaceOnBackend";
  ExpectPlacedAndCorrect(module, 2, pipeline);
  ir::IRModule placed = testing::RunText(pipeline, module);
  for (const ir::Node& node : placed.Get("main").nodes) {
    EXPECT_NE(node.op, "add") << ir::PrintModule(placed);
    EXPECT_NE(node.op, "relu") << ir::PrintModule(placed);
  }
}

// A constant channel bias right after a convolution or matmul is the primitive's own bias, not
// a binary post-op (which made MobileNetV2's convolutions 15-25% slower); a later add, or one
// whose constant varies along other axes, stays a post-op. Results checked against the
// reference in every layout.
TEST(OnednnBackend, ChannelBiasIsThePrimitivesBias) {
  for (const char* layout : {"NCHW", "NHWC", "NCHW8c"}) {
    SCOPED_TRACE(layout);
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{1, 16, 9, 9}});
    ValueId y = b.Call("conv2d", {x, Weight(b, {16, 16, 3, 3}, 7)},
                       Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
    y = b.Call("add", {y, Weight(b, {16, 1, 1}, 8)});
    y = b.Call("clip", {y}, Attrs{{"min", 0.0}, {"max", 6.0}});
    y = b.Call("add", {y, Weight(b, {16, 1, 1}, 9)});  // after the clip: a post-op
    ir::IRModule module = ModuleOf(b.Finish(y));
    std::string pipeline = fmt::format(
        "InferType, ConvertLayout(layout=\"{}\"), FoldConstant, InferType, PlaceOnBackend", layout);
    std::vector<std::string> descriptions = ExpectPlacedAndCorrect(module, 1, pipeline);
    ASSERT_EQ(descriptions.size(), 1u);
    EXPECT_NE(descriptions[0].find("(bias, 2 post-ops)"), std::string::npos) << descriptions[0];
  }
  {  // a constant that varies along the spatial axes is no bias
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{1, 8, 6, 6}});
    ValueId y = b.Call("conv2d", {x, Weight(b, {8, 8, 1, 1}, 1)});
    y = b.Call("add", {y, Weight(b, {1, 6, 6}, 2)});
    ir::IRModule module = ModuleOf(b.Finish(y));
    std::vector<std::string> descriptions = ExpectPlacedAndCorrect(module, 1);
    ASSERT_EQ(descriptions.size(), 1u);
    EXPECT_EQ(descriptions[0].find("bias"), std::string::npos) << descriptions[0];
    EXPECT_NE(descriptions[0].find("(1 post-op)"), std::string::npos) << descriptions[0];
  }
  {  // dense with a bias over its output features
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{2, 7, 24}});
    ValueId y = b.Call("dense", {x, Weight(b, {40, 24}, 1)});
    y = b.Call("add", {Weight(b, {40}, 2), y});  // the chained value as the second operand
    ir::IRModule module = ModuleOf(b.Finish(b.Call("relu", {y})));
    std::vector<std::string> descriptions = ExpectPlacedAndCorrect(module, 1);
    ASSERT_EQ(descriptions.size(), 1u);
    EXPECT_NE(descriptions[0].find("(bias, 1 post-op)"), std::string::npos) << descriptions[0];
  }
}

TEST(OnednnBackend, ResidualAddWithAnActivationOperand) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{1, 8, 10, 10}});
  ValueId y = b.Call("conv2d", {x, Weight(b, {8, 8, 3, 3}, 1)},
                     Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  y = b.Call("add", {x, y});  // the chained value as the second operand
  ExpectPlacedAndCorrect(ModuleOf(b.Finish(b.Call("relu", {y}))), 1);
}

TEST(OnednnBackend, MatmulsWithEpilogues) {
  {  // dense on 3-D data, bias, gelu
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{2, 7, 24}});
    ValueId y = b.Call("dense", {x, Weight(b, {40, 24}, 1)});
    y = b.Call("add", {y, Weight(b, {40}, 2)});
    ExpectPlacedAndCorrect(ModuleOf(b.Finish(b.Call("gelu", {y}))), 1);
  }
  {  // matmul of two activations with broadcast batch
    GraphBuilder b("main");
    ValueId a = b.Input("a", TensorType{{3, 5, 6}});
    ValueId c = b.Input("c", TensorType{{1, 6, 4}});
    ExpectPlacedAndCorrect(ModuleOf(b.Finish(b.Call("matmul", {a, c}))), 1);
  }
  for (int64_t ta : {0, 1}) {
    for (int64_t tb : {0, 1}) {
      SCOPED_TRACE(fmt::format("transpose_a={} transpose_b={}", ta, tb));
      GraphBuilder b("main");
      ValueId a = b.Input("a", TensorType{ta ? ir::Shape{2, 6, 5} : ir::Shape{2, 5, 6}});
      ValueId c = b.Input("c", TensorType{tb ? ir::Shape{2, 4, 6} : ir::Shape{2, 6, 4}});
      ValueId y = b.Call("batch_matmul", {a, c}, Attrs{{"transpose_a", ta}, {"transpose_b", tb}});
      y = b.Call("multiply", {y, Weight(b, {1}, 3)});
      ExpectPlacedAndCorrect(ModuleOf(b.Finish(y)), 1);
    }
  }
}

TEST(OnednnBackend, SoftmaxLayerNormAndPooling) {
  {
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{2, 64, 64}});
    ValueId y = b.Call("softmax", {x});
    ExpectPlacedAndCorrect(ModuleOf(b.Finish(b.Call("softmax", {y}))), 2);
  }
  {
    // oneDNN 2.6 has JIT layer normalization on some CPUs and only its reference one on others
    // (AVX2): taken or refused, the result is right.
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{2, 16, 256}});
    ValueId y = b.Call("layer_norm", {x, Weight(b, {256}, 1), Weight(b, {256}, 2)});
    ExpectPlacedAndCorrect(ModuleOf(b.Finish(y)), -1);
  }
  {
    // Pooling in channels-last layout (oneDNN's JIT kernels take NHWC as it is).
    GraphBuilder b("main");
    ValueId x = b.Input("x", TensorType{{1, 11, 11, 8}, ir::DataType::kFloat32, "NHWC"});
    ValueId m = b.Call("max_pool2d", {x},
                       Attrs{{"pool_size", std::vector<int64_t>{3, 3}},
                             {"strides", std::vector<int64_t>{2, 2}},
                             {"padding", std::vector<int64_t>{1, 1, 1, 1}},
                             {"ceil_mode", int64_t{1}},
                             {"layout", std::string("NHWC")}});
    ValueId a = b.Call("avg_pool2d", {m},
                       Attrs{{"pool_size", std::vector<int64_t>{2, 2}},
                             {"padding", std::vector<int64_t>{1, 1, 0, 0}},
                             {"count_include_pad", int64_t{1}},
                             {"layout", std::string("NHWC")}});
    ExpectPlacedAndCorrect(ModuleOf(b.Finish(b.Call("global_avg_pool2d", {a},
                                                    Attrs{{"layout", std::string("NHWC")}}))),
                           3);
  }
}

// What oneDNN would run with a reference implementation (plain loops, slower than generated
// code) is not taken, with the reason among the matcher's refusals. Which implementation oneDNN
// has depends on the instruction set: softmax over a leading axis is a reference loop on every
// x86 ISA, pooling on plain NCHW data is one on AVX2 ("simple_nchw") but JIT code on AVX-512;
// what is taken runs no reference implementation (ExpectPlacedAndCorrect checks).
TEST(OnednnBackend, ReferenceImplementationsAreRefused) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{1, 8, 11, 11}});
  ValueId m = b.Call("max_pool2d", {x},
                     Attrs{{"pool_size", std::vector<int64_t>{3, 3}},
                           {"strides", std::vector<int64_t>{2, 2}},
                           {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  ValueId s = b.Call("softmax", {m}, Attrs{{"axis", int64_t{1}}});
  ir::IRModule module = testing::RunText("InferType", ModuleOf(b.Finish(s)));
  ExpectPlacedAndCorrect(module, -1);
  PlacementMatcher matcher(SelectBackends("onednn"));
  for (const backends::PatternMatch& match : matcher.Matches(module.Get("main"))) {
    EXPECT_EQ(match.OpsText(module.Get("main")), "max_pool2d");
  }
  ASSERT_FALSE(matcher.refusals().empty());
  for (const auto& [pattern, why] : matcher.refusals()) {
    EXPECT_NE(why.find("reference implementation"), std::string::npos) << pattern << ": " << why;
  }
}

TEST(OnednnBackend, ModelsPlacedOnOnednnMatchTheReference) {
  for (auto& [name, module] : testing::TestModels(/*with_onnx=*/false)) {
    SCOPED_TRACE(name);
    ir::IRModule placed = testing::RunText(
        "InferType, SimplifyExpr, FoldConstant, InferType, PlaceOnBackend", module);
    EXPECT_GT(CountExternCalls(placed), 0);
    std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), 5);
    std::vector<ir::Tensor> want = backends::RunReference(module, inputs);
    std::vector<ir::Tensor> got = backends::Build(placed)->Run(inputs);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(ir::RelativeError(got[i], want[i]), 1e-4);
  }
}

TEST(OnednnBackend, WhatNoPatternMatchesIsLeftAlone) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{4, 8}});
  ValueId y = b.Call("exp", {x});
  y = b.Call("transpose", {y}, Attrs{{"axes", std::vector<int64_t>{1, 0}}});
  ir::IRModule module = ModuleOf(b.Finish(y));
  ir::IRModule placed = testing::RunText("InferType, PlaceOnBackend", module);
  EXPECT_TRUE(ir::StructuralEqual(placed, testing::RunText("InferType", module)));

  // f64 convolutions are not oneDNN's; a relu whose input has two users is not an epilogue.
  GraphBuilder c("main");
  ValueId d = c.Input("d", TensorType{{1, 4, 6, 6}, ir::DataType::kFloat64});
  ValueId w = c.Constant(ir::Tensor::Random(TensorType{{4, 4, 1, 1}, ir::DataType::kFloat64}, 1));
  ValueId conv64 = c.Call("conv2d", {d, w});
  ValueId x32 = c.Input("x", TensorType{{1, 4, 6, 6}});
  ValueId conv32 = c.Call("conv2d", {x32, Weight(c, {4, 4, 1, 1}, 2)});
  ValueId relu = c.Call("relu", {conv32});
  ValueId sum = c.Call("add", {relu, conv32});
  ir::IRModule two = ModuleOf(c.Finish(std::vector<ValueId>{conv64, sum}));
  ir::IRModule placed_two = testing::RunText("InferType, PlaceOnBackend", two);
  const ir::GraphFunction& main = placed_two.Get("main");
  ASSERT_EQ(CountExternCalls(placed_two), 1);
  for (const ir::Node& node : main.nodes) {
    if (node.kind == ir::NodeKind::kCallExtern) {
      EXPECT_EQ(node.op, "conv2d");
    }
    if (node.kind == ir::NodeKind::kCall && node.op == "conv2d") {
      EXPECT_EQ(main.type_of(node.inputs[0]).tensor().dtype, ir::DataType::kFloat64);
    }
  }
  ExpectPlacedAndCorrect(two, 1);
}

TEST(OnednnBackend, PlacedModulesPrintParseAndCarryTheirAnnotations) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{1, 4, 6, 6}});
  ValueId y = b.Call("conv2d", {x, Weight(b, {8, 4, 3, 3}, 1)}, Attrs{}, "conv");
  y = b.Call("relu", {y}, Attrs{}, "act");
  ir::IRModule placed = testing::RunText("InferType, PlaceOnBackend", ModuleOf(b.Finish(y)));
  std::string text = ir::PrintModule(placed);
  EXPECT_NE(text.find("%act = call_extern @onednn_act \"conv2d+relu\"(%x)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("@{backend=\"onednn\", pattern=\"convolution\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("extern_backend=\"onednn\""), std::string::npos) << text;
  ir::IRModule parsed = ir::ParseModule(text, "placed");
  EXPECT_TRUE(ir::StructuralEqual(parsed, placed)) << ir::StructuralDiff(parsed, placed);
  // Later passes leave the extern function alone; DCE keeps it while it is called.
  ir::IRModule lowered =
      testing::RunText("InferType, FuseOps, Legalize, DeadCodeElimination", placed);
  EXPECT_TRUE(lowered.Has("onednn_act"));
  EXPECT_TRUE(ir::StructuralEqual(lowered.Get("onednn_act"), placed.Get("onednn_act")));
}

TEST(Placement, TextRoundTripsAndBadTextIsAnError) {
  std::vector<Placement> placements = {{"onednn", "convolution", {"conv", "add", "relu"}},
                                       {"cublas", "matmul", {"mm"}}};
  std::string text = PlacementText(placements);
  EXPECT_EQ(text, "onednn/convolution:conv,add,relu;cublas/matmul:mm");
  EXPECT_EQ(ParsePlacementText(text), placements);
  EXPECT_TRUE(ParsePlacementText("").empty());
  for (const char* bad : {"onednn", "onednn:conv", "/x:conv", "onednn/x:", "onednn/x:a,,b"}) {
    EXPECT_THROW(ParsePlacementText(bad), ir::Error) << bad;
  }
}

TEST(Placement, ApplyingRejectsUnknownNodesOverlapsAndLeakingValues) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{1, 4, 6, 6}});
  ValueId conv = b.Call("conv2d", {x, Weight(b, {4, 4, 1, 1}, 1)}, Attrs{}, "conv");
  ValueId relu = b.Call("relu", {conv}, Attrs{}, "relu");
  ir::IRModule module = ModuleOf(b.Finish(b.Call("add", {relu, conv}, Attrs{}, "sum")));
  EXPECT_THROW(ApplyPlacements(module, "main", {{"onednn", "convolution", {"nope"}}}), ir::Error);
  EXPECT_THROW(
      ApplyPlacements(module, "main",
                      {{"onednn", "convolution", {"conv"}}, {"onednn", "convolution", {"conv"}}}),
      ir::Error);
  // conv is used by `sum` too: it cannot be inside a subgraph that ends at relu.
  EXPECT_THROW(ApplyPlacements(module, "main", {{"onednn", "convolution", {"conv", "relu"}}}),
               ir::Error);
}

TEST(CublasBackend, BuildsWithTheToolkitAndRunsOnlyWithAGpu) {
  const backends::ExternalBackend* cublas =
      backends::ExternalBackendRegistry::Global().Find("cublas");
  if (cublas == nullptr) GTEST_SKIP() << "built without the CUDA toolkit: no cuBLAS backend";
  std::string why;
  if (!cublas->Available(&why)) GTEST_SKIP() << "cuBLAS backend compiled but not runnable: " << why;
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{3, 17, 24}});
  ValueId y = b.Call("dense", {x, Weight(b, {40, 24}, 1)});
  ValueId z = b.Call("batch_matmul", {y, b.Input("c", TensorType{{3, 9, 40}})},
                     Attrs{{"transpose_b", int64_t{1}}});
  ExpectPlacedAndCorrect(ModuleOf(b.Finish(z)), 2, "InferType, PlaceOnBackend(backend=\"cublas\")");
}

}  // namespace
}  // namespace tandem::passes
