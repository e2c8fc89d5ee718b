// GptTokensReference: the decoder of gpt_tokens_model.cc computed with plain loops in double from
// the model's initializers, without Tandem's importer or ops.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <string>

#include "examples/models/gpt_tokens/gpt_tokens_model.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"

namespace tandem::examples {
namespace {

using Matrix = std::vector<double>;  // row-major

constexpr double kEpsilon = 1e-5;
constexpr double kMaskValue = std::numeric_limits<float>::lowest();

class Weights {
 public:
  explicit Weights(const onnx::ModelProto& model) {
    for (const onnx::TensorProto& t : model.graph().initializer()) {
      values_[t.name()] = frontend::TensorFromProto(t).ToDoubles();
    }
  }
  const Matrix& operator()(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) throw ir::Error("the model has no initializer " + name);
    return it->second;
  }

 private:
  std::map<std::string, Matrix> values_;
};

double& At(Matrix& m, int64_t i) {
  return m[static_cast<size_t>(i)];
}
double At(const Matrix& m, int64_t i) {
  return m[static_cast<size_t>(i)];
}

// x [rows, in] @ w [in, out] + b [out].
Matrix Linear(const Matrix& x, int64_t rows, int64_t in, const Matrix& w, const Matrix& b,
              int64_t out) {
  Matrix y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = At(b, o);
      for (int64_t i = 0; i < in; ++i) sum += At(x, r * in + i) * At(w, i * out + o);
      At(y, r * out + o) = sum;
    }
  }
  return y;
}

// LayerNorm of each row of x [rows, n], into a new matrix.
Matrix LayerNorm(const Matrix& x, int64_t rows, int64_t n, const Matrix& gamma,
                 const Matrix& beta) {
  Matrix y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, variance = 0;
    for (int64_t i = 0; i < n; ++i) mean += At(x, r * n + i);
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      variance += (At(x, r * n + i) - mean) * (At(x, r * n + i) - mean);
    }
    variance /= static_cast<double>(n);
    double inverse = 1.0 / std::sqrt(variance + kEpsilon);
    for (int64_t i = 0; i < n; ++i) {
      At(y, r * n + i) = (At(x, r * n + i) - mean) * inverse * At(gamma, i) + At(beta, i);
    }
  }
  return y;
}

// One pre-norm block on x [s, h]; padding [s] is the additive mask per key position.
Matrix Block(const Weights& w, const GptTokensConfig& c, int64_t layer, const Matrix& x, int64_t s,
             const Matrix& padding) {
  auto p = [&](const std::string& name) -> const Matrix& {
    return w(fmt::format("transformer.h.{}.{}", layer, name));
  };
  int64_t h = c.hidden, d = c.hidden / c.heads, f = c.inner;
  // 1. Attention: query, key and value are the three column blocks of the fused projection.
  Matrix normed = LayerNorm(x, s, h, p("ln_1.weight"), p("ln_1.bias"));
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
  for (size_t i = 0; i < x1.size(); ++i) x1[i] += x[i];
  // 2. The MLP with gelu_new.
  Matrix normed2 = LayerNorm(x1, s, h, p("ln_2.weight"), p("ln_2.bias"));
  Matrix up = Linear(normed2, s, h, p("mlp.c_fc.weight"), p("mlp.c_fc.bias"), f);
  const double root = std::sqrt(2.0 / std::numbers::pi);
  for (double& value : up) {
    value = 0.5 * value * (1.0 + std::tanh(root * (value + 0.044715 * value * value * value)));
  }
  Matrix x2 = Linear(up, s, f, p("mlp.c_proj.weight"), p("mlp.c_proj.bias"), h);
  for (size_t i = 0; i < x2.size(); ++i) x2[i] += x1[i];
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
    // 1. Token and position embeddings.
    Matrix x(static_cast<size_t>(s * h));
    for (int64_t i = 0; i < s; ++i) {
      int64_t id = input_ids.data<int64_t>()[b * s + i];
      if (id < 0 || id >= vocabulary) {
        throw ir::Error(fmt::format("input id {} is outside the vocabulary", id));
      }
      for (int64_t e = 0; e < h; ++e) At(x, i * h + e) = At(wte, id * h + e) + At(wpe, i * h + e);
    }
    // 2. The additive padding mask.
    Matrix padding(static_cast<size_t>(s));
    for (int64_t j = 0; j < s; ++j) {
      At(padding, j) = attention_mask.data<int64_t>()[b * s + j] == 0 ? kMaskValue : 0;
    }
    // 3. The blocks, the final norm and the tied LM head: logits[i][t] = x[i] . wte[t].
    for (int64_t layer = 0; layer < c.layers; ++layer) x = Block(w, c, layer, x, s, padding);
    x = LayerNorm(x, s, h, w("transformer.ln_f.weight"), w("transformer.ln_f.bias"));
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
