// Tests of the ONNX importer as a whole: real models against their recorded outputs, the
// module's signature and attributes, input shapes, and errors for malformed or unsupported input
// (which must never crash).
#include "frontend/onnx_importer.h"
#include "tests/common/temp_path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <filesystem>
#include <fstream>

#include "backends/reference/interpreter.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Tensor;
using testing::ExpectError;
using testing::IntAttr;
using testing::IntsAttr;
using testing::OnnxModel;
using testing::StringAttr;
namespace fs = std::filesystem;

// Imports <dir>/model.onnx, runs it on test_data_set_0/input_*.pb and compares every output with
// output_*.pb.
void CheckModelAgainstRecordedOutputs(const fs::path& dir, double tolerance) {
  auto start = std::chrono::steady_clock::now();
  ir::IRModule module = ImportOnnxFile((dir / "model.onnx").string());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ info ] imported " << dir.filename() << " in " << seconds * 1000 << " ms\n";
  EXPECT_EQ(module.attrs().GetString("source"), "onnx");
  EXPECT_GE(module.attrs().GetInt("opset"), 13);
  std::vector<Tensor> inputs =
      ReadTensorProtoDirectory((dir / "test_data_set_0").string(), "input");
  std::vector<Tensor> expected =
      ReadTensorProtoDirectory((dir / "test_data_set_0").string(), "output");
  std::vector<Tensor> outputs = backends::RunReference(module, inputs);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    double error = ir::RelativeError(outputs[i], expected[i]);
    std::cout << "[ info ] " << dir.filename() << " output " << i << " relative error " << error
              << "\n";
    EXPECT_LT(error, tolerance);
  }
}

fs::path SharedModel(const std::string& name) {
  return fs::path(TANDEM_MODELS_DIR) / name;
}

#define SKIP_WITHOUT_SHARED_MODEL(name)                                          \
  if (!fs::exists(SharedModel(name) / "model.onnx")) {                           \
    GTEST_SKIP() << "shared model " << SharedModel(name) << " is not available"; \
  }

TEST(OnnxImport, ResNet18MatchesRecordedOutput) {
  SKIP_WITHOUT_SHARED_MODEL("resnet18");
  CheckModelAgainstRecordedOutputs(SharedModel("resnet18"), 1e-4);
}

TEST(OnnxImport, MobileNetV2MatchesRecordedOutput) {
  SKIP_WITHOUT_SHARED_MODEL("mobilenet_v2");
  CheckModelAgainstRecordedOutputs(SharedModel("mobilenet_v2"), 1e-4);
}

TEST(OnnxImport, BertSmallMatchesRecordedOutput) {
  SKIP_WITHOUT_SHARED_MODEL("bert_small");
  CheckModelAgainstRecordedOutputs(SharedModel("bert_small"), 1e-4);
}

TEST(OnnxImport, TinyCnnExampleMatchesItsNumpyOutput) {
  fs::path dir = fs::path(TANDEM_SOURCE_DIR) / "examples/models/tiny_cnn";
  ASSERT_TRUE(fs::exists(dir / "model.onnx")) << dir;
  CheckModelAgainstRecordedOutputs(dir, 1e-4);
}

TEST(OnnxImport, ResNet18SignatureAndGraph) {
  SKIP_WITHOUT_SHARED_MODEL("resnet18");
  ir::IRModule module = ImportOnnxFile((SharedModel("resnet18") / "model.onnx").string());
  const ir::GraphFunction& main = module.Get("main");
  ASSERT_EQ(main.params.size(), 1u);
  EXPECT_EQ(main.node(main.params[0]).name, "input");
  EXPECT_EQ(main.type_of(main.params[0]),
            ir::Type(ir::TensorType{{1, 3, 224, 224}, DataType::kFloat32, ""}));
  EXPECT_EQ(main.OutputTensorTypes(),
            (std::vector<ir::TensorType>{{{1, 1000}, DataType::kFloat32, ""}}));
  EXPECT_EQ(testing::CountOp(module, "conv2d"), 20);
  EXPECT_EQ(testing::CountOp(module, "dense"), 1);
  EXPECT_NE(module.attrs().GetString("producer").find("pytorch"), std::string::npos);
}

TEST(OnnxImport, FunctionNameOption) {
  OnnxModel model;
  model.Input("x", {2}).Node("Relu", {"x"}, {"y"}).Output("y");
  OnnxImportOptions options;
  options.function_name = "net";
  ir::IRModule module = model.Import(options);
  EXPECT_TRUE(module.Has("net"));
  EXPECT_FALSE(module.Has("main"));
}

TEST(OnnxImport, SymbolicDimensionsNeedInputShapes) {
  OnnxModel model;
  model.Input("tokens", {-1, 8}).Node("Relu", {"tokens"}, {"y"}).Output("y");
  ExpectError([&] { model.Import(); },
              {"'tokens'", "symbolic ('dim0')", "dimension 0", "input_shapes"});
  OnnxImportOptions options;
  options.input_shapes["tokens"] = {3, 8};
  ir::IRModule module = model.Import(options);
  EXPECT_EQ(module.Get("main").OutputTensorTypes()[0].shape, (ir::Shape{3, 8}));
  options.input_shapes["tokens"] = {3, 9};
  ExpectError([&] { model.Import(options); }, {"'tokens'", "fixes it to 8"});
  options.input_shapes = {{"tokenz", {3, 8}}};
  ExpectError([&] { model.Import(options); }, {"'tokenz'", "not an input"});
}

TEST(OnnxImport, SymbolSizesMustNameAnInputsSymbolicDimension) {
  OnnxModel model;
  model.Input("tokens", {-1, 8}).Node("Relu", {"tokens"}, {"y"}).Output("y");
  OnnxImportOptions options;
  options.symbols["dim0"] = 5;
  EXPECT_EQ(model.Import(options).Get("main").OutputTensorTypes()[0].shape, (ir::Shape{5, 8}));
  options.symbols["sequence"] = 5;
  ExpectError([&] { model.Import(options); },
              {"symbol 'sequence'", "names no dimension", "symbolic dimensions: dim0)"});
  OnnxModel fixed;
  fixed.Input("x", {2}).Node("Relu", {"x"}, {"y"}).Output("y");
  options.symbols = {{"batch", 1}};
  ExpectError([&] { fixed.Import(options); }, {"symbol 'batch'", "symbolic dimensions: none)"});
}

TEST(OnnxImport, UnsupportedOpIsNamed) {
  OnnxModel model;
  model.Input("boxes", {1, 4, 4}).Input("scores", {1, 1, 4});
  model.Node("NonMaxSuppression", {"boxes", "scores"}, {"sel"}, {}, "nms").Output("sel");
  ExpectError([&] { model.Import(); }, {"unsupported ONNX op 'NonMaxSuppression' (node 'nms')"});

  OnnxModel custom;
  custom.Input("x", {2}).Node("FusedThing", {"x"}, {"y"}).Output("y");
  custom.graph()->mutable_node(0)->set_domain("com.microsoft");
  ExpectError([&] { custom.Import(); }, {"'com.microsoft.FusedThing'", "#0 FusedThing"});
}

// One error lists every unsupported op type of the model, with its domain, its node count and
// first node, in the order they first appear; supported ops between them do not matter.
TEST(OnnxImport, EveryUnsupportedOpTypeIsListedInOneError) {
  OnnxModel model;
  model.Input("x", {1, 4});
  model.Node("Relu", {"x"}, {"a"});
  model.Node("Hardmax", {"a"}, {"b"}, {}, "hardmax_1");
  model.Node("MultiHeadAttention", {"b"}, {"c"}, {}, "attention");
  model.graph()->mutable_node(2)->set_domain("com.microsoft");
  model.Node("Hardmax", {"c"}, {"d"}, {}, "hardmax_2");
  model.Node("Sigmoid", {"d"}, {"e"});
  model.Output("e");
  try {
    model.Import();
    ADD_FAILURE() << "expected an error";
  } catch (const ir::Error& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("unsupported ONNX ops 'Hardmax' (2 nodes, the first 'hardmax_1'), "
                        "'com.microsoft.MultiHeadAttention' (node 'attention')"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("Relu"), std::string::npos) << text;
    EXPECT_EQ(e.where().node, "hardmax_1");
    EXPECT_NE(text.find("test-model"), std::string::npos) << text;
  }
}

// The com.microsoft contrib ops are found by domain; the same op type in another domain is not.
TEST(OnnxImport, ConvertersAreKeyedByDomain) {
  std::vector<std::string> ops = SupportedOnnxOps();
  auto has = [&](const std::string& op) {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  };
  EXPECT_TRUE(has("Conv"));
  EXPECT_TRUE(has("com.microsoft.FastGelu"));
  EXPECT_FALSE(has("FastGelu"));
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  OnnxModel model;
  model.Input("x", {2}).Node("Relu", {"x"}, {"y"}, {}, "relu").Output("y");
  model.graph()->mutable_node(0)->set_domain("org.example");
  ExpectError([&] { model.Import(); }, {"'org.example.Relu' (node 'relu')"});
  model.graph()->mutable_node(0)->set_domain("ai.onnx");
  EXPECT_EQ(testing::CountOp(model.Import(), "relu"), 1);
}

TEST(OnnxImport, UndefinedTensorsAreNamedWithTheirNode) {
  OnnxModel missing_weight;
  missing_weight.Input("x", {1, 1, 3, 3}).Node("Conv", {"x", "w"}, {"y"}, {}, "conv").Output("y");
  ExpectError([&] { missing_weight.Import(); }, {"conv", "Conv", "'w'", "not defined"});

  OnnxModel unnamed;  // an unnamed node is called "#index op_type"
  unnamed.Input("x", {2})
      .Node("Relu", {"x"}, {"a"})
      .Node("Add", {"a", "nowhere"}, {"y"})
      .Output("y");
  ExpectError([&] { unnamed.Import(); }, {"#1 Add", "'nowhere'"});

  OnnxModel no_output;
  no_output.Input("x", {2}).Node("Relu", {"x"}, {"a"}).Output("b");
  ExpectError([&] { no_output.Import(); }, {"graph output 'b'"});

  OnnxModel twice;
  twice.Input("x", {2})
      .Node("Relu", {"x"}, {"a"})
      .Node("Relu", {"x"}, {"a"}, {}, "again")
      .Output("a");
  ExpectError([&] { twice.Import(); }, {"'a'", "defined twice", "again"});
}

TEST(OnnxImport, BadShapesAndAttributesNameTheNode) {
  OnnxModel mismatch;
  mismatch.Input("a", {2, 3}).Input("b", {4});
  mismatch.Node("Add", {"a", "b"}, {"y"}, {}, "bad_add").Output("y");
  ExpectError([&] { mismatch.Import(); }, {"bad_add", "Add", "[2,3]"});

  OnnxModel auto_pad;
  auto_pad.Input("x", {1, 1, 3, 3}).Initializer("w", Tensor({1, 1, 1, 1}, DataType::kFloat32));
  auto_pad.Node("Conv", {"x", "w"}, {"y"}, {StringAttr("auto_pad", "SOMETIMES")}, "c1").Output("y");
  ExpectError([&] { auto_pad.Import(); }, {"c1", "auto_pad", "SOMETIMES"});

  OnnxModel unknown_attr;
  unknown_attr.Input("x", {2}).Node("Relu", {"x"}, {"y"}, {IntAttr("alpha", 3)}, "r").Output("y");
  ExpectError([&] { unknown_attr.Import(); }, {"'r'", "unsupported attribute 'alpha'"});

  OnnxModel wrong_kind;
  wrong_kind.Input("x", {2, 2})
      .Node("Transpose", {"x"}, {"y"}, {IntAttr("perm", 1)}, "t")
      .Output("y");
  ExpectError([&] { wrong_kind.Import(); }, {"'t'", "'perm'", "INTS", "INT"});

  OnnxModel wrap;
  wrap.Input("x", {2}).Initializer("p", Tensor::FromInt64s({2}, {1, 1}));
  wrap.Node("Pad", {"x", "p"}, {"y"}, {StringAttr("mode", "wrap")}, "pad").Output("y");
  ExpectError([&] { wrap.Import(); }, {"'pad'", "mode 'wrap'"});

  OnnxModel dynamic_shape;
  dynamic_shape.Input("x", {2, 3}).Input("s", {2}, DataType::kInt64);
  dynamic_shape.Node("Reshape", {"x", "s"}, {"y"}, {}, "reshape").Output("y");
  ExpectError([&] { dynamic_shape.Import(); }, {"'reshape'", "import time"});

  OnnxModel bad_reshape;
  bad_reshape.Input("x", {2, 3}).Initializer("s", Tensor::FromInt64s({2}, {4, -1}));
  bad_reshape.Node("Reshape", {"x", "s"}, {"y"}, {}, "reshape").Output("y");
  ExpectError([&] { bad_reshape.Import(); }, {"'reshape'", "cannot reshape"});

  OnnxModel missing_input;
  missing_input.Input("x", {2}).Node("Add", {"x"}, {"y"}, {}, "half_add").Output("y");
  ExpectError([&] { missing_input.Import(); }, {"'half_add'", "input 1"});
}

// A model of an opset before 11 imports when its ops mean what they mean in opset 13.
TEST(OnnxImport, OldOpsetsImportOpsUnchangedSince) {
  OnnxModel old(6);
  old.Input("x", {4}).Node("Elu", {"x"}, {"e"}).Node("Relu", {"e"}, {"y"}).Output("y");
  Tensor x = Tensor::FromFloats({4}, {-1, 0, 1, 2});
  EXPECT_EQ(backends::RunReference(old.Import(), {x}).at(0).GetDouble(3), 2.0);
  OnnxModel sum(7);  // Sum broadcasts from opset 8 on
  sum.Input("x", {4}).Node("Sum", {"x", "x"}, {"y"}).Output("y");
  ExpectError([&] { sum.Import(); }, {"opset 7", "which Sum is not"});
  OnnxModel unsupported(7);  // an op without a converter gets that error, whatever the opset
  unsupported.Input("x", {4}).Node("Hardmax", {"x"}, {"y"}, {}, "hardmax").Output("y");
  ExpectError([&] { unsupported.Import(); }, {"unsupported ONNX op 'Hardmax' (node 'hardmax')"});
}

TEST(OnnxImport, ModelLevelErrors) {
  OnnxModel old(9);
  old.Input("x", {2, 3}).Node("Relu", {"x"}, {"r"}).Node("Softmax", {"r"}, {"y"}).Output("y");
  ExpectError([&] { old.Import(); }, {"opset 9", "opset 13", "which Softmax is not"});

  OnnxModel no_outputs;
  no_outputs.Input("x", {2});
  ExpectError([&] { no_outputs.Import(); }, {"no outputs"});

  OnnxModel string_input;
  string_input.Input("x", {2}).Output("x");
  string_input.graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::STRING);
  ExpectError([&] { string_input.Import(); }, {"'x'", "STRING"});

  OnnxModel external;
  external.Input("x", {2}).Initializer("w", Tensor::FromFloats({2}, {1, 2}));
  external.graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::EXTERNAL);
  external.Node("Add", {"x", "w"}, {"y"}).Output("y");
  ExpectError([&] { external.Import(); }, {"'w'", "externally"});

  ExpectError([] { ImportOnnxModel("", "empty.onnx"); }, {"empty.onnx", "empty"});
  ExpectError([] { ImportOnnxModel("\x08\x07\x12", "cut.onnx"); },
              {"not a valid ONNX model file", "cut.onnx"});
}

// Messages nested beyond kMaxOnnxNesting (graphs in attributes of nodes of graphs ...) are an
// error naming the limit, not a parse that recurses as deep as the file says; a model nested
// less deeply parses and fails later, on what the importer does not support.
TEST(OnnxImport, NestingBeyondTheLimitIsNamed) {
  auto nested = [](int levels) {
    OnnxModel model;
    model.Input("x", {2}).Node("Identity", {"x"}, {"y"}).Output("y");
    onnx::GraphProto* graph = model.graph();
    for (int level = 0; level < levels; ++level) {  // node -> attribute -> graph per level
      onnx::NodeProto* node = graph->add_node();
      node->set_op_type("If");
      onnx::AttributeProto* attribute = node->add_attribute();
      attribute->set_name("then_branch");
      attribute->set_type(onnx::AttributeProto::GRAPH);
      graph = attribute->mutable_g();
    }
    return model;
  };
  ExpectError([&] { nested(40).Import(); },
              {fmt::format("deeper than the limit of {} levels", kMaxOnnxNesting)});
  ExpectError([&] { nested(2).Import(); }, {"If"});
}

TEST(OnnxImport, FileErrors) {
  tandem::testing::ScopedTempPath scoped("tandem_onnx_import_test_files");
  const fs::path& dir = scoped.path();
  fs::create_directories(dir);
  ExpectError([&] { ImportOnnxFile(dir.string()); }, {"is a directory"});
  ExpectError([&] { ImportOnnxFile((dir / "absent.onnx").string()); },
              {"absent.onnx", "does not exist"});
  std::ofstream(dir / "empty.onnx").close();
  ExpectError([&] { ImportOnnxFile((dir / "empty.onnx").string()); }, {"empty.onnx", "is empty"});
}

}  // namespace
}  // namespace tandem::frontend
