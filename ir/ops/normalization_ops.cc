// Normalizations: batch_norm (inference form), layer_norm and softmax.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

// Checks that every operand has the data type of operand 0, naming the operands by `roles`.
void CheckDataTypes(const std::vector<Type>& inputs, const std::vector<std::string>& roles) {
  const TensorType& first = TensorOperand(inputs, 0, roles[0]);
  for (size_t i = 1; i < inputs.size(); ++i) {
    const TensorType& t = TensorOperand(inputs, i, roles[i]);
    if (t.dtype != first.dtype) {
      throw Error(fmt::format("{} is {} but {} is {}; all operands must have one data type",
                              roles[0], ToString(first.dtype), roles[i], ToString(t.dtype)));
    }
  }
}

double ReadEpsilon(const Attrs& attrs) {
  double epsilon = attrs.GetFloat("epsilon");
  if (!std::isfinite(epsilon) || epsilon < 0) {
    throw Error(fmt::format("epsilon must be finite and non-negative but is {}", epsilon));
  }
  return epsilon;
}

int64_t Product(const Shape& shape, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= shape[i];
  return product;
}

Tensor ToTensor(const std::vector<double>& values, const TensorType& type) {
  Tensor result(type);
  for (size_t i = 0; i < values.size(); ++i) result.SetDouble(static_cast<int64_t>(i), values[i]);
  return result;
}

// ---- batch_norm ----

const std::vector<std::string> kBatchNormRoles = {"data", "gamma", "beta", "mean", "variance"};

Type InferBatchNorm(const std::vector<Type>& inputs, const Attrs& attrs) {
  CheckDataTypes(inputs, kBatchNormRoles);
  const TensorType& data = inputs[0].tensor();
  if (data.rank() < 1) throw Error("data must have rank at least 1 but is a scalar");
  int64_t axis = NormalizeAxis(attrs.GetInt("axis"), data.rank());
  int64_t channels = data.shape[static_cast<size_t>(axis)];
  for (size_t i = 1; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i].tensor();
    if (t.shape != Shape{channels}) {
      throw Error(
          fmt::format("{} must have shape [{}] (the extent of data axis {}) but has shape {}",
                      kBatchNormRoles[i], channels, axis, ShapeToString(t.shape)));
    }
  }
  ReadEpsilon(attrs);
  return data;
}

std::vector<Tensor> BatchNormReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                       const Type& output) {
  const Shape& shape = inputs.at(0).shape();
  size_t axis = static_cast<size_t>(NormalizeAxis(attrs.GetInt("axis"), inputs[0].rank()));
  double epsilon = ReadEpsilon(attrs);
  std::vector<double> data = inputs[0].ToDoubles();
  std::vector<double> gamma = inputs.at(1).ToDoubles();
  std::vector<double> beta = inputs.at(2).ToDoubles();
  std::vector<double> mean = inputs.at(3).ToDoubles();
  std::vector<double> variance = inputs.at(4).ToDoubles();
  int64_t outer = Product(shape, 0, axis);
  int64_t channels = shape[axis];
  int64_t inner = Product(shape, axis + 1, shape.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      size_t ci = static_cast<size_t>(c);
      double scale = gamma[ci] / std::sqrt(variance[ci] + epsilon);
      double shift = beta[ci] - mean[ci] * scale;
      double* values = data.data() + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) values[i] = values[i] * scale + shift;
    }
  }
  return {ToTensor(data, output.tensor())};
}

// ---- layer_norm ----

Type InferLayerNorm(const std::vector<Type>& inputs, const Attrs& attrs) {
  CheckDataTypes(inputs, {"data", "gamma", "beta"});
  const TensorType& data = inputs[0].tensor();
  if (data.rank() < 1) throw Error("data must have rank at least 1 but is a scalar");
  int64_t axis = NormalizeAxis(attrs.GetInt("axis"), data.rank());
  Shape normalized(data.shape.begin() + axis, data.shape.end());
  for (size_t i = 1; i < 3; ++i) {
    const TensorType& t = inputs[i].tensor();
    if (t.shape != normalized) {
      throw Error(
          fmt::format("{} must have shape {} (the normalized axes {}..{} of data) but has shape {}",
                      i == 1 ? "gamma" : "beta", ShapeToString(normalized), axis, data.rank() - 1,
                      ShapeToString(t.shape)));
    }
  }
  ReadEpsilon(attrs);
  return data;
}

std::vector<Tensor> LayerNormReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                       const Type& output) {
  const Shape& shape = inputs.at(0).shape();
  size_t axis = static_cast<size_t>(NormalizeAxis(attrs.GetInt("axis"), inputs[0].rank()));
  double epsilon = ReadEpsilon(attrs);
  std::vector<double> data = inputs[0].ToDoubles();
  std::vector<double> gamma = inputs.at(1).ToDoubles();
  std::vector<double> beta = inputs.at(2).ToDoubles();
  int64_t outer = Product(shape, 0, axis);
  int64_t inner = Product(shape, axis, shape.size());
  for (int64_t o = 0; o < outer && inner > 0; ++o) {
    double* values = data.data() + o * inner;
    double mean = 0;
    for (int64_t i = 0; i < inner; ++i) mean += values[i];
    mean /= static_cast<double>(inner);
    double variance = 0;
    for (int64_t i = 0; i < inner; ++i) variance += (values[i] - mean) * (values[i] - mean);
    variance /= static_cast<double>(inner);
    double inverse_deviation = 1.0 / std::sqrt(variance + epsilon);
    for (int64_t i = 0; i < inner; ++i) {
      size_t ii = static_cast<size_t>(i);
      values[i] = (values[i] - mean) * inverse_deviation * gamma[ii] + beta[ii];
    }
  }
  return {ToTensor(data, output.tensor())};
}

// ---- softmax ----

Type InferSoftmax(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& data = TensorOperand(inputs, 0, "x");
  if (data.rank() < 1) throw Error("x must have rank at least 1 but is a scalar");
  NormalizeAxis(attrs.GetInt("axis"), data.rank());
  return data;
}

std::vector<Tensor> SoftmaxReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                     const Type& output) {
  const Shape& shape = inputs.at(0).shape();
  size_t axis = static_cast<size_t>(NormalizeAxis(attrs.GetInt("axis"), inputs[0].rank()));
  std::vector<double> data = inputs[0].ToDoubles();
  int64_t outer = Product(shape, 0, axis);
  int64_t extent = shape[axis];
  int64_t inner = Product(shape, axis + 1, shape.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double* values = data.data() + o * extent * inner + i;
      double largest = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < extent; ++j) largest = std::max(largest, values[j * inner]);
      double sum = 0;
      for (int64_t j = 0; j < extent; ++j) {
        values[j * inner] = std::exp(values[j * inner] - largest);
        sum += values[j * inner];
      }
      for (int64_t j = 0; j < extent; ++j) values[j * inner] /= sum;
    }
  }
  return {ToTensor(data, output.tensor())};
}

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  OpDef batch_norm;
  batch_norm.name = "batch_norm";
  batch_norm.doc =
      "batch normalization in inference form: (x - mean) / sqrt(variance + epsilon) * gamma + "
      "beta, where gamma, beta, mean and variance are [C] vectors along data axis `axis`";
  batch_norm.min_inputs = 5;
  batch_norm.max_inputs = 5;
  batch_norm.attrs = {
      {"epsilon", AttrKind::kFloat, AttrValue(1e-5), "added to the variance"},
      {"axis", AttrKind::kInt, AttrValue(int64_t{1}), "the channel axis of data"},
  };
  batch_norm.pattern = PatternKind::kBroadcast;
  batch_norm.infer_type = InferBatchNorm;
  batch_norm.reference = BatchNormReference;
  registry.Register(std::move(batch_norm));

  OpDef layer_norm;
  layer_norm.name = "layer_norm";
  layer_norm.doc =
      "layer normalization over data axes [axis, rank): (x - mean) / sqrt(variance + epsilon) * "
      "gamma + beta with the population variance; gamma and beta have the shape of those axes";
  layer_norm.min_inputs = 3;
  layer_norm.max_inputs = 3;
  layer_norm.attrs = {
      {"axis", AttrKind::kInt, AttrValue(int64_t{-1}), "first normalized axis"},
      {"epsilon", AttrKind::kFloat, AttrValue(1e-5), "added to the variance"},
  };
  layer_norm.pattern = PatternKind::kOpaque;
  layer_norm.infer_type = InferLayerNorm;
  layer_norm.reference = LayerNormReference;
  registry.Register(std::move(layer_norm));

  OpDef softmax;
  softmax.name = "softmax";
  softmax.doc = "exp(x) / sum(exp(x)) along `axis`, computed stably (the maximum is subtracted)";
  softmax.attrs = {{"axis", AttrKind::kInt, AttrValue(int64_t{-1}), "the normalized axis"}};
  softmax.pattern = PatternKind::kOpaque;
  softmax.infer_type = InferSoftmax;
  softmax.reference = SoftmaxReference;
  registry.Register(std::move(softmax));
}

}  // namespace tandem::ir::ops
