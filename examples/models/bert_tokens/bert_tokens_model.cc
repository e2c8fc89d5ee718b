#include "examples/models/bert_tokens/bert_tokens_model.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>

#include "examples/models/onnx_graph_writer.h"
#include "ir/error.h"

namespace tandem::examples {
namespace {

using ir::DataType;
using ir::Tensor;

constexpr double kEpsilon = 1e-12;
constexpr double kMaskValue = -10000.0;

// One encoder layer: self-attention with the additive mask, then the feed-forward block.
std::string EncoderLayer(GraphWriter& g, Generator& generator, const BertTokensConfig& c,
                         int64_t layer, const std::string& x, const std::string& mask) {
  std::string p = fmt::format("/encoder/layer.{}", layer);
  int64_t h = c.hidden, f = c.feed_forward, d = c.hidden / c.heads;
  double scale = 1.0 / std::sqrt(static_cast<double>(h));
  // Every parameter is drawn here, in a fixed order (argument evaluation order is unspecified).
  std::map<std::string, std::string> params;
  auto draw = [&](const std::string& name, ir::Shape shape, double range, double offset) {
    params[name] = g.Initializer(fmt::format("encoder.layer.{}.{}", layer, name),
                                 RandomFloats(shape, generator, range, offset));
  };
  for (const char* name : {"query", "key", "value", "output"}) {
    draw(std::string(name) + ".weight", {h, h}, scale * 1.7, 0);
    draw(std::string(name) + ".bias", {h}, 0.1, 0);
  }
  draw("ln1.gamma", {h}, 0.1, 1.0);
  draw("ln1.beta", {h}, 0.1, 0);
  draw("intermediate.weight", {h, f}, scale * 1.7, 0);
  draw("intermediate.bias", {f}, 0.1, 0);
  draw("output2.weight", {f, h}, 1.7 / std::sqrt(static_cast<double>(f)), 0);
  draw("output2.bias", {h}, 0.1, 0);
  draw("ln2.gamma", {h}, 0.1, 1.0);
  draw("ln2.beta", {h}, 0.1, 0);
  auto weight = [&](const std::string& name, const ir::Shape&) { return params.at(name); };
  auto bias = [&](const std::string& name, int64_t, double = 0) { return params.at(name); };
  std::string heads_shape = g.Ints(p + ".heads_shape", {0, 0, c.heads, d});
  std::string merged_shape = g.Ints(p + ".merged_shape", {0, 0, h});
  auto project = [&](const std::string& name, const std::vector<int64_t>& perm) {
    std::string y = LinearNode(g, p + "/attention/" + name, x, weight(name + ".weight", {h, h}),
                               bias(name + ".bias", h));
    std::string split = g.Node("Reshape", p + "/attention/" + name + "/Reshape", {y, heads_shape});
    return g.Node("Transpose", p + "/attention/" + name + "/Transpose", {split},
                  {IntsAttr("perm", perm)});
  };
  std::string q = project("query", {0, 2, 1, 3});
  std::string k = project("key", {0, 2, 3, 1});
  std::string v = project("value", {0, 2, 1, 3});
  std::string scores = g.Node("MatMul", p + "/attention/scores/MatMul", {q, k});
  std::string root = g.Scalar(p + ".sqrt_head_size", std::sqrt(static_cast<double>(d)));
  std::string scaled = g.Node("Div", p + "/attention/Div", {scores, root});
  std::string masked = g.Node("Add", p + "/attention/mask/Add", {scaled, mask});
  std::string probs = g.Node("Softmax", p + "/attention/Softmax", {masked}, {IntAttr("axis", -1)});
  std::string context = g.Node("MatMul", p + "/attention/context/MatMul", {probs, v});
  std::string back = g.Node("Transpose", p + "/attention/context/Transpose", {context},
                            {IntsAttr("perm", {0, 2, 1, 3})});
  std::string merged = g.Node("Reshape", p + "/attention/context/Reshape", {back, merged_shape});
  std::string out = LinearNode(g, p + "/attention/output", merged, weight("output.weight", {h, h}),
                               bias("output.bias", h));
  std::string residual = g.Node("Add", p + "/attention/residual/Add", {out, x});
  std::string x1 = LayerNormNode(g, p + "/attention/output", residual, bias("ln1.gamma", h, 1.0),
                                 bias("ln1.beta", h), kEpsilon);
  std::string hidden = LinearNode(g, p + "/intermediate", x1, weight("intermediate.weight", {h, f}),
                                  bias("intermediate.bias", f));
  // GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt(2))).
  std::string root2 = g.Scalar(p + ".sqrt2", std::sqrt(2.0));
  std::string one = g.Scalar(p + ".one", 1.0), half = g.Scalar(p + ".half", 0.5);
  std::string erf =
      g.Node("Erf", p + "/gelu/Erf", {g.Node("Div", p + "/gelu/Div", {hidden, root2})});
  std::string gate = g.Node("Add", p + "/gelu/Add", {erf, one});
  std::string gelu =
      g.Node("Mul", p + "/gelu/Mul_1", {g.Node("Mul", p + "/gelu/Mul", {hidden, half}), gate});
  std::string down =
      LinearNode(g, p + "/output", gelu, weight("output2.weight", {f, h}), bias("output2.bias", h));
  std::string residual2 = g.Node("Add", p + "/output/residual/Add", {down, x1});
  return LayerNormNode(g, p + "/output", residual2, bias("ln2.gamma", h, 1.0), bias("ln2.beta", h),
                       kEpsilon);
}

}  // namespace

onnx::ModelProto BuildBertTokensModel(const BertTokensConfig& c) {
  onnx::ModelProto model;
  GraphWriter g(StartTokenModel(model, "bert_tokens"));
  Generator generator(20261129);

  // 1. Embeddings: word (run-time ids) + position (Range over the sequence length).
  auto [words, positions, gamma, beta] = DrawTokenEmbeddings(
      g, generator,
      {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
       "embeddings.ln.gamma", "embeddings.ln.beta"},
      c.vocabulary, c.max_positions, c.hidden);
  std::string sum = EmbedTokenNodes(g, "embeddings", words, "word_embeddings", positions,
                                    "position_embeddings", "Gather_length")
                        .sum;
  std::string x = LayerNormNode(g, "/embeddings", sum, gamma, beta, kEpsilon);

  // 2. Additive masks [B,1,1,S]: (1 - mask) * -10000 and Where(mask == 0, -10000, 0).
  std::string mask =
      g.Node("Unsqueeze", "/mask/Unsqueeze", {"attention_mask", g.Ints("mask.axes", {1, 2})});
  std::string as_float =
      g.Node("Cast", "/mask/Cast", {mask}, {IntAttr("to", onnx::TensorProto::FLOAT)});
  std::string inverted = g.Node("Sub", "/mask/Sub", {g.Scalar("mask.one", 1.0), as_float});
  std::string additive = g.Node("Mul", "/mask/Mul", {inverted, g.Scalar("mask.value", kMaskValue)});
  std::string padding =
      g.Node("Equal", "/mask/Equal", {mask, g.Scalar("mask.zero_id", 0, DataType::kInt64)});
  std::string selected =
      g.Node("Where", "/mask/Where",
             {padding, g.Scalar("mask.value2", kMaskValue), g.Scalar("mask.zero", 0.0)});

  // 3. The encoder layers, alternating the two masks.
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    x = EncoderLayer(g, generator, c, layer, x, layer % 2 == 0 ? additive : selected);
  }
  onnx::NodeProto* last = model.mutable_graph()->add_node();
  last->set_op_type("Identity");
  last->set_name("/output/Identity");
  last->add_input(x);
  last->add_output("last_hidden_state");
  model.mutable_graph()->add_output()->set_name("last_hidden_state");
  return model;
}

std::vector<Tensor> BertTokensInputs(int64_t sequence, uint64_t seed, const BertTokensConfig& c) {
  return TokenInputs(sequence, seed, c.vocabulary);
}

}  // namespace tandem::examples
