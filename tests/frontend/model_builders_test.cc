// Tests of the example model builders: structure (types, op counts, verification), execution on
// the reference interpreter, and semantics against computations written out in this file.
#include "frontend/model_builders.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::GraphFunction;
using ir::IRModule;
using ir::Shape;
using ir::Tensor;
using ir::TensorType;

TensorType F32(Shape shape) {
  return TensorType{std::move(shape), DataType::kFloat32, ""};
}

std::map<std::string, int> CountOps(const GraphFunction& function) {
  std::map<std::string, int> counts;
  for (const ir::Node& node : function.nodes) {
    if (node.kind == ir::NodeKind::kCall) ++counts[node.op];
  }
  return counts;
}

// The data of the constant named `name`; fails the test when there is none.
std::vector<double> ConstantData(const GraphFunction& function, const std::string& name) {
  ir::ValueId id = function.Find(name);
  if (id < 0 || function.node(id).kind != ir::NodeKind::kConstant) {
    ADD_FAILURE() << "no constant named " << name;
    return {};
  }
  return function.node(id).value.ToDoubles();
}

// Checks the parts every builder guarantees: it verifies, has one f32 input of `input` type and
// one output of `output` type.
void ExpectSignature(const IRModule& module, const std::string& input_name, const Shape& input,
                     const Shape& output) {
  ASSERT_NO_THROW(ir::Verify(module));
  ASSERT_EQ(module.graph_functions().size(), 1u);
  const GraphFunction& main = module.Get("main");
  ASSERT_EQ(main.params.size(), 1u);
  EXPECT_EQ(main.node(main.params[0]).name, input_name);
  EXPECT_EQ(main.type_of(main.params[0]), ir::Type(F32(input)));
  ASSERT_EQ(main.OutputTensorTypes().size(), 1u);
  EXPECT_EQ(main.OutputTensorTypes()[0], F32(output));
}

// Runs the module on random inputs; checks the output shape and that every value is finite.
void ExpectRunsFinite(const IRModule& module, const Shape& output) {
  const GraphFunction& main = module.Get("main");
  std::vector<Tensor> outputs = backends::RunReference(module, backends::RandomInputs(main, 7));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape(), output);
  for (double v : outputs[0].ToDoubles()) ASSERT_TRUE(std::isfinite(v));
}

// ---- A small NCHW tensor library for the independent computations ---------------------------

struct Array {
  Shape shape;
  std::vector<double> values;
  double& at(int64_t n, int64_t c, int64_t y, int64_t x) {
    return values[static_cast<size_t>(((n * shape[1] + c) * shape[2] + y) * shape[3] + x)];
  }
  double at(int64_t n, int64_t c, int64_t y, int64_t x) const {
    return values[static_cast<size_t>(((n * shape[1] + c) * shape[2] + y) * shape[3] + x)];
  }
};

Array FromTensor(const Tensor& t) {
  return Array{t.shape(), t.ToDoubles()};
}

// Square kernel, padding k/2 on every side, no bias.
Array Convolve(const Array& in, const std::vector<double>& weight, int64_t out_channels,
               int64_t kernel, int64_t stride, int64_t groups) {
  int64_t n = in.shape[0], c = in.shape[1], h = in.shape[2], w = in.shape[3];
  int64_t pad = kernel / 2;
  int64_t oh = (h + 2 * pad - kernel) / stride + 1, ow = (w + 2 * pad - kernel) / stride + 1;
  int64_t in_per_group = c / groups, out_per_group = out_channels / groups;
  Array out{{n, out_channels, oh, ow}, std::vector<double>(n * out_channels * oh * ow, 0.0)};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double sum = 0;
          int64_t group = o / out_per_group;
          for (int64_t i = 0; i < in_per_group; ++i)
            for (int64_t ky = 0; ky < kernel; ++ky)
              for (int64_t kx = 0; kx < kernel; ++kx) {
                int64_t iy = y * stride - pad + ky, ix = x * stride - pad + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                double wv = weight[((o * in_per_group + i) * kernel + ky) * kernel + kx];
                sum += wv * in.at(b, group * in_per_group + i, iy, ix);
              }
          out.at(b, o, y, x) = sum;
        }
  return out;
}

Array BatchNorm(const Array& in, const GraphFunction& f, const std::string& prefix) {
  std::vector<double> gamma = ConstantData(f, prefix + "_gamma");
  std::vector<double> beta = ConstantData(f, prefix + "_beta");
  std::vector<double> mean = ConstantData(f, prefix + "_mean");
  std::vector<double> variance = ConstantData(f, prefix + "_variance");
  Array out = in;
  for (int64_t b = 0; b < in.shape[0]; ++b)
    for (int64_t c = 0; c < in.shape[1]; ++c)
      for (int64_t y = 0; y < in.shape[2]; ++y)
        for (int64_t x = 0; x < in.shape[3]; ++x) {
          double v = (in.at(b, c, y, x) - mean[c]) / std::sqrt(variance[c] + 1e-5);
          out.at(b, c, y, x) = v * gamma[c] + beta[c];
        }
  return out;
}

Array ClampBelowAbove(Array in, double low, double high) {
  for (double& v : in.values) v = std::min(std::max(v, low), high);
  return in;
}
Array Relu(Array in) {
  return ClampBelowAbove(std::move(in), 0.0, INFINITY);
}

Array Sum(Array a, const Array& b) {
  for (size_t i = 0; i < a.values.size(); ++i) a.values[i] += b.values[i];
  return a;
}

// Runs `module` on `input` and compares with `expected`.
void ExpectMatches(const IRModule& module, const Tensor& input, const Array& expected) {
  std::vector<Tensor> outputs = backends::RunReference(module, {input});
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].shape(), expected.shape);
  Tensor want = Tensor::FromDoubles(expected.shape, DataType::kFloat32, expected.values);
  EXPECT_LT(ir::RelativeError(outputs[0], want), 1e-5);
  EXPECT_LT(ir::MaxAbsoluteError(outputs[0], want), 1e-4);
}

// ---- ResNet basic block ------------------------------------------------------------------

TEST(ResNetBasicBlock, DefaultConfigHasDocumentedStructure) {
  IRModule module = ResNetBasicBlock();
  ExpectSignature(module, "data", {1, 64, 56, 56}, {1, 64, 56, 56});
  std::map<std::string, int> ops = CountOps(module.Get("main"));
  EXPECT_EQ(
      ops, (std::map<std::string, int>{{"conv2d", 2}, {"batch_norm", 2}, {"relu", 2}, {"add", 1}}));
}

TEST(ResNetBasicBlock, RunsOnTheReferenceInterpreter) {
  IRModule module = ResNetBasicBlock({.batch = 2, .channels = 8, .height = 10, .width = 6});
  ExpectSignature(module, "data", {2, 8, 10, 6}, {2, 8, 10, 6});
  ExpectRunsFinite(module, {2, 8, 10, 6});
}

TEST(ResNetBasicBlock, MatchesHandWrittenComputation) {
  IRModule module =
      ResNetBasicBlock({.batch = 1, .channels = 4, .height = 8, .width = 8, .seed = 3});
  const GraphFunction& f = module.Get("main");
  Tensor input = Tensor::Random(F32({1, 4, 8, 8}), 11);
  Array data = FromTensor(input);
  Array x = Convolve(data, ConstantData(f, "conv1_weight"), 4, 3, 1, 1);
  x = Relu(BatchNorm(x, f, "bn1"));
  x = Convolve(x, ConstantData(f, "conv2_weight"), 4, 3, 1, 1);
  x = Relu(Sum(BatchNorm(x, f, "bn2"), data));
  ExpectMatches(module, input, x);
}

TEST(ResNetBasicBlock, SeedDeterminesTheWeights) {
  ResNetBlockConfig config{.channels = 4, .height = 8, .width = 8, .seed = 5};
  std::vector<double> a = ConstantData(ResNetBasicBlock(config).Get("main"), "conv1_weight");
  std::vector<double> b = ConstantData(ResNetBasicBlock(config).Get("main"), "conv1_weight");
  config.seed = 6;
  std::vector<double> c = ConstantData(ResNetBasicBlock(config).Get("main"), "conv1_weight");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Weights stay within ±1/sqrt(fan_in) and different weights are not copies of each other.
  for (double v : a) EXPECT_LE(std::abs(v), 1.0 / 6.0);
  EXPECT_NE(a, ConstantData(ResNetBasicBlock(config).Get("main"), "conv2_weight"));
}

TEST(ResNetBasicBlock, RejectsNonPositiveSizes) {
  try {
    ResNetBasicBlock({.channels = 0});
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("channels must be positive"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ResNetBasicBlock({.height = -1}), ir::Error);
}

// ---- ResNet bottleneck -------------------------------------------------------------------

TEST(ResNetBottleneck, DefaultConfigHasDocumentedStructure) {
  IRModule module = ResNetBottleneck();
  ExpectSignature(module, "data", {1, 256, 56, 56}, {1, 256, 56, 56});
  EXPECT_EQ(
      CountOps(module.Get("main")),
      (std::map<std::string, int>{{"conv2d", 3}, {"batch_norm", 3}, {"relu", 3}, {"add", 1}}));
}

TEST(ResNetBottleneck, RunsOnTheReferenceInterpreter) {
  IRModule module =
      ResNetBottleneck({.batch = 2, .in_channels = 16, .mid_channels = 4, .height = 7, .width = 9});
  ExpectSignature(module, "data", {2, 16, 7, 9}, {2, 16, 7, 9});
  ExpectRunsFinite(module, {2, 16, 7, 9});
}

TEST(ResNetBottleneck, MatchesHandWrittenComputation) {
  IRModule module =
      ResNetBottleneck({.in_channels = 8, .mid_channels = 4, .height = 6, .width = 5, .seed = 9});
  const GraphFunction& f = module.Get("main");
  Tensor input = Tensor::Random(F32({1, 8, 6, 5}), 12);
  Array data = FromTensor(input);
  Array x = Relu(BatchNorm(Convolve(data, ConstantData(f, "conv1_weight"), 4, 1, 1, 1), f, "bn1"));
  x = Relu(BatchNorm(Convolve(x, ConstantData(f, "conv2_weight"), 4, 3, 1, 1), f, "bn2"));
  x = BatchNorm(Convolve(x, ConstantData(f, "conv3_weight"), 8, 1, 1, 1), f, "bn3");
  ExpectMatches(module, input, Relu(Sum(x, data)));
}

TEST(ResNetBottleneck, RejectsNonPositiveSizes) {
  EXPECT_THROW(ResNetBottleneck({.mid_channels = 0}), ir::Error);
  EXPECT_THROW(ResNetBottleneck({.batch = 0}), ir::Error);
}

// ---- MobileNetV2 inverted residual --------------------------------------------------------

TEST(MobileNetV2InvertedResidual, DefaultConfigHasDocumentedStructure) {
  IRModule module = MobileNetV2InvertedResidual();
  ExpectSignature(module, "data", {1, 32, 56, 56}, {1, 32, 56, 56});
  const GraphFunction& f = module.Get("main");
  EXPECT_EQ(CountOps(f), (std::map<std::string, int>{
                             {"conv2d", 3}, {"batch_norm", 3}, {"clip", 2}, {"add", 1}}));
  ir::ValueId depthwise = f.Find("depthwise");
  ASSERT_GE(depthwise, 0);
  EXPECT_EQ(f.node(depthwise).attrs.GetInt("groups"), 32 * 6);
  EXPECT_EQ(f.type_of(f.Find("depthwise_weight")), ir::Type(F32({192, 1, 3, 3})));
}

TEST(MobileNetV2InvertedResidual, StrideTwoOrChannelChangeDropsTheResidual) {
  IRModule strided = MobileNetV2InvertedResidual(
      {.in_channels = 16, .out_channels = 16, .stride = 2, .height = 9, .width = 8});
  ExpectSignature(strided, "data", {1, 16, 9, 8}, {1, 16, 5, 4});
  EXPECT_EQ(CountOps(strided.Get("main")).count("add"), 0u);

  IRModule widened =
      MobileNetV2InvertedResidual({.in_channels = 16, .out_channels = 24, .height = 8, .width = 8});
  ExpectSignature(widened, "data", {1, 16, 8, 8}, {1, 24, 8, 8});
  EXPECT_EQ(CountOps(widened.Get("main")).count("add"), 0u);

  IRModule no_expand = MobileNetV2InvertedResidual(
      {.in_channels = 8, .out_channels = 8, .expansion = 1, .height = 8, .width = 8});
  EXPECT_EQ(
      CountOps(no_expand.Get("main")),
      (std::map<std::string, int>{{"conv2d", 2}, {"batch_norm", 2}, {"clip", 1}, {"add", 1}}));
}

TEST(MobileNetV2InvertedResidual, RunsOnTheReferenceInterpreter) {
  IRModule module = MobileNetV2InvertedResidual(
      {.batch = 2, .in_channels = 8, .out_channels = 8, .expansion = 3, .height = 6, .width = 7});
  ExpectRunsFinite(module, {2, 8, 6, 7});
  ExpectRunsFinite(MobileNetV2InvertedResidual({.in_channels = 4,
                                                .out_channels = 12,
                                                .expansion = 2,
                                                .stride = 2,
                                                .height = 7,
                                                .width = 7}),
                   {1, 12, 4, 4});
}

// The independent computation of the block for any config.
Array InvertedResidual(const GraphFunction& f, const Array& data,
                       const InvertedResidualConfig& config) {
  int64_t hidden = config.in_channels * config.expansion;
  Array x = data;
  if (config.expansion > 1) {
    x = Convolve(x, ConstantData(f, "expand_weight"), hidden, 1, 1, 1);
    x = ClampBelowAbove(BatchNorm(x, f, "expand_bn"), 0.0, 6.0);
  }
  x = Convolve(x, ConstantData(f, "depthwise_weight"), hidden, 3, config.stride, hidden);
  x = ClampBelowAbove(BatchNorm(x, f, "depthwise_bn"), 0.0, 6.0);
  x = Convolve(x, ConstantData(f, "project_weight"), config.out_channels, 1, 1, 1);
  x = BatchNorm(x, f, "project_bn");
  if (config.stride == 1 && config.in_channels == config.out_channels) x = Sum(x, data);
  return x;
}

TEST(MobileNetV2InvertedResidual, MatchesHandWrittenComputation) {
  for (InvertedResidualConfig config : {InvertedResidualConfig{.in_channels = 4,
                                       .out_channels = 4,
                                       .expansion = 3,
                                       .height = 6,
                                       .width = 6,
                                       .seed = 2},
                                        InvertedResidualConfig{.in_channels = 4,
                                        .out_channels = 6,
                                        .expansion = 2,
                                        .stride = 2,
                                        .height = 7,
                                        .width = 6,
                                        .seed = 4}}) {
    SCOPED_TRACE(config.stride);
    IRModule module = MobileNetV2InvertedResidual(config);
    // Inputs up to ±8 so that some activations reach the relu6 upper clamp.
    Tensor input =
        Tensor::Random(F32({1, config.in_channels, config.height, config.width}), 13, -8.0, 8.0);
    ExpectMatches(module, input, InvertedResidual(module.Get("main"), FromTensor(input), config));
  }
}

TEST(MobileNetV2InvertedResidual, RejectsBadStrideAndSizes) {
  try {
    MobileNetV2InvertedResidual({.stride = 3});
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("stride must be 1 or 2 (got 3)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(MobileNetV2InvertedResidual({.expansion = 0}), ir::Error);
  EXPECT_THROW(MobileNetV2InvertedResidual({.out_channels = -4}), ir::Error);
}

// ---- BERT encoder layer ------------------------------------------------------------------

TEST(BertEncoderLayer, DefaultConfigHasDocumentedStructure) {
  IRModule module = BertEncoderLayer();
  ExpectSignature(module, "hidden_states", {1, 128, 768}, {1, 128, 768});
  EXPECT_EQ(CountOps(module.Get("main")), (std::map<std::string, int>{{"dense", 6},
                                                                      {"add", 8},
                                                                      {"batch_matmul", 2},
                                                                      {"multiply", 1},
                                                                      {"softmax", 1},
                                                                      {"layer_norm", 2},
                                                                      {"gelu", 1},
                                                                      {"reshape", 8},
                                                                      {"transpose", 4}}));
  const GraphFunction& f = module.Get("main");
  EXPECT_EQ(f.type_of(f.Find("scores")), ir::Type(F32({12, 128, 128})));
  EXPECT_EQ(f.type_of(f.Find("ffn1")), ir::Type(F32({1, 128, 3072})));
}

TEST(BertEncoderLayer, RunsOnTheReferenceInterpreter) {
  IRModule module = BertEncoderLayer({.batch = 2, .seq = 5, .hidden = 16, .heads = 4, .ffn = 32});
  ExpectSignature(module, "hidden_states", {2, 5, 16}, {2, 5, 16});
  ExpectRunsFinite(module, {2, 5, 16});
}

// Row-major matrix [rows, cols].
struct Matrix {
  int64_t rows, cols;
  std::vector<double> values;
  double& at(int64_t r, int64_t c) { return values[static_cast<size_t>(r * cols + c)]; }
  double at(int64_t r, int64_t c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

// x [n, k] times weight [o, k] transposed, plus bias [o].
Matrix Dense(const Matrix& x, const GraphFunction& f, const std::string& name) {
  std::vector<double> weight = ConstantData(f, name + "_weight");
  std::vector<double> bias = ConstantData(f, name + "_bias");
  int64_t out = static_cast<int64_t>(bias.size());
  Matrix y{x.rows, out, std::vector<double>(x.rows * out)};
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias[o];
      for (int64_t k = 0; k < x.cols; ++k) sum += x.at(r, k) * weight[o * x.cols + k];
      y.at(r, o) = sum;
    }
  return y;
}

Matrix AddResidualAndNormalize(Matrix x, const Matrix& residual, const GraphFunction& f,
                               const std::string& name) {
  std::vector<double> gamma = ConstantData(f, name + "_gamma");
  std::vector<double> beta = ConstantData(f, name + "_beta");
  for (int64_t r = 0; r < x.rows; ++r) {
    double mean = 0, variance = 0;
    for (int64_t c = 0; c < x.cols; ++c) mean += (x.at(r, c) += residual.at(r, c));
    mean /= static_cast<double>(x.cols);
    for (int64_t c = 0; c < x.cols; ++c) variance += std::pow(x.at(r, c) - mean, 2);
    variance /= static_cast<double>(x.cols);
    for (int64_t c = 0; c < x.cols; ++c) {
      x.at(r, c) = (x.at(r, c) - mean) / std::sqrt(variance + 1e-12) * gamma[c] + beta[c];
    }
  }
  return x;
}

// One encoder layer over a single sequence [seq, hidden], attention written per head.
Matrix EncoderLayer(const Matrix& x, const GraphFunction& f, int64_t heads) {
  int64_t seq = x.rows, hidden = x.cols, d = hidden / heads;
  Matrix q = Dense(x, f, "query"), k = Dense(x, f, "key"), v = Dense(x, f, "value");
  Matrix context{seq, hidden, std::vector<double>(seq * hidden, 0.0)};
  for (int64_t head = 0; head < heads; ++head) {
    int64_t base = head * d;
    for (int64_t i = 0; i < seq; ++i) {
      std::vector<double> p(seq);
      double largest = -INFINITY, total = 0;
      for (int64_t j = 0; j < seq; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += q.at(i, base + e) * k.at(j, base + e);
        p[j] = dot / std::sqrt(static_cast<double>(d));
        largest = std::max(largest, p[j]);
      }
      for (int64_t j = 0; j < seq; ++j) total += (p[j] = std::exp(p[j] - largest));
      for (int64_t j = 0; j < seq; ++j)
        for (int64_t e = 0; e < d; ++e) context.at(i, base + e) += p[j] / total * v.at(j, base + e);
    }
  }
  Matrix attention = AddResidualAndNormalize(Dense(context, f, "output"), x, f, "attention_norm");
  Matrix inner = Dense(attention, f, "ffn1");
  for (double& value : inner.values) value = 0.5 * value * (1.0 + std::erf(value / std::sqrt(2.0)));
  return AddResidualAndNormalize(Dense(inner, f, "ffn2"), attention, f, "output_norm");
}

TEST(BertEncoderLayer, MatchesHandWrittenAttention) {
  // heads = 1 is plain single-head attention; heads = 2 also checks the head split and merge.
  for (int64_t heads : {1, 2}) {
    SCOPED_TRACE(heads);
    BertLayerConfig config{.batch = 2, .seq = 4, .hidden = 8, .heads = heads, .ffn = 16, .seed = 1};
    IRModule module = BertEncoderLayer(config);
    const GraphFunction& f = module.Get("main");
    // Inputs up to ±3 so that the attention probabilities are far from uniform.
    Tensor input = Tensor::Random(F32({2, 4, 8}), 21, -3.0, 3.0);
    std::vector<double> in = input.ToDoubles();
    Array expected{{2, 4, 8}, {}};
    for (int64_t b = 0; b < config.batch; ++b) {
      Matrix x{4, 8, std::vector<double>(in.begin() + b * 32, in.begin() + (b + 1) * 32)};
      Matrix y = EncoderLayer(x, f, heads);
      expected.values.insert(expected.values.end(), y.values.begin(), y.values.end());
    }
    ExpectMatches(module, input, expected);
  }
}

TEST(BertEncoderLayer, RejectsInvalidConfigs) {
  try {
    BertEncoderLayer({.hidden = 768, .heads = 5});
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("heads (5) must divide hidden (768)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(BertEncoderLayer({.seq = 0}), ir::Error);
  EXPECT_THROW(BertEncoderLayer({.heads = 0}), ir::Error);
  EXPECT_THROW(BertEncoderLayer({.ffn = -1}), ir::Error);
}

}  // namespace
}  // namespace tandem::frontend
