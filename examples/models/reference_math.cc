#include "examples/models/reference_math.h"

#include <fmt/format.h>

#include <cmath>

#include "frontend/onnx_tensor.h"
#include "ir/error.h"

namespace tandem::examples {

Weights::Weights(const onnx::ModelProto& model) {
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    values_[t.name()] = frontend::TensorFromProto(t).ToDoubles();
  }
}

const Matrix& Weights::operator()(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw ir::Error("the model has no initializer " + name);
  return it->second;
}

Matrix Linear(const Matrix& x, int64_t rows, int64_t in, const Matrix& w, const Matrix& b,
              int64_t out) {
  Matrix y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) {
        sum += x[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>(i * out + o)];
      }
      y[static_cast<size_t>(r * out + o)] = sum;
    }
  }
  return y;
}

void AddTo(Matrix& x, const Matrix& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

void LayerNorm(Matrix& x, int64_t rows, int64_t n, const Matrix& gamma, const Matrix& beta,
               double epsilon) {
  for (int64_t r = 0; r < rows; ++r) {
    double* row = &x[static_cast<size_t>(r * n)];
    double mean = 0, variance = 0;
    for (int64_t i = 0; i < n; ++i) mean += row[i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) variance += (row[i] - mean) * (row[i] - mean);
    variance /= static_cast<double>(n);
    double inverse = 1.0 / std::sqrt(variance + epsilon);
    for (int64_t i = 0; i < n; ++i) {
      row[i] =
          (row[i] - mean) * inverse * gamma[static_cast<size_t>(i)] + beta[static_cast<size_t>(i)];
    }
  }
}

Matrix Embed(const ir::Tensor& input_ids, int64_t b, int64_t vocabulary, const Matrix& tokens,
             const Matrix& positions, int64_t hidden) {
  int64_t s = input_ids.shape().at(1);
  Matrix x(static_cast<size_t>(s * hidden));
  for (int64_t i = 0; i < s; ++i) {
    int64_t id = input_ids.data<int64_t>()[b * s + i];
    if (id < 0 || id >= vocabulary) {
      throw ir::Error(fmt::format("input id {} is outside the vocabulary", id));
    }
    for (int64_t e = 0; e < hidden; ++e) {
      x[static_cast<size_t>(i * hidden + e)] = tokens[static_cast<size_t>(id * hidden + e)] +
                                               positions[static_cast<size_t>(i * hidden + e)];
    }
  }
  return x;
}

Matrix AdditiveMask(const ir::Tensor& attention_mask, int64_t b, double mask_value) {
  int64_t s = attention_mask.shape().at(1);
  Matrix mask(static_cast<size_t>(s));
  for (int64_t j = 0; j < s; ++j) {
    mask[static_cast<size_t>(j)] = attention_mask.data<int64_t>()[b * s + j] == 0 ? mask_value : 0;
  }
  return mask;
}

}  // namespace tandem::examples
