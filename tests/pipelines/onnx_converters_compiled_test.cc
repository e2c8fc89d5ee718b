// The ONNX ops added by the reduction, normalization, layout, resize, Einsum, index and
// attention converters, compiled: each small model is imported, optimized with default_heuristic,
// built with LLVM and run on random inputs, and its outputs are compared with the reference
// interpreter's on the imported module (float outputs to a relative error of 1e-4, integer ones
// exactly).
#include <gtest/gtest.h>

#include <functional>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "passes/pass.h"
#include "pipelines/pipeline_registry.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem {
namespace {

using frontend::testing::FloatAttr;
using frontend::testing::IntAttr;
using frontend::testing::IntsAttr;
using frontend::testing::OnnxModel;
using frontend::testing::StringAttr;
using ir::Tensor;

struct ModelCase {
  std::string label;
  std::function<OnnxModel()> build;
};

OnnxModel Unary(const std::string& op, const ir::Shape& shape,
                const std::vector<onnx::AttributeProto>& attrs = {}, int opset = 13) {
  OnnxModel model(opset);
  model.Input("x", shape).Node(op, {"x"}, {"y"}, attrs).Output("y");
  return model;
}

OnnxModel WithConstant(const std::string& op, const ir::Shape& shape, const Tensor& constant,
                       const std::vector<onnx::AttributeProto>& attrs = {}) {
  OnnxModel model;
  model.Input("x", shape).Initializer("c", constant).Node(op, {"x", "c"}, {"y"}, attrs).Output("y");
  return model;
}

OnnxModel Resize(const ir::Shape& shape, const std::vector<float>& scales,
                 const std::vector<onnx::AttributeProto>& attrs) {
  OnnxModel model;
  model.Input("x", shape);
  model.Initializer("roi", Tensor::FromFloats({0}, {}));
  model.Initializer("scales", Tensor::FromFloats({static_cast<int64_t>(scales.size())}, scales));
  model.Node("Resize", {"x", "roi", "scales"}, {"y"}, attrs).Output("y");
  return model;
}

OnnxModel Normalization(const std::string& op, const ir::Shape& shape, int64_t parameters,
                        const std::vector<onnx::AttributeProto>& attrs, int opset = 13) {
  OnnxModel model(opset);
  model.Input("x", shape);
  model.Initializer("scale",
                    Tensor::Random(ir::TensorType{{parameters}, ir::DataType::kFloat32, ""}, 4));
  model.Initializer("bias",
                    Tensor::Random(ir::TensorType{{parameters}, ir::DataType::kFloat32, ""}, 5));
  model.Node(op, {"x", "scale", "bias"}, {"y"}, attrs).Output("y");
  return model;
}

OnnxModel Einsum(const std::string& equation, const std::vector<ir::Shape>& shapes) {
  OnnxModel model;
  std::vector<std::string> names;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    model.Input(names.back(), shapes[i]);
  }
  model.Node("Einsum", names, {"y"}, {StringAttr("equation", equation)}).Output("y");
  return model;
}

OnnxModel SkipLayerNormalization(const std::string& op) {
  OnnxModel model;
  auto* entry = model.proto().add_opset_import();
  entry->set_domain("com.microsoft");
  entry->set_version(1);
  model.Input("x", {2, 5, 16}).Input("skip", {2, 5, 16});
  std::vector<std::string> inputs = {"x", "skip", "gamma"};
  model.Initializer("gamma", Tensor::Random(ir::TensorType{{16}, ir::DataType::kFloat32, ""}, 6));
  if (op == "SkipLayerNormalization") {
    model.Initializer("beta", Tensor::Random(ir::TensorType{{16}, ir::DataType::kFloat32, ""}, 7));
    inputs.push_back("beta");
  }
  model.Initializer("bias", Tensor::Random(ir::TensorType{{16}, ir::DataType::kFloat32, ""}, 8));
  inputs.push_back("bias");
  model.Node(op, inputs, {"y", "", "", "sum"}).Output("y").Output("sum");
  model.graph()->mutable_node(0)->set_domain("com.microsoft");
  return model;
}

// ScatterND of updates [rows..., data.shape[k:]...] into `data_shape` at the known `indices`.
OnnxModel ScatterND(const ir::Shape& data_shape, const Tensor& indices,
                    const ir::Shape& update_shape, const std::string& reduction, int opset = 16) {
  OnnxModel model(opset);
  model.Input("data", data_shape).Input("updates", update_shape).Initializer("indices", indices);
  model.Node("ScatterND", {"data", "indices", "updates"}, {"y"},
             {StringAttr("reduction", reduction)});
  model.Output("y");
  return model;
}

// com.microsoft Attention over [2, 5, 16] with 4 heads; `mask` adds an int32 mask_index [2, 5].
OnnxModel Attention(bool mask, int64_t unidirectional) {
  OnnxModel model;
  auto* entry = model.proto().add_opset_import();
  entry->set_domain("com.microsoft");
  entry->set_version(1);
  model.Input("x", {2, 5, 16});
  model.Initializer("w", Tensor::Random(ir::TensorType{{16, 48}, ir::DataType::kFloat32, ""}, 9));
  model.Initializer("b", Tensor::Random(ir::TensorType{{48}, ir::DataType::kFloat32, ""}, 10));
  std::vector<std::string> inputs = {"x", "w", "b"};
  if (mask) {
    model.Input("mask", {2, 5}, ir::DataType::kInt32);
    inputs.push_back("mask");
  }
  model.Node("Attention", inputs, {"y"},
             {IntAttr("num_heads", 4), IntAttr("unidirectional", unidirectional)});
  model.graph()->mutable_node(0)->set_domain("com.microsoft");
  model.Output("y");
  return model;
}

std::vector<ModelCase> Cases() {
  std::vector<ModelCase> cases;
  for (const char* op :
       {"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"}) {
    cases.push_back({op, [op] { return Unary(op, {3, 4, 5}, {IntsAttr("axes", {1})}); }});
  }
  cases.push_back({"ReduceMin_all_axes", [] { return Unary("ReduceMin", {3, 70}); }});
  cases.push_back(
      {"ReduceProd_last_no_keepdims", [] {
         return Unary("ReduceProd", {4, 6}, {IntsAttr("axes", {-1}), IntAttr("keepdims", 0)});
       }});
  cases.push_back({"ArgMax", [] { return Unary("ArgMax", {3, 4, 5}, {IntAttr("axis", 1)}); }});
  cases.push_back({"ArgMin_last", [] {
                     return Unary("ArgMin", {6, 9},
                                  {IntAttr("axis", -1), IntAttr("keepdims", 0),
                                   IntAttr("select_last_index", 1)});
                   }});
  cases.push_back({"CumSum", [] {
                     return WithConstant("CumSum", {3, 8}, Tensor::FromInt64s({}, {1}));
                   }});
  cases.push_back({"CumSum_exclusive_reverse", [] {
                     return WithConstant("CumSum", {4, 3, 2}, Tensor::FromInt64s({}, {0}),
                                         {IntAttr("exclusive", 1), IntAttr("reverse", 1)});
                   }});
  for (int64_t largest : {1, 0}) {
    cases.push_back({largest ? "TopK" : "TopK_smallest_axis1", [largest] {
                       OnnxModel model;
                       model.Input("x", {3, 9, 4}).Initializer("k", Tensor::FromInt64s({1}, {4}));
                       model.Node("TopK", {"x", "k"}, {"values", "indices"},
                                  {IntAttr("axis", largest ? -1 : 1), IntAttr("largest", largest)});
                       model.Output("values").Output("indices");
                       return model;
                     }});
  }
  cases.push_back(
      {"ScatterND_rows", [] {
         return ScatterND({5, 3, 2}, Tensor::FromInt64s({2, 1}, {4, -5}), {2, 3, 2}, "none");
       }});
  cases.push_back(
      {"ScatterND_add_repeated", [] {
         return ScatterND({4, 3}, Tensor::FromInt64s({3, 2}, {1, 2, 3, 0, 1, 2}), {3}, "add");
       }});
  cases.push_back(
      {"ScatterND_max", [] {
         return ScatterND({4, 3}, Tensor::FromInt64s({2, 1}, {0, 0}), {2, 3}, "max", 18);
       }});
  cases.push_back({"Attention_mask", [] { return Attention(true, 0); }});
  cases.push_back({"Attention_causal", [] { return Attention(false, 1); }});
  cases.push_back({"InstanceNormalization", [] {
                     return Normalization("InstanceNormalization", {2, 3, 4, 5}, 3, {});
                   }});
  cases.push_back({"GroupNormalization", [] {
                     return Normalization("GroupNormalization", {2, 6, 3, 3}, 2,
                                          {IntAttr("num_groups", 2)}, 18);
                   }});
  cases.push_back({"LRN", [] {
                     return Unary(
                         "LRN", {1, 7, 3, 3},
                         {IntAttr("size", 3), FloatAttr("alpha", 0.1f), FloatAttr("beta", 0.75f)});
                   }});
  cases.push_back(
      {"SkipLayerNormalization", [] { return SkipLayerNormalization("SkipLayerNormalization"); }});
  cases.push_back({"SkipSimplifiedLayerNormalization",
                   [] { return SkipLayerNormalization("SkipSimplifiedLayerNormalization"); }});
  cases.push_back({"DepthToSpace_DCR", [] {
                     return Unary("DepthToSpace", {1, 8, 3, 2}, {IntAttr("blocksize", 2)});
                   }});
  cases.push_back({"DepthToSpace_CRD", [] {
                     return Unary("DepthToSpace", {2, 8, 2, 3},
                                  {IntAttr("blocksize", 2), StringAttr("mode", "CRD")});
                   }});
  cases.push_back({"SpaceToDepth", [] {
                     return Unary("SpaceToDepth", {1, 3, 4, 6}, {IntAttr("blocksize", 2)});
                   }});
  cases.push_back({"Tile", [] {
                     return WithConstant("Tile", {2, 3, 4}, Tensor::FromInt64s({3}, {2, 1, 3}));
                   }});
  cases.push_back({"Resize_nearest_2x", [] { return Resize({1, 2, 3, 4}, {1, 1, 2, 2}, {}); }});
  cases.push_back({"Resize_nearest_1.5x_asymmetric", [] {
                     return Resize({1, 2, 4, 6}, {1, 1, 1.5f, 1.5f},
                                   {StringAttr("coordinate_transformation_mode", "asymmetric")});
                   }});
  cases.push_back({"Resize_linear_2x", [] {
                     return Resize({1, 2, 5, 6}, {1, 1, 2, 2}, {StringAttr("mode", "linear")});
                   }});
  cases.push_back({"Resize_linear_down_align_corners", [] {
                     return Resize({1, 1, 8, 9}, {1, 1, 0.5f, 0.6f},
                                   {StringAttr("mode", "linear"),
                                    StringAttr("coordinate_transformation_mode", "align_corners")});
                   }});
  cases.push_back({"Resize_cubic", [] {
                     return Resize({1, 1, 4, 5}, {1, 1, 2, 1.6f}, {StringAttr("mode", "cubic")});
                   }});
  cases.push_back({"Upsample", [] {
                     OnnxModel model(9);
                     model.Input("x", {1, 2, 3, 3});
                     model.Initializer("scales", Tensor::FromFloats({4}, {1, 1, 2, 2}));
                     model.Node("Upsample", {"x", "scales"}, {"y"}).Output("y");
                     return model;
                   }});
  cases.push_back({"Einsum_attention_scores", [] {
                     return Einsum("bhid,bhjd->bhij", {{1, 2, 5, 8}, {1, 2, 6, 8}});
                   }});
  cases.push_back({"Einsum_attention_values", [] {
                     return Einsum("bhij,bhjd->bhid", {{1, 2, 5, 6}, {1, 2, 6, 8}});
                   }});
  cases.push_back({"Einsum_chain", [] {
                     return Einsum("ij,jk,kl->li", {{3, 4}, {4, 5}, {5, 6}});
                   }});
  return cases;
}

class CompiledOnnxConverter : public ::testing::TestWithParam<ModelCase> {};

TEST_P(CompiledOnnxConverter, MatchesTheReferenceInterpreter) {
  ir::IRModule module = GetParam().build().Import();
  passes::PassContext context;
  context.verify_each = true;
  ir::IRModule optimized = context.RunPipeline(
      *pipelines::PipelineRegistry::Global().Create("default_heuristic"), module);
  std::unique_ptr<backends::Executable> executable = backends::Build(optimized);
  for (uint64_t seed : {1, 2}) {
    std::vector<Tensor> inputs = backends::RandomInputs(module.Get("main"), seed);
    std::vector<Tensor> expected = backends::RunReference(module, inputs);
    std::vector<Tensor> actual = executable->Run(inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      ASSERT_EQ(actual[i].type().shape, expected[i].shape()) << "output " << i;
      ASSERT_EQ(actual[i].dtype(), expected[i].dtype()) << "output " << i;
      if (ir::IsFloat(expected[i].dtype())) {
        EXPECT_LT(ir::RelativeError(actual[i], expected[i]), 1e-4) << "output " << i;
      } else {
        EXPECT_EQ(ir::MaxAbsoluteError(actual[i], expected[i]), 0) << "output " << i;
      }
    }
  }
}

// A compiled ScatterND reports a run-time index outside [-extent, extent) like a gather does,
// naming the value and the kernel, instead of writing out of bounds.
TEST(CompiledOnnxConverter, ScatterNDIndexOutOfRangeAtRunTime) {
  OnnxModel model(16);
  model.Input("data", {4, 2}).Input("indices", {2, 1}, ir::DataType::kInt64);
  model.Input("updates", {2, 2});
  model.Node("ScatterND", {"data", "indices", "updates"}, {"y"}).Output("y");
  ir::IRModule module = model.Import();
  passes::PassContext context;
  ir::IRModule optimized = context.RunPipeline(
      *pipelines::PipelineRegistry::Global().Create("default_heuristic"), module);
  std::unique_ptr<backends::Executable> executable = backends::Build(optimized);
  Tensor data({4, 2}, ir::DataType::kFloat32), updates({2, 2}, ir::DataType::kFloat32);
  std::vector<Tensor> ok = executable->Run({data, Tensor::FromInt64s({2, 1}, {-1, 2}), updates});
  EXPECT_EQ(ok.at(0).shape(), (ir::Shape{4, 2}));
  try {
    executable->Run({data, Tensor::FromInt64s({2, 1}, {1, 4}), updates});
    ADD_FAILURE() << "expected an error for index 4";
  } catch (const ir::Error& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("index 4 is out of range [-4, 4)"), std::string::npos) << text;
    EXPECT_NE(text.find("scatter_nd"), std::string::npos) << text;
  }
}

INSTANTIATE_TEST_SUITE_P(NewOnnxOps, CompiledOnnxConverter, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           std::string name;
                           for (char c : info.param.label)
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace tandem
