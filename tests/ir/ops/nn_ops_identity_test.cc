// Neural-network ops: algebraic identities with random inputs. Each side of an identity is
// computed along a different path (another op, another layout, plain loops in the test), so a
// bug in one reference shows up as a mismatch.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/ir/nn_test_util.h"

namespace tandem::ir {
namespace {

using testing::Dot;
using testing::ExpectClose;
using testing::Permute;
using testing::RandomF64;
using testing::RunOp;
using Ints = std::vector<int64_t>;

// conv2d equals a matmul of the reshaped weight with the im2col matrix built here by loops.
TEST(ConvIdentity, Conv2dEqualsIm2colMatmul) {
  const int64_t n = 2, c = 3, h = 7, w = 6, o = 4, kh = 3, kw = 2;
  const Ints strides{2, 1}, padding{1, 0, 2, 1}, dilation{1, 2};
  Tensor x = RandomF64({n, c, h, w}, 11);
  Tensor weight = RandomF64({o, c, kh, kw}, 12);
  Tensor y = RunOp("conv2d", {x, weight},
                   {{"strides", strides}, {"padding", padding}, {"dilation", dilation}});
  const int64_t oh = (h + padding[0] + padding[2] - dilation[0] * (kh - 1) - 1) / strides[0] + 1;
  const int64_t ow = (w + padding[1] + padding[3] - dilation[1] * (kw - 1) - 1) / strides[1] + 1;
  ASSERT_EQ(y.shape(), (Shape{n, o, oh, ow}));

  Tensor columns(testing::F64({c * kh * kw, n * oh * ow}));
  for (int64_t ci = 0; ci < c; ++ci) {
    for (int64_t ki = 0; ki < kh; ++ki) {
      for (int64_t kj = 0; kj < kw; ++kj) {
        for (int64_t ni = 0; ni < n; ++ni) {
          for (int64_t yi = 0; yi < oh; ++yi) {
            for (int64_t xi = 0; xi < ow; ++xi) {
              int64_t row = yi * strides[0] + ki * dilation[0] - padding[0];
              int64_t col = xi * strides[1] + kj * dilation[1] - padding[1];
              bool inside = row >= 0 && row < h && col >= 0 && col < w;
              double value = inside ? x.GetDouble(((ni * c + ci) * h + row) * w + col) : 0.0;
              columns.SetDouble(
                  ((ci * kh + ki) * kw + kj) * (n * oh * ow) + (ni * oh + yi) * ow + xi, value);
            }
          }
        }
      }
    }
  }
  Tensor product = RunOp("matmul", {weight.Reshaped({o, c * kh * kw}), columns});
  // product is [O, N*OH*OW]; the convolution is [N, O, OH, OW].
  ExpectClose(Permute(y, {1, 0, 2, 3}).Reshaped({o, n * oh * ow}), product);
}

TEST(ConvIdentity, Nhwc2dEqualsTransposedNchw) {
  Tensor x = RandomF64({2, 5, 6, 7}, 21);
  Tensor weight = RandomF64({4, 5, 3, 3}, 22);
  Attrs attrs{{"strides", Ints{1, 2}}, {"padding", Ints{1, 1, 0, 2}}, {"dilation", Ints{2, 1}}};
  Tensor expected = Permute(RunOp("conv2d", {x, weight}, attrs), {0, 2, 3, 1});
  Tensor x_nhwc = Permute(x, {0, 2, 3, 1}).WithLayout("NHWC");
  Tensor w_hwio = Permute(weight, {2, 3, 1, 0});

  Attrs nhwc = attrs;
  nhwc.Set("data_layout", std::string("NHWC"));
  Tensor y = RunOp("conv2d", {x_nhwc, weight}, nhwc);
  EXPECT_EQ(y.type().layout, "NHWC");
  ExpectClose(y, expected);

  nhwc.Set("kernel_layout", std::string("HWIO"));
  ExpectClose(RunOp("conv2d", {x_nhwc, w_hwio}, nhwc), expected);

  Attrs hwio = attrs;
  hwio.Set("kernel_layout", std::string("HWIO"));
  ExpectClose(Permute(RunOp("conv2d", {x, w_hwio}, hwio), {0, 2, 3, 1}), expected);
}

// A grouped convolution equals the channel concatenation of one plain convolution per group.
void ExpectGroupedEqualsConcat(int64_t channels, int64_t out_channels, int64_t groups,
                               uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "channels " << channels << ", groups " << groups);
  const int64_t n = 2, h = 6, w = 5, k = 3;
  Tensor x = RandomF64({n, channels, h, w}, seed);
  Tensor weight = RandomF64({out_channels, channels / groups, k, k}, seed + 1);
  Attrs attrs{{"strides", Ints{2, 1}}, {"padding", Ints{1, 0, 1, 1}}};
  Attrs grouped = attrs;
  grouped.Set("groups", groups);
  Tensor y = RunOp("conv2d", {x, weight}, grouped);

  const int64_t group_in = channels / groups, group_out = out_channels / groups;
  const int64_t plane_in = h * w, kernel = group_in * k * k;
  Tensor expected(y.type());
  const int64_t plane_out = y.shape()[2] * y.shape()[3];
  for (int64_t g = 0; g < groups; ++g) {
    Tensor x_part(testing::F64({n, group_in, h, w}));
    for (int64_t ni = 0; ni < n; ++ni) {
      for (int64_t i = 0; i < group_in * plane_in; ++i) {
        x_part.SetDouble(ni * group_in * plane_in + i,
                         x.GetDouble((ni * channels + g * group_in) * plane_in + i));
      }
    }
    Tensor w_part(testing::F64({group_out, group_in, k, k}));
    for (int64_t i = 0; i < group_out * kernel; ++i) {
      w_part.SetDouble(i, weight.GetDouble(g * group_out * kernel + i));
    }
    Tensor part = RunOp("conv2d", {x_part, w_part}, attrs);
    for (int64_t ni = 0; ni < n; ++ni) {
      for (int64_t i = 0; i < group_out * plane_out; ++i) {
        expected.SetDouble((ni * out_channels + g * group_out) * plane_out + i,
                           part.GetDouble(ni * group_out * plane_out + i));
      }
    }
  }
  ExpectClose(y, expected);
}

TEST(ConvIdentity, GroupedEqualsConcatOfPerGroupConvolutions) {
  ExpectGroupedEqualsConcat(6, 9, 3, 31);
  ExpectGroupedEqualsConcat(4, 8, 4, 33);  // depthwise, channel multiplier 2
  ExpectGroupedEqualsConcat(5, 5, 5, 35);  // depthwise
}

TEST(ConvIdentity, Conv1dEqualsConv2dWithUnitHeight) {
  Tensor x = RandomF64({2, 4, 9}, 41);
  Tensor weight = RandomF64({6, 2, 3}, 42);
  Tensor y1 = RunOp("conv1d", {x, weight},
                    {{"strides", Ints{2}},
                     {"padding", Ints{1, 2}},
                     {"dilation", Ints{2}},
                     {"groups", int64_t{2}}});
  Tensor y2 = RunOp("conv2d", {x.Reshaped({2, 4, 1, 9}), weight.Reshaped({6, 2, 1, 3})},
                    {{"strides", Ints{1, 2}},
                     {"padding", Ints{0, 1, 0, 2}},
                     {"dilation", Ints{1, 2}},
                     {"groups", int64_t{2}}});
  ASSERT_EQ(y2.shape()[2], 1);
  ExpectClose(y1, y2.Reshaped({2, 6, y2.shape()[3]}));
}

TEST(ConvIdentity, Conv3dEqualsConv2dWithUnitDepth) {
  Tensor x = RandomF64({1, 3, 5, 6}, 43);
  Tensor weight = RandomF64({2, 3, 2, 3}, 44);
  Tensor y2 =
      RunOp("conv2d", {x, weight},
            {{"strides", Ints{2, 1}}, {"padding", Ints{0, 1, 1, 1}}, {"dilation", Ints{2, 1}}});
  Tensor y3 = RunOp("conv3d", {x.Reshaped({1, 3, 1, 5, 6}), weight.Reshaped({2, 3, 1, 2, 3})},
                    {{"strides", Ints{3, 2, 1}},
                     {"padding", Ints{0, 0, 1, 0, 1, 1}},
                     {"dilation", Ints{4, 2, 1}}});
  ExpectClose(y3.Reshaped(y2.shape()), y2);
}

// conv2d_transpose is the adjoint of conv2d with the same weight: <conv(x), r> = <x, conv^T(r)>.
TEST(ConvIdentity, TransposeIsTheAdjointOfConvolution) {
  struct Case {
    Shape x, weight;
    Ints strides, padding, dilation;
    int64_t groups;
  };
  std::vector<Case> cases = {
      {{2, 4, 7, 8}, {6, 2, 3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 1}, 2},
      {{1, 3, 5, 5}, {2, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {{1, 3, 9, 6}, {3, 1, 2, 3}, {3, 2}, {0, 2, 1, 0}, {1, 2}, 3},
  };
  uint64_t seed = 51;
  for (const Case& c : cases) {
    Tensor x = RandomF64(c.x, seed++);
    Tensor weight = RandomF64(c.weight, seed++);
    Attrs attrs{{"strides", c.strides},
                {"padding", c.padding},
                {"dilation", c.dilation},
                {"groups", c.groups}};
    Tensor y = RunOp("conv2d", {x, weight}, attrs);
    Tensor r = RandomF64(y.shape(), seed++);
    // The output_padding that makes conv2d_transpose give back the shape of x.
    Ints output_padding(2);
    for (size_t a = 0; a < 2; ++a) {
      int64_t base = (y.shape()[2 + a] - 1) * c.strides[a] - c.padding[a] - c.padding[2 + a] +
                     c.dilation[a] * (c.weight[2 + a] - 1) + 1;
      output_padding[a] = c.x[2 + a] - base;
    }
    attrs.Set("output_padding", output_padding);
    Tensor back = RunOp("conv2d_transpose", {r, weight}, attrs);
    ASSERT_EQ(back.shape(), x.shape());
    EXPECT_NEAR(Dot(y, r), Dot(x, back), 1e-10);
  }
}

TEST(MatmulIdentity, DenseEqualsMatmulWithTransposedWeight) {
  Tensor data = RandomF64({2, 3, 5}, 61);
  Tensor weight = RandomF64({4, 5}, 62);
  ExpectClose(RunOp("dense", {data, weight}), RunOp("matmul", {data, Permute(weight, {1, 0})}));
}

TEST(MatmulIdentity, BatchMatmulTransposeFlagsEqualExplicitTransposes) {
  Tensor a = RandomF64({3, 4, 5}, 71);
  Tensor b = RandomF64({3, 5, 6}, 72);
  Tensor expected = RunOp("batch_matmul", {a, b});
  ExpectClose(expected, RunOp("matmul", {a, b}));
  for (int64_t transpose_a : {0, 1}) {
    for (int64_t transpose_b : {0, 1}) {
      Tensor stored_a = transpose_a ? Permute(a, {0, 2, 1}) : a;
      Tensor stored_b = transpose_b ? Permute(b, {0, 2, 1}) : b;
      ExpectClose(RunOp("batch_matmul", {stored_a, stored_b},
                        {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}}),
                  expected);
    }
  }
  // A batch of one broadcasts like numpy matmul does.
  Tensor single = RandomF64({1, 5, 6}, 73);
  ExpectClose(RunOp("batch_matmul", {a, Permute(single, {0, 2, 1})}, {{"transpose_b", int64_t{1}}}),
              RunOp("matmul", {a, single}));
}

TEST(PoolIdentity, NhwcEqualsTransposedNchw) {
  Tensor x = RandomF64({2, 3, 7, 6}, 81);
  Tensor x_nhwc = Permute(x, {0, 2, 3, 1});
  Attrs attrs{{"pool_size", Ints{3, 2}},
              {"strides", Ints{2, 2}},
              {"padding", Ints{1, 0, 1, 1}},
              {"ceil_mode", int64_t{1}}};
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    Tensor expected = Permute(RunOp(op, {x}, attrs), {0, 2, 3, 1});
    Attrs nhwc = attrs;
    nhwc.Set("layout", std::string("NHWC"));
    Tensor y = RunOp(op, {x_nhwc}, nhwc);
    EXPECT_EQ(y.type().layout, "NHWC");
    ExpectClose(y, expected);
  }
  ExpectClose(RunOp("global_avg_pool2d", {x_nhwc}, {{"layout", std::string("NHWC")}}),
              Permute(RunOp("global_avg_pool2d", {x}), {0, 2, 3, 1}));
}

TEST(PoolIdentity, AvgPoolWithoutPaddingEqualsDepthwiseConvolutionWithMeanKernel) {
  Tensor x = RandomF64({1, 3, 8, 7}, 91);
  Attrs pool{{"pool_size", Ints{3, 2}}, {"strides", Ints{2, 1}}, {"dilation", Ints{1, 2}}};
  Tensor mean_kernel =
      Tensor::FromDoubles({3, 1, 3, 2}, DataType::kFloat64, std::vector<double>(18, 1.0 / 6));
  ExpectClose(RunOp("avg_pool2d", {x}, pool),
              RunOp("conv2d", {x, mean_kernel},
                    {{"strides", Ints{2, 1}}, {"dilation", Ints{1, 2}}, {"groups", int64_t{3}}}));
}

TEST(NormalizationIdentity, SoftmaxRowsSumToOneAndPreserveOrder) {
  Tensor x = RandomF64({3, 4, 5}, 101);
  for (int64_t axis : {0, 1, -1}) {
    Tensor y = RunOp("softmax", {x}, {{"axis", axis}});
    Tensor sums = Tensor::FromDoubles({3, 4, 5}, DataType::kFloat64, std::vector<double>(60, 0));
    const Shape& s = x.shape();
    int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<int64_t> strides{20, 5, 1};
    for (int64_t i = 0; i < 60; ++i) {
      int64_t base = i - (i / strides[a]) % s[a] * strides[a];
      double sum = 0;
      for (int64_t j = 0; j < s[a]; ++j) sum += y.GetDouble(base + j * strides[a]);
      EXPECT_NEAR(sum, 1.0, 1e-12);
      // exp(x_i - x_j) == y_i / y_j along the axis.
      EXPECT_NEAR(y.GetDouble(i) / y.GetDouble(base), std::exp(x.GetDouble(i) - x.GetDouble(base)),
                  1e-12);
    }
  }
}

TEST(NormalizationIdentity, BatchNormEqualsLayerNormStatisticsPerChannel) {
  // batch_norm with the true per-channel mean and variance of a [1, C, H, W] tensor equals
  // layer_norm of the [C, H*W] view with unit gamma and zero beta.
  Tensor x = RandomF64({1, 4, 3, 5}, 111);
  std::vector<double> mean(4, 0), variance(4, 0);
  for (int64_t c = 0; c < 4; ++c) {
    for (int64_t i = 0; i < 15; ++i) mean[c] += x.GetDouble(c * 15 + i) / 15;
    for (int64_t i = 0; i < 15; ++i) {
      variance[c] += (x.GetDouble(c * 15 + i) - mean[c]) * (x.GetDouble(c * 15 + i) - mean[c]) / 15;
    }
  }
  auto as_tensor = [](std::vector<double> v) {
    Shape shape{static_cast<int64_t>(v.size())};
    return Tensor::FromDoubles(shape, DataType::kFloat64, v);
  };
  Tensor bn = RunOp("batch_norm",
                    {x, as_tensor(std::vector<double>(4, 1)), as_tensor(std::vector<double>(4, 0)),
                     as_tensor(mean), as_tensor(variance)});
  Tensor ln = RunOp("layer_norm", {x.Reshaped({4, 15}), as_tensor(std::vector<double>(15, 1)),
                                   as_tensor(std::vector<double>(15, 0))});
  ExpectClose(bn.Reshaped({4, 15}), ln);
}

}  // namespace
}  // namespace tandem::ir
