#include "examples/models/gpt_tokens/gpt_tokens_model.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <string>

#include "examples/models/onnx_graph_writer.h"

namespace tandem::examples {
namespace {

using ir::DataType;
using ir::Tensor;

constexpr double kEpsilon = 1e-5;
// torch.finfo(torch.float32).min: what GPT-2 writes where the causal mask forbids a key and
// multiplies (1 - attention_mask) by.
constexpr double kMaskValue = std::numeric_limits<float>::lowest();

// GPT-2's "gelu_new" as exporters write it: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 *
// x^3))).
std::string GeluNew(GraphWriter& g, const std::string& p, const std::string& x) {
  std::string half = g.Node("Mul", p + "/Mul", {x, g.Scalar(p + ".half", 0.5)});
  std::string cube = g.Node("Pow", p + "/Pow", {x, g.Scalar(p + ".three", 3.0)});
  std::string scaled_cube = g.Node("Mul", p + "/Mul_1", {cube, g.Scalar(p + ".cubic", 0.044715)});
  std::string inner = g.Node("Add", p + "/Add", {x, scaled_cube});
  std::string root = g.Scalar(p + ".sqrt_2_over_pi", std::sqrt(2.0 / std::numbers::pi));
  std::string tanh = g.Node("Tanh", p + "/Tanh", {g.Node("Mul", p + "/Mul_2", {root, inner})});
  std::string gate = g.Node("Add", p + "/Add_1", {g.Scalar(p + ".one", 1.0), tanh});
  return g.Node("Mul", p + "/Mul_3", {half, gate});
}

// The lower-triangular causal buffer GPT-2 registers per attention layer ("attn.bias").
Tensor CausalBuffer(int64_t positions) {
  Tensor t({1, 1, positions, positions}, DataType::kBool);
  for (int64_t i = 0; i < positions; ++i) {
    for (int64_t j = 0; j < positions; ++j) t.SetDouble(i * positions + j, j <= i ? 1 : 0);
  }
  return t;
}

// One pre-norm decoder block on x [B,S,H]; `length` is the sequence length as a one-element
// tensor (the causal buffer's slice end) and `padding` the additive mask [B,1,1,S].
std::string Block(GraphWriter& g, Generator& generator, const GptTokensConfig& c, int64_t layer,
                  const std::string& x, const std::string& length, const std::string& padding) {
  std::string p = fmt::format("/transformer/h.{}", layer);
  std::string n = fmt::format("transformer.h.{}", layer);
  int64_t h = c.hidden, f = c.inner, d = c.hidden / c.heads;
  double scale = 1.0 / std::sqrt(static_cast<double>(h));
  // Every parameter is drawn here, in a fixed order (argument evaluation order is unspecified).
  std::map<std::string, std::string> params;
  auto draw = [&](const std::string& name, ir::Shape shape, double range, double offset) {
    params[name] = g.Initializer(n + "." + name, RandomFloats(shape, generator, range, offset));
  };
  draw("ln_1.weight", {h}, 0.1, 1.0);
  draw("ln_1.bias", {h}, 0.1, 0);
  draw("attn.c_attn.weight", {h, 3 * h}, scale * 1.7, 0);
  draw("attn.c_attn.bias", {3 * h}, 0.1, 0);
  draw("attn.c_proj.weight", {h, h}, scale * 1.7, 0);
  draw("attn.c_proj.bias", {h}, 0.1, 0);
  draw("ln_2.weight", {h}, 0.1, 1.0);
  draw("ln_2.bias", {h}, 0.1, 0);
  draw("mlp.c_fc.weight", {h, f}, scale * 1.7, 0);
  draw("mlp.c_fc.bias", {f}, 0.1, 0);
  draw("mlp.c_proj.weight", {f, h}, 1.7 / std::sqrt(static_cast<double>(f)), 0);
  draw("mlp.c_proj.bias", {h}, 0.1, 0);
  std::string causal = g.Initializer(n + ".attn.bias", CausalBuffer(c.max_positions));

  // 1. Attention: ln_1, the fused projection split into query, key and value, heads.
  std::string normed =
      LayerNormNode(g, p + "/ln_1", x, params.at("ln_1.weight"), params.at("ln_1.bias"), kEpsilon);
  std::string qkv = LinearNode(g, p + "/attn/c_attn", normed, params.at("attn.c_attn.weight"),
                               params.at("attn.c_attn.bias"));
  std::vector<std::string> parts;
  if (c.qkv_cut == QkvCut::kSplit) {
    parts = g.MultiNode("Split", p + "/attn/Split", {qkv, g.Ints(n + ".attn.split", {h, h, h})}, 3,
                        {IntAttr("axis", 2)});
  } else {
    std::string axis = g.Ints(n + ".attn.qkv_axis", {2});
    for (int64_t i = 0; i < 3; ++i) {
      parts.push_back(
          g.Node("Slice", fmt::format("{}/attn/Slice_qkv_{}", p, i),
                 {qkv, g.Ints(fmt::format("{}.attn.qkv_start_{}", n, i), {i * h}),
                  g.Ints(fmt::format("{}.attn.qkv_end_{}", n, i), {(i + 1) * h}), axis}));
    }
  }
  std::string heads_shape = g.Ints(n + ".attn.heads_shape", {0, 0, c.heads, d});
  auto split_heads = [&](const std::string& name, const std::string& part,
                         const std::vector<int64_t>& perm) {
    std::string y = g.Node("Reshape", p + "/attn/" + name + "/Reshape", {part, heads_shape});
    return g.Node("Transpose", p + "/attn/" + name + "/Transpose", {y}, {IntsAttr("perm", perm)});
  };
  std::string q = split_heads("query", parts[0], {0, 2, 1, 3});
  std::string k = split_heads("key", parts[1], {0, 2, 3, 1});
  std::string v = split_heads("value", parts[2], {0, 2, 1, 3});
  std::string scores = g.Node("MatMul", p + "/attn/MatMul", {q, k});
  std::string scaled =
      g.Node("Div", p + "/attn/Div",
             {scores, g.Scalar(n + ".attn.scale", std::sqrt(static_cast<double>(d)))});

  // 2. The causal mask: attn.bias[:, :, 0:S, 0:S], then Where, then the padding mask.
  std::string zero = g.Ints(n + ".attn.slice_start", {0});
  std::string rows = g.Node("Slice", p + "/attn/Slice",
                            {causal, zero, length, g.Ints(n + ".attn.slice_axis2", {2})});
  std::string window = g.Node("Slice", p + "/attn/Slice_1",
                              {rows, zero, length, g.Ints(n + ".attn.slice_axis3", {3})});
  std::string causal_scores = g.Node(
      "Where", p + "/attn/Where", {window, scaled, g.Scalar(n + ".attn.mask_value", kMaskValue)});
  std::string masked = g.Node("Add", p + "/attn/Add", {causal_scores, padding});
  std::string probs = g.Node("Softmax", p + "/attn/Softmax", {masked}, {IntAttr("axis", -1)});

  // 3. Context, merged heads, output projection, residual.
  std::string context = g.Node("MatMul", p + "/attn/MatMul_1", {probs, v});
  std::string back =
      g.Node("Transpose", p + "/attn/Transpose", {context}, {IntsAttr("perm", {0, 2, 1, 3})});
  std::string merged =
      g.Node("Reshape", p + "/attn/Reshape", {back, g.Ints(n + ".attn.merged_shape", {0, 0, h})});
  std::string out = LinearNode(g, p + "/attn/c_proj", merged, params.at("attn.c_proj.weight"),
                               params.at("attn.c_proj.bias"));
  std::string x1 = g.Node("Add", p + "/Add", {out, x});

  // 4. The MLP: ln_2, c_fc, gelu_new, c_proj, residual.
  std::string normed2 =
      LayerNormNode(g, p + "/ln_2", x1, params.at("ln_2.weight"), params.at("ln_2.bias"), kEpsilon);
  std::string up = LinearNode(g, p + "/mlp/c_fc", normed2, params.at("mlp.c_fc.weight"),
                              params.at("mlp.c_fc.bias"));
  std::string gelu = GeluNew(g, p + "/mlp/act", up);
  std::string down = LinearNode(g, p + "/mlp/c_proj", gelu, params.at("mlp.c_proj.weight"),
                                params.at("mlp.c_proj.bias"));
  return g.Node("Add", p + "/Add_1", {x1, down});
}

}  // namespace

onnx::ModelProto BuildGptTokensModel(const GptTokensConfig& c) {
  onnx::ModelProto model;
  GraphWriter g(StartTokenModel(model, "gpt_tokens"));
  Generator generator(20261130);

  // 1. Embeddings: token (run-time ids) + position (Range over the sequence length).
  auto [wte, wpe, gamma, beta] =
      DrawTokenEmbeddings(g, generator,
                          {"transformer.wte.weight", "transformer.wpe.weight",
                           "transformer.ln_f.weight", "transformer.ln_f.bias"},
                          c.vocabulary, c.max_positions, c.hidden);
  auto [x, length] = EmbedTokenNodes(g, "transformer", wte, "wte", wpe, "wpe", "Gather");
  // The sequence length as a one-element tensor: the causal buffer's slice end.
  std::string ends = g.Node("Unsqueeze", "/transformer/Unsqueeze",
                            {length, g.Ints("transformer.unsqueeze_axes", {0})});

  // 2. The additive padding mask [B,1,1,S]: (1 - mask) * lowest.
  std::string mask = g.Node("Unsqueeze", "/transformer/mask/Unsqueeze",
                            {"attention_mask", g.Ints("transformer.mask.axes", {1, 2})});
  std::string as_float =
      g.Node("Cast", "/transformer/mask/Cast", {mask}, {IntAttr("to", onnx::TensorProto::FLOAT)});
  std::string inverted =
      g.Node("Sub", "/transformer/mask/Sub", {g.Scalar("transformer.mask.one", 1.0), as_float});
  std::string padding = g.Node("Mul", "/transformer/mask/Mul",
                               {inverted, g.Scalar("transformer.mask.value", kMaskValue)});

  // 3. The decoder blocks, the final norm and the LM head (the transposed token embedding).
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    x = Block(g, generator, c, layer, x, ends, padding);
  }
  std::string final_norm = LayerNormNode(g, "/transformer/ln_f", x, gamma, beta, kEpsilon);
  std::string head = g.Node("Transpose", "/lm_head/Transpose", {wte}, {IntsAttr("perm", {1, 0})});
  onnx::NodeProto* logits = model.mutable_graph()->add_node();
  logits->set_op_type("MatMul");
  logits->set_name("/lm_head/MatMul");
  logits->add_input(final_norm);
  logits->add_input(head);
  logits->add_output("logits");
  // Typed as exporters type it (onnx.checker's full check requires an output's type).
  auto* output = model.mutable_graph()->add_output();
  output->set_name("logits");
  auto* type = output->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_param("batch");
  type->mutable_shape()->add_dim()->set_dim_param("sequence");
  type->mutable_shape()->add_dim()->set_dim_value(c.vocabulary);
  return model;
}

std::vector<Tensor> GptTokensInputs(int64_t sequence, uint64_t seed, const GptTokensConfig& c) {
  return TokenInputs(sequence, seed, c.vocabulary);
}

}  // namespace tandem::examples
