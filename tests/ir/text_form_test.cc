// Round trips, errors and robustness of the graph IR text form (ir/printer.h, ir/parser.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/lexer.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"

namespace tandem::ir {
namespace {

TensorType F32(Shape shape, std::string layout = "") {
  return TensorType{std::move(shape), DataType::kFloat32, std::move(layout)};
}

// parse(print(m)) is structurally equal to m, and printing it again gives the same text.
testing::AssertionResult RoundTrips(const IRModule& module) {
  std::string text = PrintModule(module);
  IRModule parsed;
  try {
    parsed = ParseModule(text);
  } catch (const Error& e) {
    return testing::AssertionFailure() << "parse failed: " << e.what() << "\n" << text;
  }
  std::string diff = StructuralDiff(module, parsed);
  if (!diff.empty()) return testing::AssertionFailure() << diff << "\n" << text;
  std::string again = PrintModule(parsed);
  if (again != text) {
    return testing::AssertionFailure() << "reprinted text differs:\n" << text << "\n---\n" << again;
  }
  if (StructuralHash(parsed) != StructuralHash(module)) {
    return testing::AssertionFailure() << "hash changed by the round trip";
  }
  return testing::AssertionSuccess();
}

Attrs EveryAttrKind() {
  return Attrs{{"int", int64_t{42}},
               {"negative", int64_t{std::numeric_limits<int64_t>::min()}},
               {"float", 0.1},
               {"negative_zero", -0.0},
               {"tiny", 5e-324},
               {"huge", 1.7976931348623157e308},
               {"inf", std::numeric_limits<double>::infinity()},
               {"minus_inf", -std::numeric_limits<double>::infinity()},
               {"nan", std::numeric_limits<double>::quiet_NaN()},
               {"string", std::string("tab\there \"quoted\" back\\slash\nnewline \x01 ü")},
               {"empty_string", std::string()},
               {"ints", std::vector<int64_t>{1, -2, 3}},
               {"empty_ints", std::vector<int64_t>{}},
               {"floats", std::vector<double>{0.5, -1e-07, 3.0}},
               {"empty_floats", std::vector<double>{}},
               {"odd key/with:chars", int64_t{1}}};
}

// Small constants of every dtype (decimal lists), and large, NaN-holding and odd-byte ones
// (base64).
std::vector<Tensor> ConstantsOfEveryDtype() {
  std::vector<Tensor> out;
  out.push_back(Tensor::FromFloats(
      {2, 3}, {1.0f, -0.0f, 0.1f, 1e-45f, 3.4028235e38f, std::numeric_limits<float>::infinity()}));
  out.push_back(Tensor::FromDoubles({3}, DataType::kFloat64, {0.1, -5e-324, 1e300}));
  out.push_back(Tensor::FromDoubles({4}, DataType::kFloat16, {0.333251953125, -65504, 6e-08, 1}));
  out.push_back(Tensor::FromDoubles({3}, DataType::kInt8, {-128, 0, 127}));
  out.push_back(Tensor::FromDoubles({2}, DataType::kUInt8, {0, 255}));
  out.push_back(Tensor::FromDoubles({2}, DataType::kInt32, {-2147483648.0, 2147483647}));
  out.push_back(Tensor::FromInt64s(
      {2}, {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}));
  out.push_back(Tensor::FromDoubles({3}, DataType::kBool, {1, 0, 1}));
  out.push_back(Tensor::FromFloats({}, {2.5f}));                      // scalar
  out.push_back(Tensor(TensorType{{0, 3}, DataType::kFloat32, ""}));  // no elements
  out.push_back(Tensor::FromFloats({2}, {std::numeric_limits<float>::quiet_NaN(), 1.0f}));
  Tensor odd_bool(TensorType{{2}, DataType::kBool, ""});
  odd_bool.data<uint8_t>()[1] = 2;  // not 0 or 1: only base64 keeps the byte
  out.push_back(odd_bool);
  for (DataType dtype :
       {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt8,
        DataType::kUInt8, DataType::kInt32, DataType::kInt64, DataType::kBool}) {
    out.push_back(Tensor::Random(TensorType{{3, 6}, dtype, ""}, 7, -100, 100));
  }
  return out;
}

// A module with every node kind, tuple types (nested and empty), layouts, annotations, every
// attribute kind, odd names, parameters declared after other nodes, and constants of all dtypes.
IRModule EveryConstructModule() {
  GraphBuilder b("main");
  ValueId x = b.Input("x", F32({1, 4, 8, 8}));
  ValueId weight = b.Constant(Tensor::Random(F32({8, 4, 1, 1}), 1), "conv.weight");
  ValueId y = b.Input("a/b:0", F32({1, 8, 8, 8}));  // a parameter after a constant
  ValueId conv =
      b.Call("conv2d", {x, weight}, {{"dilation", std::vector<int64_t>{2, 2}}}, "conv out");
  b.Annotate(conv, "backend", std::string("onednn"));
  b.Annotate(conv, "group", int64_t{3});
  ValueId sum = b.Call("add", {conv, y}, {}, "quote\"back\\slash");
  ValueId relu = b.Call("relu", {sum}, {}, "new\nline");
  ValueId blocked = b.Call(
      "layout_transform", {relu},
      {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW8c")}}, "ünïcode");
  Attrs every_kind = EveryAttrKind();
  for (const auto& [key, value] : every_kind.values()) b.Annotate(blocked, key, value);
  ValueId parts =
      b.Call("split", {x}, {{"axis", int64_t{1}}, {"sections", std::vector<int64_t>{1, 3}}}, "0");
  ValueId second = b.TupleGetItem(parts, 1, "inf");
  ValueId clipped = b.Call("clip", {second}, {{"min", -1.5}}, "1");
  std::vector<ValueId> fields = {blocked, clipped, parts};
  for (const Tensor& constant : ConstantsOfEveryDtype()) fields.push_back(b.Constant(constant));
  fields.push_back(b.Tuple({}, "empty"));
  ValueId nested = b.Tuple({parts, b.Tuple({blocked})}, "nested");
  fields.push_back(nested);
  GraphFunction main = b.Finish(b.Tuple(fields, "outputs"));
  main.attrs = EveryAttrKind();
  // Attributes and annotations on a parameter, and a constant whose type carries a layout.
  Node& param = main.nodes[static_cast<size_t>(y)];
  param.attrs.Set("origin", std::string("onnx"));
  param.annotations.Set("device", int64_t{0});
  Node& constant = main.nodes[static_cast<size_t>(weight)];
  constant.type = F32({8, 4, 1, 1}, "OIHW");
  constant.annotations.Set("frozen", int64_t{1});

  GraphBuilder helper("helper fn/1");
  ValueId h = helper.Input("0abc", TensorType{{3}, DataType::kInt64, ""});
  ValueId cast = helper.Call("cast", {h}, {{"dtype", std::string("f32")}});
  GraphBuilder constants_only("constants");
  ValueId c = constants_only.Constant(Tensor::FromFloats({2}, {1, 2}));

  IRModule module;
  module.Add(std::move(main));
  module.Add(helper.Finish(cast));
  module.Add(constants_only.Finish(c));
  module.attrs() = EveryAttrKind();
  module.attrs().Set("name", std::string("every construct"));
  Verify(module);
  return module;
}

TEST(TextForm, EveryConstructRoundTrips) {
  IRModule module = EveryConstructModule();
  EXPECT_TRUE(RoundTrips(module));
  std::string text = PrintModule(module);
  // Spot checks of the printed forms documented in docs/text_form.md.
  EXPECT_NE(text.find("%\"a/b:0\": f32[1,8,8,8] {origin=\"onnx\"} @{device=0}"), std::string::npos)
      << text;
  EXPECT_NE(text.find(": f32[1,1,8,8,8]{NCHW8c} @{"), std::string::npos) << text;
  EXPECT_NE(text.find("empty_floats=[.], empty_ints=[]"), std::string::npos) << text;
  EXPECT_NE(text.find("constant i64[2] [-9223372036854775808, 9223372036854775807]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("constant bool[3] [true, false, true]"), std::string::npos) << text;
  EXPECT_NE(text.find("constant f32[8,4,1,1]{OIHW} base64\""), std::string::npos) << text;
  EXPECT_NE(text.find("graph @\"helper fn/1\"(%0abc: i64[3]) -> f32[3] {"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tuple_get_item(%0) {index=1} : f32[1,3,8,8]"), std::string::npos) << text;
  EXPECT_NE(text.find("= tuple() : ()"), std::string::npos) << text;
}

// Complements ParseRobustness.EveryPrefixParsesOrThrowsError (text_form_errors_test.cc) with the
// text that has every construct in it.
TEST(TextForm, EveryPrefixOfTheFullModuleParsesOrThrowsError) {
  std::string text = PrintModule(EveryConstructModule());
  int parsed = 0;
  for (size_t length = 0; length <= text.size(); ++length) {
    try {
      ParseModule(text.substr(0, length));
      ++parsed;
    } catch (const Error&) {
    }
  }
  EXPECT_EQ(parsed, 2);  // the whole text, and the text without its final newline
}

TEST(TextForm, ConstantsKeepEveryByte) {
  IRModule original_module = EveryConstructModule();
  IRModule module = ParseModule(PrintModule(original_module));
  const GraphFunction& original = original_module.Get("main");
  const GraphFunction& parsed = module.Get("main");
  int constants = 0;
  for (size_t i = 0; i < original.nodes.size(); ++i) {
    const Node& a = original.nodes[i];
    if (a.kind != NodeKind::kConstant) continue;
    ++constants;
    const Node& b = parsed.node(parsed.Find(a.name));
    ASSERT_EQ(a.value.num_bytes(), b.value.num_bytes()) << a.name;
    EXPECT_EQ(0, std::memcmp(a.value.bytes().data(), b.value.bytes().data(),
                             static_cast<size_t>(a.value.num_bytes())))
        << a.name;
  }
  EXPECT_EQ(constants, 21);
}

TEST(TextForm, CanonicalNamesAndElidedConstants) {
  IRModule module = EveryConstructModule();
  std::string canonical = PrintModule(module, PrintOptions{.canonical_names = true});
  EXPECT_NE(canonical.find("graph @main(%0: f32[1,4,8,8], %1: f32[1,8,8,8]"), std::string::npos)
      << canonical;
  EXPECT_EQ(canonical.find("%x"), std::string::npos);
  // Canonical text parses back to the same structure.
  EXPECT_EQ(StructuralDiff(ParseModule(canonical), module), "");

  std::string elided = PrintModule(module, PrintOptions{.max_constant_bytes = 16});
  EXPECT_NE(elided.find("constant f32[8,4,1,1]{OIHW} elided"), std::string::npos) << elided;
  EXPECT_NE(elided.find("constant u8[2] [0, 255]"), std::string::npos) << elided;  // 2 bytes
  try {
    ParseModule(elided, "dump.tir");
    FAIL() << "an elided constant must not parse";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("printed with elided constants"), std::string::npos) << e.what();
    EXPECT_EQ(e.where().file, "dump.tir");
    EXPECT_GT(e.where().line, 1);
  }
}

TEST(TextForm, HandWrittenTextMayOmitTypesAndDefaults) {
  if (OpRegistry::Global().Find("relu") == nullptr) GTEST_SKIP() << "relu is not registered yet";
  IRModule module = ParseModule(R"(
    // A comment.
    graph @f(%x: f32[2,3]) -> f32[2,3] {
      %y = relu(%x)
      return %y
    }
  )");
  const GraphFunction& f = module.Get("f");
  EXPECT_EQ(f.type_of(f.output), Type(F32({2, 3})));
  EXPECT_EQ(PrintFunction(f),
            "graph @f(%x: f32[2,3]) -> f32[2,3] {\n  %y = relu(%x) : f32[2,3]\n  return %y\n}\n");
  EXPECT_TRUE(StructuralEqual(ParseFunction(PrintFunction(f)), f));
}

TEST(TextForm, CallKernelNodesAndKernelFunctionsRoundTrip) {
  GraphFunction f;
  f.name = "lowered";
  Node x;
  x.kind = NodeKind::kInput;
  x.name = "x";
  x.type = F32({2, 3});
  Node call;
  call.kind = NodeKind::kCallKernel;
  call.name = "y";
  call.callee = "fused relu_0";
  call.op = "relu";
  call.inputs = {0};
  call.type = F32({2, 3}, "NC");
  call.annotations.Set("backend", std::string("llvm"));
  f.nodes = {x, call};
  f.params = {0};
  f.output = 1;
  IRModule module;
  module.Add(f);
  std::string text = PrintModule(module);
  EXPECT_NE(text.find("%y = call_kernel @\"fused relu_0\" relu(%x) : f32[2,3]{NC} @{backend="),
            std::string::npos)
      << text;
  EXPECT_TRUE(RoundTrips(module));
  // The callee is part of the structure.
  GraphFunction other = f;
  other.nodes[1].callee = "relu_1";
  EXPECT_NE(StructuralDiff(f, other).find("callee @fused relu_0 vs @relu_1"), std::string::npos);
  EXPECT_NE(StructuralHash(f), StructuralHash(other));
  // Without a kernel in the text, the result type cannot be inferred: it must be written.
  EXPECT_THROW(ParseModule("graph @g(%x: f32[2]) -> f32[2] {\n  %y = call_kernel @k(%x)\n"
                           "  return %y\n}"),
               Error);

  // Kernel functions print in full (tests/ir/kernel/kernel_text_form_test.cc tests their text
  // form), here one without a body.
  KernelFunction kernel;
  kernel.name = "fused relu_0";
  kernel.params = {MakeBuffer("a", DataType::kFloat32, {2, 3}),
                   MakeBuffer("b", DataType::kFloat32, {2, 3})};
  module.AddKernel(kernel);
  text = PrintModule(module);
  EXPECT_NE(text.find("kernel @\"fused relu_0\"(%a: f32[2,3]) -> (%b: f32[2,3]) {\n}"),
            std::string::npos)
      << text;
  EXPECT_TRUE(RoundTrips(module));
}

TEST(TextForm, DocumentedExampleReadsBackUnchanged) {
  std::ifstream file(std::string(TANDEM_SOURCE_DIR) + "/docs/text_form.md");
  ASSERT_TRUE(file) << "docs/text_form.md is missing";
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::string doc = buffer.str();
  size_t start = doc.find("```\n");
  ASSERT_NE(start, std::string::npos);
  start += 4;
  std::string example = doc.substr(start, doc.find("```\n", start) - start);
  IRModule module = ParseModule(example, "docs/text_form.md");
  EXPECT_EQ(PrintModule(module), example);
  const GraphFunction& main = module.Get("main");
  EXPECT_EQ(main.node(main.Find("table")).value.data<int8_t>()[19], 19);
}

// ---- one call of every registered op ----

struct OpSample {
  std::vector<TensorType> operands;
  Attrs attrs;
};

// One sample call per op of docs/ops.md, with non-default attributes where the op has some.
// A newly registered op must get an entry here (OpSamples.EveryRegisteredOpRoundTrips fails
// otherwise), so that no op exists without a text round trip.
const std::map<std::string, OpSample>& OpSamples() {
  using Ints = std::vector<int64_t>;
  using S = std::string;
  static const auto* samples = new std::map<std::string, OpSample>{
      {"conv1d",
       {{F32({1, 4, 10}), F32({6, 2, 3})},
        {{"strides", Ints{2}}, {"padding", Ints{1, 1}}, {"groups", int64_t{2}}}}},
      {"conv2d",
       {{F32({1, 4, 9, 9}), F32({8, 2, 3, 3})},
        {{"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}, {"groups", int64_t{2}}}}},
      {"conv3d",
       {{F32({1, 2, 5, 6, 7}), F32({4, 2, 3, 3, 3})},
        {{"padding", Ints{1, 1, 1, 1, 1, 1}}, {"dilation", Ints{1, 2, 1}}}}},
      {"conv2d_transpose",
       {{F32({1, 4, 5, 5}), F32({4, 3, 3, 3})},
        {{"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}}}},
      {"dense", {{F32({2, 3, 8}), F32({5, 8})}, {}}},
      {"matmul", {{F32({2, 1, 3, 4}), F32({5, 4, 6})}, {}}},
      {"packed_matmul", {{F32({2, 3, 4}), F32({2, 4, 8})}, {}}},
      {"batch_matmul", {{F32({2, 3, 4}), F32({1, 5, 4})}, {{"transpose_b", int64_t{1}}}}},
      {"add", {{F32({2, 3, 4}), F32({3, 1})}, {}}},
      {"subtract", {{F32({2, 3}), F32({3})}, {}}},
      {"multiply", {{F32({2, 1}), F32({1, 3})}, {}}},
      {"divide", {{F32({4}), F32({})}, {}}},
      {"pow", {{F32({2, 3}), F32({2, 3})}, {}}},
      {"relu", {{F32({2, 3})}, {}}},
      {"sigmoid", {{F32({2, 3})}, {}}},
      {"tanh", {{F32({2, 3})}, {}}},
      {"exp", {{F32({2, 3})}, {}}},
      {"sqrt", {{F32({2, 3})}, {}}},
      {"erf", {{F32({2, 3})}, {}}},
      {"gelu", {{F32({2, 3})}, {{"approximate", S("tanh")}}}},
      {"clip", {{F32({2, 3})}, {{"min", -1.5}, {"max", 6.0}}}},
      {"cast", {{F32({2, 3})}, {{"dtype", S("f16")}}}},
      {"maximum", {{F32({2, 3}), F32({3})}, {}}},
      {"minimum", {{F32({2, 1}), F32({1, 3})}, {}}},
      {"prelu", {{F32({1, 3, 2, 2}), F32({3, 1, 1})}, {}}},
      {"log", {{F32({2, 3})}, {}}},
      {"abs", {{F32({2, 3})}, {}}},
      {"floor", {{F32({2, 3})}, {}}},
      {"ceil", {{F32({2, 3})}, {}}},
      {"round", {{F32({2, 3})}, {}}},
      {"leaky_relu", {{F32({2, 3})}, {{"alpha", 0.125}}}},
      {"elu", {{F32({2, 3})}, {{"alpha", 1.5}}}},
      {"batch_norm",
       {{F32({2, 3, 4, 4}), F32({3}), F32({3}), F32({3}), F32({3})}, {{"epsilon", 1e-3}}}},
      {"layer_norm", {{F32({2, 3, 4}), F32({4}), F32({4})}, {{"epsilon", 1e-6}}}},
      {"softmax", {{F32({2, 5})}, {{"axis", int64_t{0}}}}},
      {"max_pool2d",
       {{F32({1, 2, 7, 7})},
        {{"pool_size", Ints{3, 3}},
         {"strides", Ints{2, 2}},
         {"padding", Ints{1, 1, 1, 1}},
         {"ceil_mode", int64_t{1}}}}},
      {"avg_pool2d",
       {{F32({1, 2, 7, 7})},
        {{"pool_size", Ints{3, 3}},
         {"padding", Ints{1, 1, 1, 1}},
         {"count_include_pad", int64_t{1}}}}},
      {"global_avg_pool2d", {{F32({1, 2, 5, 5})}, {}}},
      {"sum", {{F32({2, 3, 4})}, {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}}},
      {"mean", {{F32({2, 3, 4})}, {{"axes", Ints{-1}}}}},
      {"max", {{F32({2, 3, 4})}, {{"axes", Ints{0, 2}}}}},
      {"min", {{F32({2, 3, 4})}, {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}}},
      {"prod", {{F32({2, 3, 4})}, {{"axes", Ints{-1}}}}},
      {"argmax", {{F32({2, 3, 4})}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}}},
      {"argmin", {{F32({2, 3, 4})}, {{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}}}},
      {"cumsum",
       {{F32({2, 3, 4})},
        {{"axis", int64_t{2}}, {"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}}},
      {"topk",
       {{F32({2, 3, 4})}, {{"k", int64_t{2}}, {"axis", int64_t{1}}, {"largest", int64_t{0}}}}},
      {"reshape", {{F32({2, 3, 4})}, {{"newshape", Ints{0, -1}}}}},
      {"transpose", {{F32({2, 3, 4})}, {{"axes", Ints{2, 0, 1}}}}},
      {"flatten", {{F32({2, 3, 4, 5})}, {{"axis", int64_t{2}}}}},
      {"concat", {{F32({2, 3}), F32({2, 5})}, {{"axis", int64_t{1}}}}},
      {"split", {{F32({6, 4})}, {{"axis", int64_t{0}}, {"sections", Ints{2, 4}}}}},
      {"strided_slice",
       {{F32({8, 6})},
        {{"begin", Ints{1, -4}},
         {"end", Ints{7, 100}},
         {"strides", Ints{2, 1}},
         {"axes", Ints{0, 1}}}}},
      {"squeeze", {{F32({1, 3, 1, 4})}, {{"axes", Ints{0}}}}},
      {"expand_dims", {{F32({3, 4})}, {{"axes", Ints{0, 3}}}}},
      {"pad",
       {{F32({2, 3})},
        {{"pad_width", Ints{1, 0, 2, 1}}, {"pad_value", 0.5}, {"mode", S("constant")}}}},
      {"layout_transform",
       {{F32({1, 16, 4, 4})}, {{"src_layout", S("NCHW")}, {"dst_layout", S("NCHW8c")}}}},
      {"gather", {{F32({10, 4}), TensorType{{2, 3}, DataType::kInt64, ""}}, {}}},
      {"gather_elements",
       {{F32({3, 4}), TensorType{{3, 2}, DataType::kInt32, ""}}, {{"axis", int64_t{1}}}}},
      {"scatter_nd",
       {{F32({4, 3}), TensorType{{2, 1}, DataType::kInt64, ""}, F32({2, 3})},
        {{"reduction", S("add")}}}},
      {"equal", {{F32({2, 3}), F32({3})}, {}}},
      {"less", {{F32({2, 3}), F32({3})}, {}}},
      {"greater", {{F32({2, 3}), F32({3})}, {}}},
      {"less_equal", {{F32({2, 3}), F32({3})}, {}}},
      {"greater_equal", {{F32({2, 3}), F32({3})}, {}}},
      {"logical_and",
       {{TensorType{{2, 3}, DataType::kBool, ""}, TensorType{{3}, DataType::kBool, ""}}, {}}},
      {"logical_or",
       {{TensorType{{2, 3}, DataType::kBool, ""}, TensorType{{3}, DataType::kBool, ""}}, {}}},
      {"logical_xor",
       {{TensorType{{2, 3}, DataType::kBool, ""}, TensorType{{3}, DataType::kBool, ""}}, {}}},
      {"logical_not", {{TensorType{{2, 3}, DataType::kBool, ""}}, {}}},
      {"where", {{TensorType{{2, 1}, DataType::kBool, ""}, F32({2, 3}), F32({3})}, {}}},
      {"winograd_weight_transform", {{F32({4, 3, 3, 3})}, {{"tile", int64_t{4}}}}},
      {"winograd_input_transform",
       {{F32({1, 3, 7, 7})}, {{"tile", int64_t{2}}, {"padding", Ints{1, 0, 2, 1}}}}},
      {"winograd_output_transform",
       {{F32({16, 16, 3})}, {{"tile", int64_t{2}}, {"output_shape", Ints{1, 3, 7, 7}}}}},
  };
  return *samples;
}

TEST(OpSamples, EveryRegisteredOpRoundTrips) {
  std::vector<std::string> names = OpRegistry::Global().Names();
  for (const std::string& op : names) {
    SCOPED_TRACE("op " + op);
    auto it = OpSamples().find(op);
    if (it == OpSamples().end()) {
      ADD_FAILURE() << "op '" << op << "' has no sample call in OpSamples() of "
                    << "tests/ir/text_form_test.cc; add one so its text form is tested";
      continue;
    }
    const OpSample& sample = it->second;
    GraphBuilder b("sample");
    std::vector<ValueId> operands;
    for (size_t i = 0; i < sample.operands.size(); ++i) {
      operands.push_back(b.Input("operand" + std::to_string(i), sample.operands[i]));
    }
    ValueId call;
    try {
      call = b.Call(op, operands, sample.attrs, "result");
    } catch (const Error& e) {
      ADD_FAILURE() << "the sample call is rejected: " << e.what();
      continue;
    }
    IRModule module;
    module.Add(b.Finish(call));
    EXPECT_TRUE(RoundTrips(module));
    EXPECT_NE(PrintModule(module).find("%result = " + op + "("), std::string::npos);
  }
  std::cout << names.size() << " registered ops round-tripped\n";
}

}  // namespace
}  // namespace tandem::ir

namespace tandem::ir::text {
namespace {

// Base64 of constants: every length round-trips (0, 1 or 2 padding digits); a digit outside the
// alphabet, padding anywhere but at the end of the last group, or a length that is not a
// multiple of 4 is refused.
TEST(Base64, RoundTripsEveryLengthAndRefusesMalformedText) {
  std::mt19937 random(3);
  for (size_t length = 0; length < 70; ++length) {
    std::vector<uint8_t> bytes(length);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
    std::optional<std::vector<uint8_t>> decoded = DecodeBase64(EncodeBase64(bytes));
    ASSERT_TRUE(decoded.has_value()) << length;
    EXPECT_EQ(*decoded, bytes) << length;
  }
  EXPECT_EQ(DecodeBase64("QUJD"), std::vector<uint8_t>({'A', 'B', 'C'}));
  EXPECT_EQ(DecodeBase64("QUI="), std::vector<uint8_t>({'A', 'B'}));
  EXPECT_EQ(DecodeBase64("QQ=="), std::vector<uint8_t>({'A'}));
  for (const char* bad : {"QUJ", "QU*D", "Q===", "QU=D", "QQ==QUJD", "====", "QUJD=", "QUJ\n"}) {
    EXPECT_FALSE(DecodeBase64(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tandem::ir::text
