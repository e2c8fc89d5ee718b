// BertTokensReference: the encoder of bert_tokens_model.cc computed with plain loops in double
// from the model's initializers, without Tandem's importer or ops.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "examples/models/bert_tokens/bert_tokens_model.h"
#include "examples/models/reference_math.h"
#include "ir/error.h"

namespace tandem::examples {
namespace {

constexpr double kEpsilon = 1e-12;
constexpr double kMaskValue = -10000.0;

// One encoder layer on x [s, h] with the additive mask `mask` [s] (per key position).
Matrix Layer(const Weights& w, const BertTokensConfig& c, int64_t layer, const Matrix& x, int64_t s,
             const Matrix& mask) {
  auto p = [&](const std::string& name) -> const Matrix& {
    return w(fmt::format("encoder.layer.{}.{}", layer, name));
  };
  int64_t h = c.hidden, d = c.hidden / c.heads, f = c.feed_forward;
  Matrix q = Linear(x, s, h, p("query.weight"), p("query.bias"), h);
  Matrix k = Linear(x, s, h, p("key.weight"), p("key.bias"), h);
  Matrix v = Linear(x, s, h, p("value.weight"), p("value.bias"), h);
  Matrix context(static_cast<size_t>(s * h));
  std::vector<double> scores(static_cast<size_t>(s));
  for (int64_t head = 0; head < c.heads; ++head) {
    for (int64_t i = 0; i < s; ++i) {
      double largest = -INFINITY;
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) {
          dot += q[static_cast<size_t>(i * h + head * d + e)] *
                 k[static_cast<size_t>(j * h + head * d + e)];
        }
        double score = dot / std::sqrt(static_cast<double>(d)) + mask[static_cast<size_t>(j)];
        scores[static_cast<size_t>(j)] = score;
        largest = std::max(largest, score);
      }
      double total = 0;
      for (double& score : scores) total += (score = std::exp(score - largest));
      for (int64_t e = 0; e < d; ++e) {
        double sum = 0;
        for (int64_t j = 0; j < s; ++j) {
          sum += scores[static_cast<size_t>(j)] * v[static_cast<size_t>(j * h + head * d + e)];
        }
        context[static_cast<size_t>(i * h + head * d + e)] = sum / total;
      }
    }
  }
  Matrix x1 = Linear(context, s, h, p("output.weight"), p("output.bias"), h);
  AddTo(x1, x);
  LayerNorm(x1, s, h, p("ln1.gamma"), p("ln1.beta"), kEpsilon);
  Matrix hidden = Linear(x1, s, h, p("intermediate.weight"), p("intermediate.bias"), f);
  for (double& value : hidden) value = value * 0.5 * (1.0 + std::erf(value / std::sqrt(2.0)));
  Matrix x2 = Linear(hidden, s, f, p("output2.weight"), p("output2.bias"), h);
  AddTo(x2, x1);
  LayerNorm(x2, s, h, p("ln2.gamma"), p("ln2.beta"), kEpsilon);
  return x2;
}

}  // namespace

ir::Tensor BertTokensReference(const onnx::ModelProto& model, const ir::Tensor& input_ids,
                               const ir::Tensor& attention_mask, const BertTokensConfig& c) {
  Weights w(model);
  int64_t batch = input_ids.shape().at(0), s = input_ids.shape().at(1), h = c.hidden;
  ir::Tensor out({batch, s, h}, ir::DataType::kFloat32);
  for (int64_t b = 0; b < batch; ++b) {
    // 1. Embeddings and their layer norm.
    Matrix x = Embed(input_ids, b, c.vocabulary, w("embeddings.word_embeddings.weight"),
                     w("embeddings.position_embeddings.weight"), h);
    LayerNorm(x, s, h, w("embeddings.ln.gamma"), w("embeddings.ln.beta"), kEpsilon);
    // 2. The additive mask (both forms in the model give the same values).
    Matrix mask = AdditiveMask(attention_mask, b, kMaskValue);
    // 3. The layers.
    for (int64_t layer = 0; layer < c.layers; ++layer) x = Layer(w, c, layer, x, s, mask);
    for (int64_t i = 0; i < s * h; ++i) {
      out.data<float>()[b * s * h + i] = static_cast<float>(x[static_cast<size_t>(i)]);
    }
  }
  return out;
}

}  // namespace tandem::examples
