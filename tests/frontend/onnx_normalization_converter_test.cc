// Tests of the converters of InstanceNormalization, GroupNormalization, LRN and the
// com.microsoft normalizations (onnx_normalization_converters.cc): small models run on the
// reference interpreter against the formulas evaluated here.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::Tensor;
using testing::ExpectError;
using testing::ExpectNear;
using testing::FloatAttr;
using testing::ImportAndRun;
using testing::IntAttr;
using testing::OnnxModel;

// (v - mean) / sqrt(variance + epsilon) over `values[begin, begin + count)`, written to `out`.
void Normalize(const std::vector<double>& values, size_t begin, size_t count, double epsilon,
               std::vector<double>& out) {
  double mean = 0, variance = 0;
  for (size_t i = 0; i < count; ++i) mean += values[begin + i] / static_cast<double>(count);
  for (size_t i = 0; i < count; ++i) {
    double d = values[begin + i] - mean;
    variance += d * d / static_cast<double>(count);
  }
  for (size_t i = 0; i < count; ++i) {
    out[begin + i] = (values[begin + i] - mean) / std::sqrt(variance + epsilon);
  }
}

TEST(OnnxNormalizationConvert, InstanceNormalization) {
  const int64_t n = 2, c = 3, s = 4;
  Tensor x = Tensor::Random(ir::TensorType{{n, c, 2, 2}, ir::DataType::kFloat32, ""}, 3);
  std::vector<float> scale = {0.5f, -1.0f, 2.0f}, bias = {0.0f, 1.0f, -0.5f};
  OnnxModel model;
  model.Input("x", {n, c, 2, 2});
  model.Initializer("scale", Tensor::FromFloats({c}, scale));
  model.Initializer("bias", Tensor::FromFloats({c}, bias));
  model.Node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, {FloatAttr("epsilon", 0.01f)});
  model.Output("y");
  std::vector<double> v = x.ToDoubles(), expected(v.size());
  for (int64_t i = 0; i < n * c; ++i) Normalize(v, static_cast<size_t>(i * s), s, 0.01, expected);
  for (size_t i = 0; i < expected.size(); ++i) {
    size_t channel = (i / s) % c;
    expected[i] = expected[i] * scale[channel] + bias[channel];
  }
  ExpectNear(ImportAndRun(model, {x}).at(0), {n, c, 2, 2}, expected, 1e-4);
}

TEST(OnnxNormalizationConvert, GroupNormalizationPerGroupAndPerChannel) {
  const int64_t n = 2, c = 4, groups = 2, s = 3;
  Tensor x = Tensor::Random(ir::TensorType{{n, c, s}, ir::DataType::kFloat32, ""}, 5);
  std::vector<double> v = x.ToDoubles(), normalized(v.size());
  const size_t group_size = static_cast<size_t>(c / groups * s);
  for (size_t g = 0; g < static_cast<size_t>(n * groups); ++g) {
    Normalize(v, g * group_size, group_size, 1e-5, normalized);
  }
  for (int opset : {18, 21}) {
    SCOPED_TRACE(opset);
    // Opset 18: one scale and bias per group; 21: per channel.
    std::vector<float> scale =
        opset == 18 ? std::vector<float>{2, -1} : std::vector<float>{2, 3, -1, 0.5f};
    std::vector<float> bias =
        opset == 18 ? std::vector<float>{0.5f, 1} : std::vector<float>{0.5f, 0, 1, -1};
    OnnxModel model(opset);
    model.Input("x", {n, c, s});
    model.Initializer("scale", Tensor::FromFloats({static_cast<int64_t>(scale.size())}, scale));
    model.Initializer("bias", Tensor::FromFloats({static_cast<int64_t>(bias.size())}, bias));
    model.Node("GroupNormalization", {"x", "scale", "bias"}, {"y"},
               {IntAttr("num_groups", groups)});
    model.Output("y");
    std::vector<double> expected(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      size_t channel = (i / s) % c;
      size_t k = opset == 18 ? channel / static_cast<size_t>(c / groups) : channel;
      expected[i] = normalized[i] * scale[k] + bias[k];
    }
    ExpectNear(ImportAndRun(model, {x}).at(0), {n, c, s}, expected, 1e-4);
  }
  OnnxModel uneven(18);
  uneven.Input("x", {1, 3, 2});
  uneven.Initializer("scale", Tensor::FromFloats({2}, {1, 1}));
  uneven.Initializer("bias", Tensor::FromFloats({2}, {0, 0}));
  uneven.Node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, {IntAttr("num_groups", 2)});
  uneven.Output("y");
  ExpectError([&] { uneven.Import(); }, {"GroupNormalization", "num_groups", "3 channels"});
}

TEST(OnnxNormalizationConvert, LRNSumsSquaresOverNeighbouringChannels) {
  const int64_t c = 5, s = 2, size = 3;
  const double alpha = 0.5, beta = 0.75, bias = 2.0;
  Tensor x = Tensor::Random(ir::TensorType{{1, c, 1, s}, ir::DataType::kFloat32, ""}, 9, -2, 2);
  for (int64_t window : {size, int64_t{4}}) {
    SCOPED_TRACE(window);
    OnnxModel model;
    model.Input("x", {1, c, 1, s});
    model.Node(
        "LRN", {"x"}, {"y"},
        {IntAttr("size", window), FloatAttr("alpha", static_cast<float>(alpha)),
         FloatAttr("beta", static_cast<float>(beta)), FloatAttr("bias", static_cast<float>(bias))});
    model.Output("y");
    std::vector<double> v = x.ToDoubles(), expected;
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < s; ++p) {
        double square_sum = 0;
        for (int64_t k = ch - (window - 1) / 2; k <= ch + window / 2; ++k) {
          if (k >= 0 && k < c)
            square_sum += v[static_cast<size_t>(k * s + p)] * v[static_cast<size_t>(k * s + p)];
        }
        double value = v[static_cast<size_t>(ch * s + p)];
        expected.push_back(value /
                           std::pow(bias + alpha / static_cast<double>(window) * square_sum, beta));
      }
    }
    ExpectNear(ImportAndRun(model, {x}).at(0), {1, c, 1, s}, expected, 1e-5);
  }
}

OnnxModel MicrosoftNormalization(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::string& domain = "com.microsoft") {
  OnnxModel model;
  auto* entry = model.proto().add_opset_import();
  entry->set_domain("com.microsoft");
  entry->set_version(1);
  model.Input("x", {2, 4}).Input("skip", {2, 4});
  model.Initializer("gamma", Tensor::FromFloats({4}, {1, 2, 0.5f, -1}));
  model.Initializer("beta", Tensor::FromFloats({4}, {0, 0.25f, -0.5f, 1}));
  model.Initializer("bias", Tensor::FromFloats({4}, {0.1f, -0.2f, 0.3f, 0}));
  model.Node(op, inputs, outputs, {FloatAttr("epsilon", 1e-3f)});
  model.graph()->mutable_node(0)->set_domain(domain);
  for (const std::string& o : outputs) {
    if (!o.empty()) model.Output(o);
  }
  return model;
}

TEST(OnnxNormalizationConvert, MicrosoftLayerNormalizations) {
  Tensor x = Tensor::Random(ir::TensorType{{2, 4}, ir::DataType::kFloat32, ""}, 1);
  Tensor skip = Tensor::Random(ir::TensorType{{2, 4}, ir::DataType::kFloat32, ""}, 2);
  const double gamma[] = {1, 2, 0.5, -1}, beta[] = {0, 0.25, -0.5, 1}, bias[] = {0.1, -0.2, 0.3, 0};
  std::vector<double> sum(8), layer(8), rms(8);
  for (size_t i = 0; i < 8; ++i)
    sum[i] = x.GetDouble(static_cast<int64_t>(i)) + skip.GetDouble(static_cast<int64_t>(i)) +
             bias[i % 4];
  for (size_t row = 0; row < 2; ++row) {
    Normalize(sum, row * 4, 4, 1e-3, layer);
    double mean_square = 0;
    for (size_t i = 0; i < 4; ++i) mean_square += sum[row * 4 + i] * sum[row * 4 + i] / 4;
    for (size_t i = 0; i < 4; ++i) {
      layer[row * 4 + i] = layer[row * 4 + i] * gamma[i] + beta[i];
      rms[row * 4 + i] = sum[row * 4 + i] / std::sqrt(mean_square + 1e-3) * gamma[i];
    }
  }
  std::vector<Tensor> out = ImportAndRun(
      MicrosoftNormalization("SkipLayerNormalization", {"x", "skip", "gamma", "beta", "bias"},
                             {"y", "", "", "s"}),
      {x, skip});
  ExpectNear(out.at(0), {2, 4}, layer, 1e-4);
  ExpectNear(out.at(1), {2, 4}, sum, 1e-6);
  out = ImportAndRun(MicrosoftNormalization("SkipSimplifiedLayerNormalization",
                                            {"x", "skip", "gamma", "bias"}, {"y"}),
                     {x, skip});
  ExpectNear(out.at(0), {2, 4}, rms, 1e-4);
  // The plain ones normalize their first input; x + skip + bias is fed through an Add chain.
  for (const std::string domain : {"com.microsoft", ""}) {
    OnnxModel model =
        MicrosoftNormalization("SimplifiedLayerNormalization", {"x", "gamma"}, {"y"}, domain);
    std::vector<double> expected(8);
    for (size_t row = 0; row < 2; ++row) {
      double mean_square = 0;
      for (size_t i = 0; i < 4; ++i)
        mean_square += std::pow(x.GetDouble(static_cast<int64_t>(row * 4 + i)), 2) / 4;
      for (size_t i = 0; i < 4; ++i) {
        expected[row * 4 + i] = x.GetDouble(static_cast<int64_t>(row * 4 + i)) /
                                std::sqrt(mean_square + 1e-3) * gamma[i];
      }
    }
    ExpectNear(ImportAndRun(model, {x, skip}).at(0), {2, 4}, expected, 1e-4);
  }
  std::vector<double> plain(8), values = x.ToDoubles();
  for (size_t row = 0; row < 2; ++row) Normalize(values, row * 4, 4, 1e-3, plain);
  for (size_t i = 0; i < 8; ++i) plain[i] = plain[i] * gamma[i % 4] + beta[i % 4];
  out = ImportAndRun(MicrosoftNormalization("LayerNormalization", {"x", "gamma", "beta"}, {"y"}),
                     {x, skip});
  ExpectNear(out.at(0), {2, 4}, plain, 1e-4);

  OnnxModel statistics =
      MicrosoftNormalization("SkipLayerNormalization", {"x", "skip", "gamma"}, {"y", "mean"});
  ExpectError([&] { statistics.Import(); }, {"SkipLayerNormalization", "mean"});
}

}  // namespace
}  // namespace tandem::frontend
