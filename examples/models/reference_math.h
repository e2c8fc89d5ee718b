// Plain-loop helpers in double that the independent references of the token examples
// (bert_tokens_reference.cc, gpt_tokens_reference.cc) share: the model's initializers as
// row-major matrices, a linear layer, LayerNorm, the token plus position embeddings and the
// additive padding mask. None of Tandem's importer or ops is used.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tandem::examples {

using Matrix = std::vector<double>;  // row-major

// The initializers of a model in double, looked up by name.
class Weights {
 public:
  explicit Weights(const onnx::ModelProto& model);
  // The initializer `name`; throws ir::Error when the model has none.
  const Matrix& operator()(const std::string& name) const;

 private:
  std::map<std::string, Matrix> values_;
};

// x [rows, in] @ w [in, out] + b [out].
Matrix Linear(const Matrix& x, int64_t rows, int64_t in, const Matrix& w, const Matrix& b,
              int64_t out);

// x += y, element by element (a residual connection).
void AddTo(Matrix& x, const Matrix& y);

// LayerNorm of each row of x [rows, n] in place, with `epsilon` added to the variance.
void LayerNorm(Matrix& x, int64_t rows, int64_t n, const Matrix& gamma, const Matrix& beta,
               double epsilon);

// tokens[id] + positions[i] for each position i of batch row `b` of input_ids [batch, s]:
// [s, hidden]. Throws ir::Error for an id outside [0, vocabulary).
Matrix Embed(const ir::Tensor& input_ids, int64_t b, int64_t vocabulary, const Matrix& tokens,
             const Matrix& positions, int64_t hidden);

// The additive mask [s] of batch row `b` of attention_mask [batch, s]: `mask_value` where the
// mask is 0, else 0.
Matrix AdditiveMask(const ir::Tensor& attention_mask, int64_t b, double mask_value);

}  // namespace tandem::examples
