#include "frontend/model_builders.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/error.h"

namespace tandem::frontend {

using ir::Attrs;
using ir::DataType;
using ir::GraphBuilder;
using ir::Shape;
using ir::Tensor;
using ir::TensorType;
using ir::ValueId;

namespace {

void CheckPositive(const std::string& builder, const std::string& field, int64_t value) {
  if (value <= 0) {
    throw ir::Error(fmt::format("{}: {} must be positive (got {})", builder, field, value));
  }
}

// SplitMix64 finalizer: spreads (seed, index) pairs over distinct generator seeds.
uint64_t MixSeed(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Adds named random f32 constants to a builder, each from its own seed derived from the model
// seed, and wraps the op calls the builders share.
class ModelWriter {
 public:
  explicit ModelWriter(uint64_t seed) : builder_("main"), seed_(seed) {}

  GraphBuilder& builder() { return builder_; }

  ValueId Uniform(const std::string& name, Shape shape, double low, double high) {
    Tensor value = Tensor::Random(TensorType{std::move(shape), DataType::kFloat32, ""},
                                  MixSeed(seed_, next_tensor_++), low, high);
    return builder_.Constant(value, name);
  }

  // A weight whose consumer sums over `fan_in` products: uniform in ±1/sqrt(fan_in).
  ValueId Weight(const std::string& name, Shape shape, int64_t fan_in) {
    double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return Uniform(name, std::move(shape), -bound, bound);
  }

  // conv2d without bias; weight [out, in/groups, k, k], padding k/2 on every side.
  ValueId Conv(const std::string& name, ValueId data, int64_t out_channels, int64_t kernel,
               int64_t stride, int64_t groups) {
    int64_t in_channels = builder_.TensorTypeOf(data).shape.at(1);
    int64_t per_group = in_channels / groups;
    ValueId weight = Weight(name + "_weight", {out_channels, per_group, kernel, kernel},
                            per_group * kernel * kernel);
    int64_t pad = kernel / 2;
    Attrs attrs{{"strides", std::vector<int64_t>{stride, stride}},
                {"padding", std::vector<int64_t>{pad, pad, pad, pad}},
                {"groups", groups}};
    return builder_.Call("conv2d", {data, weight}, attrs, name);
  }

  // batch_norm over axis 1 with randomized statistics.
  ValueId BatchNorm(const std::string& name, ValueId data) {
    int64_t channels = builder_.TensorTypeOf(data).shape.at(1);
    ValueId gamma = Uniform(name + "_gamma", {channels}, 0.5, 1.5);
    ValueId beta = Uniform(name + "_beta", {channels}, -0.1, 0.1);
    ValueId mean = Uniform(name + "_mean", {channels}, -0.1, 0.1);
    ValueId variance = Uniform(name + "_variance", {channels}, 0.5, 1.5);
    return builder_.Call("batch_norm", {data, gamma, beta, mean, variance},
                         Attrs{{"epsilon", 1e-5}, {"axis", int64_t{1}}}, name);
  }

  ValueId Relu(ValueId x, const std::string& name = "") {
    return builder_.Call("relu", {x}, {}, name);
  }

  ValueId Relu6(ValueId x, const std::string& name = "") {
    return builder_.Call("clip", {x}, Attrs{{"min", 0.0}, {"max", 6.0}}, name);
  }

  ValueId Add(ValueId a, ValueId b, const std::string& name = "") {
    return builder_.Call("add", {a, b}, {}, name);
  }

  // dense (weight [out, in]) followed by a bias add.
  ValueId DenseBias(const std::string& name, ValueId data, int64_t out_features) {
    int64_t in_features = builder_.TensorTypeOf(data).shape.back();
    ValueId weight = Weight(name + "_weight", {out_features, in_features}, in_features);
    ValueId bias = Uniform(name + "_bias", {out_features}, -0.1, 0.1);
    ValueId product = builder_.Call("dense", {data, weight}, {}, name);
    return Add(product, bias, name + "_biased");
  }

  ValueId LayerNorm(const std::string& name, ValueId data) {
    int64_t features = builder_.TensorTypeOf(data).shape.back();
    ValueId gamma = Uniform(name + "_gamma", {features}, 0.5, 1.5);
    ValueId beta = Uniform(name + "_beta", {features}, -0.1, 0.1);
    return builder_.Call("layer_norm", {data, gamma, beta},
                         Attrs{{"axis", int64_t{-1}}, {"epsilon", 1e-12}}, name);
  }

  ValueId Reshape(ValueId x, Shape shape, const std::string& name = "") {
    return builder_.Call("reshape", {x}, Attrs{{"newshape", std::move(shape)}}, name);
  }

  ValueId Transpose(ValueId x, std::vector<int64_t> axes, const std::string& name = "") {
    return builder_.Call("transpose", {x}, Attrs{{"axes", std::move(axes)}}, name);
  }

  ir::IRModule Finish(ValueId output) {
    ir::IRModule module;
    module.Add(builder_.Finish(output));
    return module;
  }

 private:
  GraphBuilder builder_;
  uint64_t seed_;
  uint64_t next_tensor_ = 0;
};

TensorType F32(Shape shape) {
  return TensorType{std::move(shape), DataType::kFloat32, ""};
}

}  // namespace

ir::IRModule ResNetBasicBlock(const ResNetBlockConfig& config) {
  const std::string kName = "ResNetBasicBlock";
  CheckPositive(kName, "batch", config.batch);
  CheckPositive(kName, "channels", config.channels);
  CheckPositive(kName, "height", config.height);
  CheckPositive(kName, "width", config.width);

  ModelWriter m(config.seed);
  ValueId data =
      m.builder().Input("data", F32({config.batch, config.channels, config.height, config.width}));
  ValueId x = m.Conv("conv1", data, config.channels, 3, 1, 1);
  x = m.Relu(m.BatchNorm("bn1", x), "relu1");
  x = m.Conv("conv2", x, config.channels, 3, 1, 1);
  x = m.BatchNorm("bn2", x);
  x = m.Add(x, data, "residual");
  return m.Finish(m.Relu(x, "output"));
}

ir::IRModule ResNetBottleneck(const BottleneckConfig& config) {
  const std::string kName = "ResNetBottleneck";
  CheckPositive(kName, "batch", config.batch);
  CheckPositive(kName, "in_channels", config.in_channels);
  CheckPositive(kName, "mid_channels", config.mid_channels);
  CheckPositive(kName, "height", config.height);
  CheckPositive(kName, "width", config.width);

  ModelWriter m(config.seed);
  ValueId data = m.builder().Input(
      "data", F32({config.batch, config.in_channels, config.height, config.width}));
  ValueId x = m.Conv("conv1", data, config.mid_channels, 1, 1, 1);
  x = m.Relu(m.BatchNorm("bn1", x), "relu1");
  x = m.Conv("conv2", x, config.mid_channels, 3, 1, 1);
  x = m.Relu(m.BatchNorm("bn2", x), "relu2");
  x = m.Conv("conv3", x, config.in_channels, 1, 1, 1);
  x = m.BatchNorm("bn3", x);
  x = m.Add(x, data, "residual");
  return m.Finish(m.Relu(x, "output"));
}

ir::IRModule MobileNetV2InvertedResidual(const InvertedResidualConfig& config) {
  const std::string kName = "MobileNetV2InvertedResidual";
  CheckPositive(kName, "batch", config.batch);
  CheckPositive(kName, "in_channels", config.in_channels);
  CheckPositive(kName, "out_channels", config.out_channels);
  CheckPositive(kName, "expansion", config.expansion);
  CheckPositive(kName, "height", config.height);
  CheckPositive(kName, "width", config.width);
  if (config.stride != 1 && config.stride != 2) {
    throw ir::Error(fmt::format("{}: stride must be 1 or 2 (got {})", kName, config.stride));
  }

  ModelWriter m(config.seed);
  ValueId data = m.builder().Input(
      "data", F32({config.batch, config.in_channels, config.height, config.width}));
  int64_t hidden = config.in_channels * config.expansion;
  ValueId x = data;
  if (config.expansion > 1) {
    x = m.Conv("expand", x, hidden, 1, 1, 1);
    x = m.Relu6(m.BatchNorm("expand_bn", x), "expand_relu6");
  }
  x = m.Conv("depthwise", x, hidden, 3, config.stride, hidden);
  x = m.Relu6(m.BatchNorm("depthwise_bn", x), "depthwise_relu6");
  x = m.Conv("project", x, config.out_channels, 1, 1, 1);
  x = m.BatchNorm("project_bn", x);
  if (config.stride == 1 && config.in_channels == config.out_channels) {
    x = m.Add(x, data, "residual");
  }
  return m.Finish(x);
}

ir::IRModule BertEncoderLayer(const BertLayerConfig& config) {
  const std::string kName = "BertEncoderLayer";
  CheckPositive(kName, "batch", config.batch);
  CheckPositive(kName, "seq", config.seq);
  CheckPositive(kName, "hidden", config.hidden);
  CheckPositive(kName, "heads", config.heads);
  CheckPositive(kName, "ffn", config.ffn);
  if (config.hidden % config.heads != 0) {
    throw ir::Error(
        fmt::format("{}: heads ({}) must divide hidden ({})", kName, config.heads, config.hidden));
  }

  const int64_t b = config.batch, s = config.seq, h = config.hidden, heads = config.heads;
  const int64_t d = h / heads;
  ModelWriter m(config.seed);
  ValueId input = m.builder().Input("hidden_states", F32({b, s, h}));

  // [b, s, h] -> [b*heads, s, d]
  auto split_heads = [&](const std::string& name) {
    ValueId x = m.DenseBias(name, input, h);
    x = m.Reshape(x, {b, s, heads, d}, name + "_heads");
    x = m.Transpose(x, {0, 2, 1, 3}, name + "_transposed");
    return m.Reshape(x, {b * heads, s, d}, name + "_batched");
  };
  ValueId query = split_heads("query");
  ValueId key = split_heads("key");
  ValueId value = split_heads("value");

  ValueId scores =
      m.builder().Call("batch_matmul", {query, key},
                       Attrs{{"transpose_a", int64_t{0}}, {"transpose_b", int64_t{1}}}, "scores");
  ValueId scale = m.builder().Constant(
      Tensor::FromFloats({}, {static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)))}),
      "attention_scale");
  scores = m.builder().Call("multiply", {scores, scale}, {}, "scaled_scores");
  ValueId probs = m.builder().Call("softmax", {scores}, Attrs{{"axis", int64_t{-1}}}, "probs");
  ValueId context = m.builder().Call("batch_matmul", {probs, value}, {}, "context");
  context = m.Reshape(context, {b, heads, s, d}, "context_heads");
  context = m.Transpose(context, {0, 2, 1, 3}, "context_transposed");
  context = m.Reshape(context, {b, s, h}, "context_merged");

  ValueId attention = m.DenseBias("output", context, h);
  attention = m.Add(attention, input, "attention_residual");
  attention = m.LayerNorm("attention_norm", attention);

  ValueId ffn = m.DenseBias("ffn1", attention, config.ffn);
  ffn = m.builder().Call("gelu", {ffn}, Attrs{{"approximate", std::string("none")}}, "ffn_gelu");
  ffn = m.DenseBias("ffn2", ffn, h);
  ffn = m.Add(ffn, attention, "ffn_residual");
  return m.Finish(m.LayerNorm("output_norm", ffn));
}

}  // namespace tandem::frontend
