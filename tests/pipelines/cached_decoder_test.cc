// One decoding step of a GPT-style decoder with a key/value cache, as model hubs export one for
// generation: inputs input_ids and position_ids [batch, sequence], attention_mask
// [batch, "past_sequence_length + sequence_length"] and the cache past_key_values.0.key/value
// [batch, heads, past_sequence_length, head size]; outputs the logits and the cache with the step
// appended (Concat along the cache's length). With batch and sequence bound to 1 and
// past_sequence_length dynamic, one build serves every cache length: the step's key and value
// land at the run-time end of the cache (kernels/dynamic_padding.h), and the mask's length is
// read from its dimension's arithmetic (frontend/onnx_dim_expression.h).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "backends/runtime/dynamic_executable.h"
#include "examples/models/onnx_graph_writer.h"
#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "tests/pipelines/dynamic_graphs.h"

namespace tandem {
namespace {

using examples::Generator;
using examples::GraphWriter;
using examples::IntAttr;
using examples::IntsAttr;
using examples::RandomFloats;

constexpr int64_t kVocabulary = 50, kHidden = 32, kHeads = 2, kHeadSize = 16, kPositions = 64;

void AddFloatOutput(onnx::GraphProto* graph, const std::string& name) {
  auto* output = graph->add_output();
  output->set_name(name);
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

// A one-layer pre-norm decoder step (hidden 32, 2 heads, vocabulary 50, 64 positions).
std::string CachedDecoderModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("cached_decoder");
  examples::AddInput(graph, "input_ids", onnx::TensorProto::INT64, {"batch", "sequence_length"});
  examples::AddInput(graph, "position_ids", onnx::TensorProto::INT64, {"batch", "sequence_length"});
  examples::AddInput(graph, "attention_mask", onnx::TensorProto::INT64,
                     {"batch", "past_sequence_length + sequence_length"});
  std::vector<std::string> cache = {"batch", "", "past_sequence_length", ""};
  examples::AddInput(graph, "past_key_values.0.key", onnx::TensorProto::FLOAT, cache);
  examples::AddInput(graph, "past_key_values.0.value", onnx::TensorProto::FLOAT, cache);
  for (int input : {3, 4}) {
    auto* dims =
        graph->mutable_input(input)->mutable_type()->mutable_tensor_type()->mutable_shape();
    dims->mutable_dim(1)->set_dim_value(kHeads);
    dims->mutable_dim(3)->set_dim_value(kHeadSize);
  }
  GraphWriter g(graph);
  Generator generator(20261203);
  auto weight = [&](const std::string& name, ir::Shape shape, double range, double offset = 0) {
    return g.Initializer(name, RandomFloats(shape, generator, range, offset));
  };
  std::string wte = weight("wte", {kVocabulary, kHidden}, 1.0);
  std::string wpe = weight("wpe", {kPositions, kHidden}, 0.5);
  std::string x = g.Node("Add", "/embed/Add",
                         {g.Node("Gather", "/wte/Gather", {wte, "input_ids"}),
                          g.Node("Gather", "/wpe/Gather", {wpe, "position_ids"})});
  std::string normed =
      examples::LayerNormNode(g, "/ln_1", x, weight("ln_1.weight", {kHidden}, 0.1, 1),
                              weight("ln_1.bias", {kHidden}, 0.1), 1e-5);
  std::string qkv = examples::LinearNode(g, "/attn/c_attn", normed,
                                         weight("c_attn.weight", {kHidden, 3 * kHidden}, 0.3),
                                         weight("c_attn.bias", {3 * kHidden}, 0.1));
  std::vector<std::string> parts =
      g.MultiNode("Split", "/attn/Split", {qkv, g.Ints("split", {kHidden, kHidden, kHidden})}, 3,
                  {IntAttr("axis", 2)});
  std::string heads_shape = g.Ints("heads_shape", {0, 0, kHeads, kHeadSize});
  auto heads = [&](const std::string& name, const std::string& part) {
    return g.Node("Transpose", "/attn/" + name + "/Transpose",
                  {g.Node("Reshape", "/attn/" + name + "/Reshape", {part, heads_shape})},
                  {IntsAttr("perm", {0, 2, 1, 3})});
  };
  // 1. The cache with the step appended along its length: the present keys and values.
  std::string step_keys = heads("key", parts[1]);
  std::string step_values = heads("value", parts[2]);
  onnx::NodeProto* keys = graph->add_node();
  keys->set_op_type("Concat");
  keys->set_name("/attn/Concat");
  keys->add_input("past_key_values.0.key");
  keys->add_input(step_keys);
  keys->add_output("present.0.key");
  *keys->add_attribute() = IntAttr("axis", 2);
  onnx::NodeProto* values = graph->add_node();
  *values = *keys;
  values->set_name("/attn/Concat_1");
  values->set_input(0, "past_key_values.0.value");
  values->set_input(1, step_values);
  values->set_output(0, "present.0.value");
  // 2. Attention of the step's query over every key, under the additive padding mask.
  std::string scores = g.Node(
      "MatMul", "/attn/MatMul",
      {heads("query", parts[0]), g.Node("Transpose", "/attn/key/Transpose_1", {"present.0.key"},
                                        {IntsAttr("perm", {0, 1, 3, 2})})});
  std::string scaled = g.Node("Div", "/attn/Div", {scores, g.Scalar("scale", 4.0)});
  std::string mask = g.Node(
      "Cast", "/mask/Cast",
      {g.Node("Unsqueeze", "/mask/Unsqueeze", {"attention_mask", g.Ints("mask_axes", {1, 2})})},
      {IntAttr("to", onnx::TensorProto::FLOAT)});
  std::string padding = g.Node("Mul", "/mask/Mul",
                               {g.Node("Sub", "/mask/Sub", {g.Scalar("one", 1.0), mask}),
                                g.Scalar("lowest", std::numeric_limits<float>::lowest())});
  std::string probabilities =
      g.Node("Softmax", "/attn/Softmax", {g.Node("Add", "/attn/Add", {scaled, padding})},
             {IntAttr("axis", -1)});
  std::string context = g.Node("MatMul", "/attn/MatMul_1", {probabilities, "present.0.value"});
  std::string merged =
      g.Node("Reshape", "/attn/Reshape",
             {g.Node("Transpose", "/attn/Transpose", {context}, {IntsAttr("perm", {0, 2, 1, 3})}),
              g.Ints("merged_shape", {0, 0, kHidden})});
  std::string attended =
      g.Node("Add", "/Add",
             {x, examples::LinearNode(g, "/attn/c_proj", merged,
                                      weight("c_proj.weight", {kHidden, kHidden}, 0.3),
                                      weight("c_proj.bias", {kHidden}, 0.1))});
  // 3. The logits: the final norm times the transposed token embedding.
  std::string final_norm =
      examples::LayerNormNode(g, "/ln_f", attended, weight("ln_f.weight", {kHidden}, 0.1, 1),
                              weight("ln_f.bias", {kHidden}, 0.1), 1e-5);
  std::string head = g.Node("Transpose", "/lm_head/Transpose", {wte}, {IntsAttr("perm", {1, 0})});
  onnx::NodeProto* logits = graph->add_node();
  logits->set_op_type("MatMul");
  logits->set_name("/lm_head/MatMul");
  logits->add_input(final_norm);
  logits->add_input(head);
  logits->add_output("logits");
  for (const char* name : {"logits", "present.0.key", "present.0.value"}) {
    AddFloatOutput(graph, name);
  }
  return model.SerializeAsString();
}

// The import after `past` cached positions for a step of `step` tokens.
frontend::OnnxImportOptions AtCacheLength(int64_t past, int64_t step = 1) {
  frontend::OnnxImportOptions options;
  options.symbols = {{"batch", 1}, {"sequence_length", step}, {"past_sequence_length", past}};
  return options;
}

// The inputs of a step of `step` tokens after `past` cached positions: the tokens, their
// positions, a mask whose first position is padding (a left-padded prompt) and random caches.
std::vector<ir::Tensor> StepInputs(int64_t past, int64_t step) {
  ir::Tensor ids({1, step}, ir::DataType::kInt64), positions({1, step}, ir::DataType::kInt64);
  for (int64_t k = 0; k < step; ++k) {
    ids.SetDouble(k, static_cast<double>((past * 7 + k * 3) % kVocabulary));
    positions.SetDouble(k, static_cast<double>(past + k));
  }
  ir::Tensor mask({1, past + step}, ir::DataType::kInt64);
  for (int64_t k = 0; k < past + step; ++k) mask.SetDouble(k, k == 0 && past > 1 ? 0 : 1);
  ir::TensorType cache{{1, kHeads, past, kHeadSize}, ir::DataType::kFloat32, ""};
  return {ids, positions, mask, ir::Tensor::Random(cache, static_cast<uint64_t>(past)),
          ir::Tensor::Random(cache, static_cast<uint64_t>(past) + 1000)};
}

// Steps of one token (generation) and of two (a draft checked at once, whose keys' positions in
// the new cache follow the cache's length).
TEST(CachedDecoder, OneBuildServesEveryCacheLength) {
  std::string bytes = CachedDecoderModel();
  for (int64_t step : {1, 2}) {
    SCOPED_TRACE("sequence_length = " + std::to_string(step));
    backends::DynamicModuleSource source;
    source.ranges = {{.symbol = "past_sequence_length", .minimum = 1, .bound = 48}};
    source.make = [&bytes, step](const std::vector<int64_t>& past) {
      passes::PassContext context;
      return context.RunPipeline(
          *passes::ParsePipeline(testing::HeuristicGraphPasses()),
          frontend::ImportOnnxModel(bytes, "cached_decoder", AtCacheLength(past.front(), step)));
    };
    std::unique_ptr<backends::DynamicExecutable> dynamic = backends::BuildDynamic(source);
    for (int64_t past : {48, 1, 2, 17, 47}) {
      SCOPED_TRACE("past_sequence_length = " + std::to_string(past));
      std::vector<ir::Tensor> inputs = StepInputs(past, step);
      std::vector<ir::Tensor> expected = backends::RunReference(
          frontend::ImportOnnxModel(bytes, "cached_decoder", AtCacheLength(past, step)), inputs);
      std::vector<ir::Tensor> outputs = dynamic->Run(inputs);
      ASSERT_EQ(outputs.size(), 3u);
      EXPECT_EQ(outputs[1].shape(), (ir::Shape{1, kHeads, past + step, kHeadSize}));
      for (size_t k = 0; k < outputs.size(); ++k) {
        EXPECT_EQ(outputs[k].shape(), expected[k].shape()) << "output " << k;
        EXPECT_LT(ir::RelativeError(outputs[k], expected[k]), 1e-4) << "output " << k;
      }
    }
  }
}

TEST(CachedDecoder, DimensionsNamedByArithmeticNeedTheirSymbols) {
  std::string bytes = CachedDecoderModel();
  frontend::OnnxImportOptions options;
  options.symbols = {{"batch", 1}, {"sequence_length", 1}};
  try {
    frontend::ImportOnnxModel(bytes, "cached_decoder", options);
    ADD_FAILURE() << "imported without past_sequence_length";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'attention_mask' has a symbolic ('past_sequence_length "
                                         "+ sequence_length') extent in dimension 1"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--symbol past_sequence_length=..."), std::string::npos)
        << e.what();
  }
  // Bound, the mask's length is past_sequence_length + sequence_length.
  ir::IRModule module = frontend::ImportOnnxModel(bytes, "cached_decoder", AtCacheLength(5));
  const ir::GraphFunction& main = module.Get("main");
  EXPECT_EQ(main.type_of(main.params.at(2)).tensor().shape, (ir::Shape{1, 6}));
}

}  // namespace
}  // namespace tandem
