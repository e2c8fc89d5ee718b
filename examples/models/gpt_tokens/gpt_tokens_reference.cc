// GptTokensReference: the decoder of gpt_tokens_model.cc computed with plain loops in double from
// the model's initializers, without Tandem's importer or ops.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "examples/models/gpt_tokens/gpt_tokens_model.h"
#include "examples/models/reference_math.h"
#include "ir/error.h"

namespace tandem::examples {
namespace {

constexpr double kEpsilon = 1e-5;
constexpr double kMaskValue = std::numeric_limits<float>::lowest();

double& At(Matrix& m, int64_t i) {
  return m[static_cast<size_t>(i)];
}
double At(const Matrix& m, int64_t i) {
  return m[static_cast<size_t>(i)];
}

// One pre-norm block on x [s, h]; padding [s] is the additive mask per key position.
Matrix Block(const Weights& w, const GptTokensConfig& c, int64_t layer, const Matrix& x, int64_t s,
             const Matrix& padding) {
  auto p = [&](const std::string& name) -> const Matrix& {
    return w(fmt::format("transformer.h.{}.{}", layer, name));
  };
  int64_t h = c.hidden, d = c.hidden / c.heads, f = c.inner;
  // 1. Attention: query, key and value are the three column blocks of the fused projection.
  Matrix normed = x;
  LayerNorm(normed, s, h, p("ln_1.weight"), p("ln_1.bias"), kEpsilon);
  Matrix qkv = Linear(normed, s, h, p("attn.c_attn.weight"), p("attn.c_attn.bias"), 3 * h);
  auto q = [&](int64_t i, int64_t e) { return At(qkv, i * 3 * h + e); };
  auto k = [&](int64_t j, int64_t e) { return At(qkv, j * 3 * h + h + e); };
  auto v = [&](int64_t j, int64_t e) { return At(qkv, j * 3 * h + 2 * h + e); };
  Matrix context(static_cast<size_t>(s * h));
  Matrix scores(static_cast<size_t>(s));
  for (int64_t head = 0; head < c.heads; ++head) {
    for (int64_t i = 0; i < s; ++i) {
      double largest = -INFINITY;
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += q(i, head * d + e) * k(j, head * d + e);
        // A later key is replaced by the mask value (not added to), then padding is added.
        double score = j <= i ? dot / std::sqrt(static_cast<double>(d)) : kMaskValue;
        score += At(padding, j);
        At(scores, j) = score;
        largest = std::max(largest, score);
      }
      double total = 0;
      for (double& score : scores) total += (score = std::exp(score - largest));
      for (int64_t e = 0; e < d; ++e) {
        double sum = 0;
        for (int64_t j = 0; j < s; ++j) sum += At(scores, j) * v(j, head * d + e);
        At(context, i * h + head * d + e) = sum / total;
      }
    }
  }
  Matrix x1 = Linear(context, s, h, p("attn.c_proj.weight"), p("attn.c_proj.bias"), h);
  AddTo(x1, x);
  // 2. The MLP with gelu_new.
  Matrix normed2 = x1;
  LayerNorm(normed2, s, h, p("ln_2.weight"), p("ln_2.bias"), kEpsilon);
  Matrix up = Linear(normed2, s, h, p("mlp.c_fc.weight"), p("mlp.c_fc.bias"), f);
  const double root = std::sqrt(2.0 / std::numbers::pi);
  for (double& value : up) {
    value = 0.5 * value * (1.0 + std::tanh(root * (value + 0.044715 * value * value * value)));
  }
  Matrix x2 = Linear(up, s, f, p("mlp.c_proj.weight"), p("mlp.c_proj.bias"), h);
  AddTo(x2, x1);
  return x2;
}

}  // namespace

ir::Tensor GptTokensReference(const onnx::ModelProto& model, const ir::Tensor& input_ids,
                              const ir::Tensor& attention_mask, const GptTokensConfig& c) {
  Weights w(model);
  int64_t batch = input_ids.shape().at(0), s = input_ids.shape().at(1), h = c.hidden;
  int64_t vocabulary = c.vocabulary;
  const Matrix& wte = w("transformer.wte.weight");
  const Matrix& wpe = w("transformer.wpe.weight");
  ir::Tensor out({batch, s, vocabulary}, ir::DataType::kFloat32);
  for (int64_t b = 0; b < batch; ++b) {
    // 1. Token and position embeddings; 2. the additive padding mask.
    Matrix x = Embed(input_ids, b, vocabulary, wte, wpe, h);
    Matrix padding = AdditiveMask(attention_mask, b, kMaskValue);
    // 3. The blocks, the final norm and the tied LM head: logits[i][t] = x[i] . wte[t].
    for (int64_t layer = 0; layer < c.layers; ++layer) x = Block(w, c, layer, x, s, padding);
    LayerNorm(x, s, h, w("transformer.ln_f.weight"), w("transformer.ln_f.bias"), kEpsilon);
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t t = 0; t < vocabulary; ++t) {
        double sum = 0;
        for (int64_t e = 0; e < h; ++e) sum += At(x, i * h + e) * At(wte, t * h + e);
        out.data<float>()[(b * s + i) * vocabulary + t] = static_cast<float>(sum);
      }
    }
  }
  return out;
}

}  // namespace tandem::examples
