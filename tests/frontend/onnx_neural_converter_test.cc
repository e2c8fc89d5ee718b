// Tests of the converters of ONNX neural-network ops (convolution, dense algebra, normalization,
// pooling, elementwise math): small models built with the protobuf API, imported, run on the
// reference interpreter and compared with values computed independently in this file.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Shape;
using ir::Tensor;
using testing::CountCalls;
using testing::CountOp;
using testing::ExpectError;
using testing::ExpectNear;
using testing::FloatAttr;
using testing::FloatsAttr;
using testing::ImportAndRun;
using testing::IntAttr;
using testing::IntsAttr;
using testing::OnnxModel;
using testing::StringAttr;

Tensor Random(const Shape& shape, uint64_t seed) {
  return Tensor::Random(ir::TensorType{shape, DataType::kFloat32, ""}, seed);
}

Tensor Ints(const std::vector<int64_t>& values) {
  return Tensor::FromInt64s({static_cast<int64_t>(values.size())}, values);
}

// Direct 2-D convolution of x [N,C,H,W] with w [O,C,kH,kW], explicit padding (top, left,
// bottom, right are pads[0..3]), stride s and bias b.
std::vector<double> NaiveConv2d(const Tensor& x, const Tensor& w, const Tensor& b,
                                const std::vector<int64_t>& pads, int64_t s, Shape* out_shape) {
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t o = w.shape()[0], kh = w.shape()[2], kw = w.shape()[3];
  int64_t oh = (h + pads[0] + pads[2] - kh) / s + 1, ow = (wd + pads[1] + pads[3] - kw) / s + 1;
  *out_shape = {n, o, oh, ow};
  std::vector<double> out;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t io = 0; io < o; ++io)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double sum = b.GetDouble(io);
          for (int64_t ic = 0; ic < c; ++ic)
            for (int64_t dy = 0; dy < kh; ++dy)
              for (int64_t dz = 0; dz < kw; ++dz) {
                int64_t iy = y * s + dy - pads[0], iz = z * s + dz - pads[1];
                if (iy < 0 || iy >= h || iz < 0 || iz >= wd) continue;
                sum += x.GetDouble(((in * c + ic) * h + iy) * wd + iz) *
                       w.GetDouble(((io * c + ic) * kh + dy) * kw + dz);
              }
          out.push_back(sum);
        }
  return out;
}

TEST(OnnxNeuralConvert, ConvSameUpperWithBias) {
  Tensor x = Random({1, 2, 6, 5}, 1), w = Random({3, 2, 3, 3}, 2), b = Random({3}, 3);
  for (const std::string auto_pad : {"SAME_UPPER", "SAME_LOWER"}) {
    OnnxModel model;
    model.Input("x", {1, 2, 6, 5}).Initializer("w", w).Initializer("b", b);
    model
        .Node("Conv", {"x", "w", "b"}, {"y"},
              {StringAttr("auto_pad", auto_pad), IntsAttr("strides", {2, 2}),
               IntsAttr("kernel_shape", {3, 3})})
        .Output("y");
    // Output extents ceil(6/2)=3, ceil(5/2)=3; total padding 1 (rows) and 2 (cols): the odd
    // row goes to the bottom for SAME_UPPER and to the top for SAME_LOWER.
    std::vector<int64_t> pads = auto_pad == "SAME_UPPER" ? std::vector<int64_t>{0, 1, 1, 1}
                                                         : std::vector<int64_t>{1, 1, 0, 1};
    Shape shape;
    std::vector<double> expected = NaiveConv2d(x, w, b, pads, 2, &shape);
    EXPECT_EQ(shape, (Shape{1, 3, 3, 3}));
    ExpectNear(ImportAndRun(model, {x})[0], shape, expected);
  }
}

TEST(OnnxNeuralConvert, ConvExplicitPadsAndGroups) {
  Tensor x = Random({1, 4, 5, 5}, 4), w = Random({4, 2, 3, 3}, 5);
  OnnxModel model;
  model.Input("x", {1, 4, 5, 5}).Initializer("w", w);
  model.Node("Conv", {"x", "w"}, {"y"}, {IntsAttr("pads", {1, 0, 1, 2}), IntAttr("group", 2)})
      .Output("y");
  Tensor y = ImportAndRun(model, {x})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 4, 5, 5}));
  // Group g uses input channels 2g, 2g+1 for output channels 2g, 2g+1.
  for (int64_t g = 0; g < 2; ++g) {
    Tensor xg({1, 2, 5, 5}, DataType::kFloat32), wg({2, 2, 3, 3}, DataType::kFloat32);
    for (int64_t i = 0; i < 50; ++i) xg.SetDouble(i, x.GetDouble(g * 50 + i));
    for (int64_t i = 0; i < 36; ++i) wg.SetDouble(i, w.GetDouble(g * 36 + i));
    Shape shape;
    std::vector<double> expected =
        NaiveConv2d(xg, wg, Tensor({2}, DataType::kFloat32), {1, 0, 1, 2}, 1, &shape);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(y.GetDouble(g * 50 + static_cast<int64_t>(i)), expected[i], 1e-5);
    }
  }
}

// alpha * A' B' + beta * C with A [M,K] (or [K,M] when trans_a) and B [K,N] (or [N,K]).
std::vector<double> NaiveGemm(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a,
                              bool trans_b, double alpha, double beta, int64_t m, int64_t k,
                              int64_t n) {
  std::vector<double> out;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += a.GetDouble(trans_a ? p * m + i : i * k + p) *
               b.GetDouble(trans_b ? j * k + p : p * n + j);
      }
      out.push_back(alpha * sum + beta * c.GetDouble(j));  // c is [N], broadcast over rows
    }
  return out;
}

TEST(OnnxNeuralConvert, GemmWithTransposesAlphaAndBeta) {
  const int64_t m = 3, k = 4, n = 5;
  Tensor a = Random({k, m}, 6), c = Random({n}, 8);
  for (bool constant_b : {true, false}) {
    for (bool trans_b : {true, false}) {
      Tensor b = Random(trans_b ? Shape{n, k} : Shape{k, n}, 7);
      OnnxModel model;
      model.Input("a", {k, m});
      if (constant_b) {
        model.Initializer("b", b);
      } else {
        model.Input("b", b.shape());
      }
      model.Initializer("c", c);
      model
          .Node("Gemm", {"a", "b", "c"}, {"y"},
                {IntAttr("transA", 1), IntAttr("transB", trans_b ? 1 : 0), FloatAttr("alpha", 0.5f),
                 FloatAttr("beta", 2.0f)})
          .Output("y");
      ir::IRModule module = model.Import();
      // A constant B becomes a dense layer with its weight laid out [N, K].
      EXPECT_EQ(CountOp(module, "dense"), constant_b ? 1 : 0);
      EXPECT_EQ(CountOp(module, "matmul"), constant_b ? 0 : 1);
      std::vector<Tensor> inputs = {a};
      if (!constant_b) inputs.push_back(b);
      ExpectNear(backends::RunReference(module, inputs)[0], {m, n},
                 NaiveGemm(a, b, c, true, trans_b, 0.5, 2.0, m, k, n));
    }
  }
}

TEST(OnnxNeuralConvert, MatMulWithConstantWeightBecomesDense) {
  Tensor x = Random({2, 3, 4}, 9), w = Random({4, 5}, 10);
  OnnxModel model;
  model.Input("x", {2, 3, 4}).Initializer("w", w).Node("MatMul", {"x", "w"}, {"y"}).Output("y");
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountOp(module, "dense"), 1);
  std::vector<double> expected;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < 5; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < 4; ++p) sum += x.GetDouble(r * 4 + p) * w.GetDouble(p * 5 + j);
      expected.push_back(sum);
    }
  ExpectNear(backends::RunReference(module, {x})[0], {2, 3, 5}, expected);
}

TEST(OnnxNeuralConvert, ClipBoundsFromConstantInputs) {
  Tensor x = Tensor::FromFloats({5}, {-3, -0.5f, 0.25f, 2, 9});
  OnnxModel model;
  model.Input("x", {5}).Initializer("lo", Tensor::FromFloats({}, {-1}));
  model.Node("Constant", {}, {"hi"}, {FloatAttr("value_float", 6.0f)});
  model.Node("Clip", {"x", "lo", "hi"}, {"y"}).Node("Clip", {"x", "", "hi"}, {"z"});
  model.Output("y").Output("z");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  ExpectNear(out[0], {5}, {-1, -0.5, 0.25, 2, 6});
  ExpectNear(out[1], {5}, {-3, -0.5, 0.25, 2, 6});

  OnnxModel dynamic;  // a bound computed by the graph cannot become an attribute
  dynamic.Input("x", {5}).Input("lo", {});
  dynamic.Node("Clip", {"x", "lo"}, {"y"}, {}, "clip_node").Output("y");
  ExpectError([&] { dynamic.Import(); }, {"clip_node", "Clip", "min", "import time"});
}

TEST(OnnxNeuralConvert, BatchNormalizationAndRelu) {
  Tensor x = Random({1, 2, 2, 2}, 16);
  Tensor scale = Tensor::FromFloats({2}, {0.5f, 2}), bias = Tensor::FromFloats({2}, {0.1f, -0.2f});
  Tensor mean = Tensor::FromFloats({2}, {0.3f, -0.1f}),
         var = Tensor::FromFloats({2}, {1.5f, 0.25f});
  OnnxModel model;
  model.Input("x", {1, 2, 2, 2}).Initializer("s", scale).Initializer("b", bias);
  model.Initializer("m", mean).Initializer("v", var);
  model.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"n"}, {FloatAttr("epsilon", 1e-3f)});
  model.Node("Relu", {"n"}, {"y"}).Output("y");
  std::vector<double> expected;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 4; ++i) {
      double v = (x.GetDouble(c * 4 + i) - mean.GetDouble(c)) /
                     std::sqrt(var.GetDouble(c) + 1e-3f) * scale.GetDouble(c) +
                 bias.GetDouble(c);
      expected.push_back(std::max(v, 0.0));
    }
  ExpectNear(ImportAndRun(model, {x})[0], {1, 2, 2, 2}, expected);
}

std::vector<double> SoftmaxRows(const std::vector<double>& v, size_t row) {
  std::vector<double> out(v.size());
  for (size_t start = 0; start < v.size(); start += row) {
    double total = 0;
    for (size_t i = 0; i < row; ++i) total += std::exp(v[start + i]);
    for (size_t i = 0; i < row; ++i) out[start + i] = std::exp(v[start + i]) / total;
  }
  return out;
}

TEST(OnnxNeuralConvert, SoftmaxAxisSemanticsDependOnOpset) {
  Tensor x = Random({2, 3, 2}, 17);
  // Opset 12: axis 1 normalizes over the flattened axes 1 and 2 (rows of 6).
  OnnxModel old(12);
  old.Input("x", {2, 3, 2}).Node("Softmax", {"x"}, {"y"}, {IntAttr("axis", 1)}).Output("y");
  ExpectNear(ImportAndRun(old, {x})[0], {2, 3, 2}, SoftmaxRows(x.ToDoubles(), 6));
  // Opset 13: the default axis -1 normalizes over the last axis alone (rows of 2).
  OnnxModel now(13);
  now.Input("x", {2, 3, 2}).Node("Softmax", {"x"}, {"y"}).Output("y");
  ExpectNear(ImportAndRun(now, {x})[0], {2, 3, 2}, SoftmaxRows(x.ToDoubles(), 2));
}

TEST(OnnxNeuralConvert, PoolingWithPadsAndOneDimensional) {
  Tensor x = Random({1, 1, 4, 4}, 18);
  auto at = [&](int64_t r, int64_t c) { return x.GetDouble(r * 4 + c); };
  OnnxModel model;
  model.Input("x", {1, 1, 4, 4});
  model.Node("MaxPool", {"x"}, {"m"},
             {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}),
              IntsAttr("pads", {1, 1, 1, 1})});
  model.Node("AveragePool", {"x"}, {"a"},
             {IntsAttr("kernel_shape", {2, 2}), IntsAttr("strides", {2, 2})});
  model.Node("GlobalAveragePool", {"x"}, {"g"}).Output("m").Output("a").Output("g");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  std::vector<double> max_expected, avg_expected;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 2; ++c) {
      double best = -1e30;
      for (int64_t dr = -1; dr <= 1; ++dr)
        for (int64_t dc = -1; dc <= 1; ++dc) {
          int64_t rr = 2 * r + dr, cc = 2 * c + dc;
          if (rr >= 0 && rr < 4 && cc >= 0 && cc < 4) best = std::max(best, at(rr, cc));
        }
      max_expected.push_back(best);
      avg_expected.push_back((at(2 * r, 2 * c) + at(2 * r + 1, 2 * c) + at(2 * r, 2 * c + 1) +
                              at(2 * r + 1, 2 * c + 1)) /
                             4);
    }
  ExpectNear(out[0], {1, 1, 2, 2}, max_expected);
  ExpectNear(out[1], {1, 1, 2, 2}, avg_expected);
  double total = 0;
  for (double v : x.ToDoubles()) total += v;
  ExpectNear(out[2], {1, 1, 1, 1}, {total / 16});

  Tensor line = Tensor::FromFloats({1, 1, 5}, {1, 5, 2, 4, 3});
  OnnxModel one_d;
  one_d.Input("x", {1, 1, 5})
      .Node("MaxPool", {"x"}, {"y"}, {IntsAttr("kernel_shape", {2})})
      .Output("y");
  ExpectNear(ImportAndRun(one_d, {line})[0], {1, 1, 4}, {5, 5, 4, 4});
}

TEST(OnnxNeuralConvert, LayerNormalizationGeluAndErf) {
  Tensor x = Random({2, 4}, 20), scale = Random({4}, 21), bias = Random({4}, 22);
  OnnxModel model(20);
  model.Input("x", {2, 4}).Initializer("s", scale).Initializer("b", bias);
  model.Node("LayerNormalization", {"x", "s", "b"}, {"n"}, {FloatAttr("epsilon", 1e-5f)});
  model.Node("Gelu", {"n"}, {"g"}).Node("Erf", {"x"}, {"e"}).Output("g").Output("e");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  std::vector<double> norm_gelu, erf;
  for (int64_t r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 4; ++i) mean += x.GetDouble(r * 4 + i) / 4;
    for (int64_t i = 0; i < 4; ++i) var += std::pow(x.GetDouble(r * 4 + i) - mean, 2) / 4;
    for (int64_t i = 0; i < 4; ++i) {
      double n = (x.GetDouble(r * 4 + i) - mean) / std::sqrt(var + 1e-5) * scale.GetDouble(i) +
                 bias.GetDouble(i);
      norm_gelu.push_back(0.5 * n * (1 + std::erf(n / std::sqrt(2.0))));
      erf.push_back(std::erf(x.GetDouble(r * 4 + i)));
    }
  }
  ExpectNear(out[0], {2, 4}, norm_gelu, 1e-4);
  ExpectNear(out[1], {2, 4}, erf);
}

TEST(OnnxNeuralConvert, ElementwiseArithmetic) {
  Tensor x = Tensor::FromFloats({4}, {1, 2, 4, 8});
  OnnxModel model;
  model.Input("x", {4}).Initializer("two", Tensor::FromFloats({}, {2}));
  model.Initializer("three", Tensor::FromInt64s({}, {3}));
  model.Node("Sub", {"x", "two"}, {"a"}).Node("Div", {"a", "two"}, {"b"});
  model.Node("Pow", {"x", "three"}, {"c"}).Node("Neg", {"x"}, {"d"});
  model.Node("Reciprocal", {"x"}, {"e"}).Node("Sqrt", {"x"}, {"f"});
  model.Node("Sigmoid", {"x"}, {"g"}).Node("Tanh", {"x"}, {"h"}).Node("Exp", {"b"}, {"i"});
  for (const char* name : {"b", "c", "d", "e", "f", "g", "h", "i"}) model.Output(name);
  std::vector<Tensor> out = ImportAndRun(model, {x});
  std::vector<double> v = {1, 2, 4, 8};
  auto map = [&](auto f) {
    std::vector<double> r;
    for (double e : v) r.push_back(f(e));
    return r;
  };
  ExpectNear(out[0], {4}, map([](double e) { return (e - 2) / 2; }));
  ExpectNear(out[1], {4}, map([](double e) { return e * e * e; }));
  ExpectNear(out[2], {4}, map([](double e) { return -e; }));
  ExpectNear(out[3], {4}, map([](double e) { return 1 / e; }));
  ExpectNear(out[4], {4}, map([](double e) { return std::sqrt(e); }));
  ExpectNear(out[5], {4}, map([](double e) { return 1 / (1 + std::exp(-e)); }));
  ExpectNear(out[6], {4}, map([](double e) { return std::tanh(e); }));
  ExpectNear(out[7], {4}, map([](double e) { return std::exp((e - 2) / 2); }), 1e-4);
}

TEST(OnnxNeuralConvert, ConvTransposeMatchesScatteredSum) {
  Tensor x = Random({1, 1, 2, 2}, 23), w = Random({1, 2, 2, 2}, 24);
  OnnxModel model;
  model.Input("x", {1, 1, 2, 2}).Initializer("w", w);
  model.Node("ConvTranspose", {"x", "w"}, {"y"}, {IntsAttr("strides", {2, 2})}).Output("y");
  // Each input element scatters x * w[o] into a 2x2 block of the [1,2,4,4] output.
  std::vector<double> expected(32, 0.0);
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t b = 0; b < 2; ++b) {
            expected[static_cast<size_t>(o * 16 + (2 * i + a) * 4 + 2 * j + b)] +=
                x.GetDouble(i * 2 + j) * w.GetDouble(o * 4 + a * 2 + b);
          }
  ExpectNear(ImportAndRun(model, {x})[0], {1, 2, 4, 4}, expected);
}

TEST(OnnxNeuralConvert, Conv1dWithDilationAndConv3d) {
  Tensor x = Tensor::FromFloats({1, 1, 5}, {1, 2, 3, 4, 5}),
         w = Tensor::FromFloats({1, 1, 2}, {10, 1});
  OnnxModel model;
  model.Input("x", {1, 1, 5}).Initializer("w", w);
  model.Node("Conv", {"x", "w"}, {"y"}, {IntsAttr("dilations", {2}), IntsAttr("pads", {1, 0})});
  model.Output("y");
  // y[i] = 10 * x[i - 1] + x[i + 1] over the input padded by one zero at the front.
  ExpectNear(ImportAndRun(model, {x})[0], {1, 1, 4}, {2, 13, 24, 35});

  Tensor cube = Random({1, 1, 2, 2, 2}, 30);
  OnnxModel three_d;
  three_d.Input("x", {1, 1, 2, 2, 2})
      .Initializer("w", Tensor::FromFloats({2, 1, 1, 1, 1}, {2, -1}));
  three_d.Initializer("b", Tensor::FromFloats({2}, {1, 0}));
  three_d.Node("Conv", {"x", "w", "b"}, {"y"}).Output("y");
  std::vector<double> expected;
  for (double v : cube.ToDoubles()) expected.push_back(2 * v + 1);
  for (double v : cube.ToDoubles()) expected.push_back(-v);
  ir::IRModule module = three_d.Import();
  EXPECT_EQ(CountOp(module, "conv3d"), 1);
  ExpectNear(backends::RunReference(module, {cube})[0], {1, 2, 2, 2, 2}, expected);
}

TEST(OnnxNeuralConvert, ConvTransposeSameUpperKeepsInputTimesStride) {
  Tensor x = Random({1, 1, 2, 2}, 31), w = Random({1, 1, 3, 3}, 32);
  OnnxModel model;
  model.Input("x", {1, 1, 2, 2}).Initializer("w", w);
  model
      .Node("ConvTranspose", {"x", "w"}, {"y"},
            {IntsAttr("strides", {2, 2}), StringAttr("auto_pad", "SAME_UPPER")})
      .Output("y");
  // The full output is 5x5; SAME_UPPER keeps 4x4 = input * stride, cropping the one extra row
  // and column at the end.
  std::vector<double> full(25, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < 3; ++b) {
          full[static_cast<size_t>((2 * i + a) * 5 + 2 * j + b)] +=
              x.GetDouble(i * 2 + j) * w.GetDouble(a * 3 + b);
        }
  std::vector<double> expected;
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 4; ++c) expected.push_back(full[r * 5 + c]);
  ExpectNear(ImportAndRun(model, {x})[0], {1, 1, 4, 4}, expected);
}

TEST(OnnxNeuralConvert, AveragePoolCountIncludePadAndGlobalMaxPool) {
  Tensor x = Tensor::FromFloats({1, 1, 2, 2}, {1, 2, 3, 4});
  OnnxModel model;
  model.Input("x", {1, 1, 2, 2});
  for (int64_t include : {0, 1}) {
    model.Node("AveragePool", {"x"}, {"a" + std::to_string(include)},
               {IntsAttr("kernel_shape", {2, 2}), IntsAttr("pads", {1, 1, 0, 0}),
                IntAttr("count_include_pad", include)});
    model.Output("a" + std::to_string(include));
  }
  model.Node("GlobalMaxPool", {"x"}, {"g"}).Output("g");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  // Windows over the input padded by a zero row on top and a zero column on the left.
  ExpectNear(out[0], {1, 1, 2, 2}, {1, 1.5, 2, 2.5});
  ExpectNear(out[1], {1, 1, 2, 2}, {0.25, 0.75, 1, 2.5});
  ExpectNear(out[2], {1, 1, 1, 1}, {4});
}

}  // namespace
}  // namespace tandem::frontend
