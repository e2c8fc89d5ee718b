// Neural-network ops: registry contract, hand-computed reference results and type errors.
// Algebraic identities with random inputs are in nn_ops_identity_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/ir/nn_test_util.h"

namespace tandem::ir {
namespace {

using testing::ExpectValues;
using testing::F32;
using testing::Infer;
using testing::InferError;
using testing::Iota;
using testing::RunOp;
using testing::Values;
using Ints = std::vector<int64_t>;

// ---- registry contract ----

Attrs Defaults(const std::string& op, size_t operands, Attrs given = {}) {
  return NormalizeAttrs(OpRegistry::Global().Get(op), operands, given);
}

TEST(NnOpDefs, DefaultsMatchTheOpTable) {
  EXPECT_EQ(Defaults("conv1d", 2), (Attrs{{"strides", Ints{1}},
                                          {"padding", Ints{0, 0}},
                                          {"dilation", Ints{1}},
                                          {"groups", int64_t{1}},
                                          {"data_layout", std::string("NCW")},
                                          {"kernel_layout", std::string("OIW")}}));
  EXPECT_EQ(Defaults("conv2d", 2), (Attrs{{"strides", Ints{1, 1}},
                                          {"padding", Ints{0, 0, 0, 0}},
                                          {"dilation", Ints{1, 1}},
                                          {"groups", int64_t{1}},
                                          {"data_layout", std::string("NCHW")},
                                          {"kernel_layout", std::string("OIHW")}}));
  EXPECT_EQ(Defaults("conv3d", 2), (Attrs{{"strides", Ints{1, 1, 1}},
                                          {"padding", Ints(6, 0)},
                                          {"dilation", Ints{1, 1, 1}},
                                          {"groups", int64_t{1}},
                                          {"data_layout", std::string("NCDHW")},
                                          {"kernel_layout", std::string("OIDHW")}}));
  EXPECT_EQ(Defaults("conv2d_transpose", 2), (Attrs{{"strides", Ints{1, 1}},
                                                    {"padding", Ints{0, 0, 0, 0}},
                                                    {"dilation", Ints{1, 1}},
                                                    {"groups", int64_t{1}},
                                                    {"output_padding", Ints{0, 0}}}));
  EXPECT_EQ(Defaults("dense", 2), Attrs{});
  EXPECT_EQ(Defaults("matmul", 2), Attrs{});
  EXPECT_EQ(Defaults("batch_matmul", 2),
            (Attrs{{"transpose_a", int64_t{0}}, {"transpose_b", int64_t{0}}}));
  EXPECT_EQ(Defaults("batch_norm", 5), (Attrs{{"epsilon", 1e-5}, {"axis", int64_t{1}}}));
  EXPECT_EQ(Defaults("layer_norm", 3), (Attrs{{"epsilon", 1e-5}, {"axis", int64_t{-1}}}));
  EXPECT_EQ(Defaults("softmax", 1), (Attrs{{"axis", int64_t{-1}}}));
  Attrs pool{{"pool_size", Ints{2, 2}}};
  Attrs max_pool{{"pool_size", Ints{2, 2}},     {"strides", Ints{1, 1}},
                 {"padding", Ints{0, 0, 0, 0}}, {"dilation", Ints{1, 1}},
                 {"ceil_mode", int64_t{0}},     {"layout", std::string("NCHW")}};
  EXPECT_EQ(Defaults("max_pool2d", 1, pool), max_pool);
  Attrs avg_pool = max_pool;
  avg_pool.Set("count_include_pad", int64_t{0});
  EXPECT_EQ(Defaults("avg_pool2d", 1, pool), avg_pool);
  EXPECT_EQ(Defaults("global_avg_pool2d", 1), (Attrs{{"layout", std::string("NCHW")}}));
}

TEST(NnOpDefs, PatternKindsAndOperandCounts) {
  const OpRegistry& registry = OpRegistry::Global();
  for (const char* op : {"conv1d", "conv2d", "conv3d", "conv2d_transpose", "dense", "matmul",
                         "batch_matmul", "max_pool2d", "avg_pool2d", "global_avg_pool2d"}) {
    EXPECT_EQ(registry.Get(op).pattern, PatternKind::kOutElementwiseFusable) << op;
    EXPECT_FALSE(registry.Get(op).doc.empty()) << op;
  }
  EXPECT_EQ(registry.Get("batch_norm").pattern, PatternKind::kBroadcast);
  EXPECT_EQ(registry.Get("layer_norm").pattern, PatternKind::kOpaque);
  EXPECT_EQ(registry.Get("softmax").pattern, PatternKind::kOpaque);
  EXPECT_EQ(registry.Get("batch_norm").min_inputs, 5);
  EXPECT_EQ(registry.Get("batch_norm").max_inputs, 5);
  EXPECT_CONTAINS(InferError("conv2d", {F32({1, 1, 3, 3})}), "conv2d takes 2 operands but 1");
  EXPECT_CONTAINS(InferError("max_pool2d", {F32({1, 1, 3, 3})}), "requires attribute 'pool_size'");
}

// ---- convolution, by hand ----

TEST(Conv2d, SmallKernelByHand) {
  // x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]].
  Tensor y = RunOp("conv2d", {Iota({1, 1, 3, 3}), Iota({1, 1, 2, 2})});
  ExpectValues(y, {1, 1, 2, 2}, {37, 47, 67, 77});
  EXPECT_EQ(y.type().layout, "");
}

TEST(Conv2d, PaddingStrideAndDilationByHand) {
  Tensor x = Iota({1, 1, 3, 3});
  Tensor ones3 = Values({1, 1, 3, 3}, std::vector<double>(9, 1.0));
  Tensor ones2 = Values({1, 1, 2, 2}, std::vector<double>(4, 1.0));
  // Neighbourhood sums.
  ExpectValues(RunOp("conv2d", {x, ones3}, {{"padding", Ints{1, 1, 1, 1}}}), {1, 1, 3, 3},
               {12, 21, 16, 27, 45, 33, 24, 39, 28});
  ExpectValues(
      RunOp("conv2d", {x, ones3}, {{"padding", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}),
      {1, 1, 2, 2}, {12, 16, 24, 28});
  // Only the top is padded: [top, left, bottom, right] = [1, 0, 0, 0].
  ExpectValues(RunOp("conv2d", {x, ones2}, {{"padding", Ints{1, 0, 0, 0}}}), {1, 1, 3, 2},
               {3, 5, 12, 16, 24, 28});
  // Dilation 2 reads the four corners.
  ExpectValues(RunOp("conv2d", {x, ones2}, {{"dilation", Ints{2, 2}}}), {1, 1, 1, 1}, {20});
  // Stride 2 on one axis only, with right padding: windows at columns 0..1 and 2..3 (pad).
  ExpectValues(
      RunOp("conv2d", {x, ones2}, {{"strides", Ints{1, 2}}, {"padding", Ints{0, 0, 0, 1}}}),
      {1, 1, 2, 2}, {12, 9, 24, 15});
}

TEST(Conv2d, GroupedAndDepthwiseByHand) {
  // Two channels: channel 0 is 1..4, channel 1 is 5..8.
  Tensor x = Iota({1, 2, 2, 2});
  ExpectValues(RunOp("conv2d", {x, Values({2, 1, 1, 1}, {2, 3})}, {{"groups", int64_t{2}}}),
               {1, 2, 2, 2}, {2, 4, 6, 8, 15, 18, 21, 24});
  // Depthwise with channel multiplier 2: outputs 0,1 read channel 0; outputs 2,3 channel 1.
  ExpectValues(RunOp("conv2d", {x, Values({4, 1, 1, 1}, {1, 2, 3, 4})}, {{"groups", int64_t{2}}}),
               {1, 4, 2, 2}, {1, 2, 3, 4, 2, 4, 6, 8, 15, 18, 21, 24, 20, 24, 28, 32});
  // Without groups both channels are summed.
  ExpectValues(RunOp("conv2d", {x, Values({1, 2, 1, 1}, {1, 10})}), {1, 1, 2, 2}, {51, 62, 73, 84});
}

TEST(Conv1d, CentralDifferenceByHand) {
  Tensor y =
      RunOp("conv1d", {Iota({1, 1, 5}), Values({1, 1, 3}, {1, 0, -1})}, {{"padding", Ints{1, 1}}});
  ExpectValues(y, {1, 1, 5}, {-2, -2, -2, -2, 4});
}

TEST(Conv3d, SmallCubeByHand) {
  ExpectValues(RunOp("conv3d", {Iota({1, 1, 2, 2, 2}), Iota({1, 1, 2, 2, 2})}), {1, 1, 1, 1, 1},
               {204});  // sum of i*i for i = 1..8
  ExpectValues(RunOp("conv3d", {Iota({1, 1, 2, 2, 2}), Values({1, 1, 1, 1, 1}, {2})},
                     {{"strides", Ints{1, 2, 1}}, {"padding", Ints{0, 0, 0, 1, 0, 0}}}),
               {1, 1, 3, 1, 2}, {2, 4, 10, 12, 0, 0});
}

TEST(Conv2dTranspose, SmallInputsByHand) {
  Tensor x = Iota({1, 1, 2, 2});
  // Stride 2 with a 2x2 kernel of ones copies every pixel into a 2x2 block.
  ExpectValues(
      RunOp("conv2d_transpose", {x, Values({1, 1, 2, 2}, {1, 1, 1, 1})}, {{"strides", Ints{2, 2}}}),
      {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // Stride 1 is a full convolution: out[y][x] = sum in[i][j] * w[y-i][x-j].
  Tensor w = Iota({1, 1, 2, 2});
  ExpectValues(RunOp("conv2d_transpose", {x, w}), {1, 1, 3, 3}, {1, 4, 4, 6, 20, 16, 9, 24, 16});
  // Padding crops the full result.
  ExpectValues(RunOp("conv2d_transpose", {x, w}, {{"padding", Ints{1, 1, 1, 1}}}), {1, 1, 1, 1},
               {20});
  ExpectValues(RunOp("conv2d_transpose", {x, w}, {{"padding", Ints{0, 1, 1, 0}}}), {1, 1, 2, 2},
               {4, 4, 20, 16});
  // output_padding adds a row and a column that no input reaches.
  ExpectValues(RunOp("conv2d_transpose", {x, Values({1, 1, 2, 2}, {1, 1, 1, 1})},
                     {{"strides", Ints{2, 2}}, {"output_padding", Ints{1, 1}}}),
               {1, 1, 5, 5},
               {1, 1, 2, 2, 0, 1, 1, 2, 2, 0, 3, 3, 4, 4, 0, 3, 3, 4, 4, 0, 0, 0, 0, 0, 0});
  // Dilation 2 spreads the kernel taps: a 1x1 input scatters to the corners of a 3x3 block.
  ExpectValues(
      RunOp("conv2d_transpose", {Values({1, 1, 1, 1}, {2}), w}, {{"dilation", Ints{2, 2}}}),
      {1, 1, 3, 3}, {2, 0, 4, 0, 0, 0, 6, 0, 8});
  // Groups: channel 0 feeds output 0, channel 1 feeds output 1.
  ExpectValues(RunOp("conv2d_transpose", {Iota({1, 2, 1, 1}), Values({2, 1, 1, 1}, {10, 100})},
                     {{"groups", int64_t{2}}}),
               {1, 2, 1, 1}, {10, 200});
}

TEST(Conv2d, IntegerAndHalfDataTypesConvertAtTheEnd) {
  Tensor x = Values({1, 1, 1, 2}, {3, 4}, DataType::kInt32);
  Tensor w = Values({1, 1, 1, 2}, {2, -1}, DataType::kInt32);
  Tensor y = RunOp("conv2d", {x, w});
  EXPECT_EQ(y.dtype(), DataType::kInt32);
  ExpectValues(y, {1, 1, 1, 1}, {2}, 0);
  Tensor h = RunOp("conv2d", {Values({1, 1, 1, 2}, {0.5, 0.25}, DataType::kFloat16),
                              Values({1, 1, 1, 2}, {2, 4}, DataType::kFloat16)});
  EXPECT_EQ(h.dtype(), DataType::kFloat16);
  ExpectValues(h, {1, 1, 1, 1}, {2}, 0);
}

// ---- matrix products, by hand ----

TEST(Dense, ByHand) {
  // data [[1,2,3],[4,5,6]], weight [[1,0,-1],[2,2,2]].
  Tensor y = RunOp("dense", {Iota({2, 3}), Values({2, 3}, {1, 0, -1, 2, 2, 2})});
  ExpectValues(y, {2, 2}, {-2, 12, -2, 30});
  ExpectValues(RunOp("dense", {Iota({3}), Values({1, 3}, {1, 1, 1})}), {1}, {6});
}

TEST(Matmul, RankOneOperandsFollowNumpy) {
  Tensor v = Iota({3});
  Tensor m = Iota({3, 2});  // [[1,2],[3,4],[5,6]]
  ExpectValues(RunOp("matmul", {v, m}), {2}, {22, 28});
  ExpectValues(RunOp("matmul", {Iota({2, 3}), v}), {2}, {14, 32});
  ExpectValues(RunOp("matmul", {v, v}), {}, {14});
  // A rank-1 operand against a batch of matrices.
  ExpectValues(RunOp("matmul", {Values({2}, {1, -1}), Iota({2, 2, 2})}), {2, 2}, {-2, -2, -2, -2});
}

TEST(Matmul, BroadcastBatchAxesMatchPlainLoops) {
  Tensor a = testing::RandomF64({2, 1, 2, 3}, 1);
  Tensor b = testing::RandomF64({3, 3, 4}, 2);
  Tensor y = RunOp("matmul", {a, b});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2, 4}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t m = 0; m < 2; ++m) {
        for (int64_t n = 0; n < 4; ++n) {
          double sum = 0;
          for (int64_t k = 0; k < 3; ++k) {
            sum += a.GetDouble((i * 2 + m) * 3 + k) * b.GetDouble((j * 3 + k) * 4 + n);
          }
          EXPECT_NEAR(y.GetDouble(((i * 3 + j) * 2 + m) * 4 + n), sum, 1e-12);
        }
      }
    }
  }
}

TEST(BatchMatmul, ByHandWithBroadcastBatch) {
  // a: one [2,2] matrix [[1,2],[3,4]] shared by both batches of b.
  Tensor a = Iota({1, 2, 2});
  Tensor b = Values({2, 2, 1}, {1, 0, 0, 1});
  ExpectValues(RunOp("batch_matmul", {a, b}), {2, 2, 1}, {1, 3, 2, 4});
  ExpectValues(RunOp("batch_matmul", {a, b}, {{"transpose_a", int64_t{1}}}), {2, 2, 1},
               {1, 2, 3, 4});
  ExpectValues(
      RunOp("batch_matmul", {Values({2, 1, 2}, {1, 0, 0, 1}), a}, {{"transpose_b", int64_t{1}}}),
      {2, 1, 2}, {1, 3, 2, 4});
}

// ---- normalization, by hand ----

TEST(Softmax, RowsSumToOneAndMatchHandValues) {
  Tensor y = RunOp("softmax", {Values({2, 3}, {1, 2, 3, 1000, 1000, 1000})});
  double e = std::exp(1.0);
  double sum = e + e * e + e * e * e;
  ExpectValues(y, {2, 3}, {e / sum, e * e / sum, e * e * e / sum, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-6);
  // Large inputs stay finite (the maximum is subtracted).
  Tensor big = RunOp("softmax", {Values({1, 2}, {1e4, 1e4 + std::log(3.0)}, DataType::kFloat64)});
  ExpectValues(big, {1, 2}, {0.25, 0.75}, 1e-9);
  // Axis 0: columns sum to one.
  Tensor columns =
      RunOp("softmax", {Values({2, 2}, {0, 5, std::log(3.0), 5})}, {{"axis", int64_t{0}}});
  ExpectValues(columns, {2, 2}, {0.25, 0.5, 0.75, 0.5}, 1e-6);
}

TEST(LayerNorm, ByHand) {
  // Row [1,2,3,4]: mean 2.5, variance 1.25.
  double s = 1 / std::sqrt(1.25);
  Tensor y =
      RunOp("layer_norm", {Iota({1, 4}), Values({4}, {1, 2, 1, 1}), Values({4}, {0, 0, 0, 10})},
            {{"epsilon", 0.0}});
  ExpectValues(y, {1, 4}, {-1.5 * s, -1.0 * s, 0.5 * s, 1.5 * s + 10});
  // Over the last two axes: each [2,2] block is normalized on its own.
  Tensor ones = Values({2, 2}, {1, 1, 1, 1});
  Tensor zeros = Values({2, 2}, {0, 0, 0, 0});
  Tensor z = RunOp("layer_norm", {Values({2, 2, 2}, {1, 1, 3, 3, 0, 2, 0, 2}), ones, zeros},
                   {{"axis", int64_t{-2}}, {"epsilon", 0.0}});
  ExpectValues(z, {2, 2, 2}, {-1, -1, 1, 1, -1, 1, -1, 1});
  // epsilon enters under the square root: variance 1 + epsilon 3 -> divide by 2.
  ExpectValues(RunOp("layer_norm", {Values({2}, {0, 2}), Values({2}, {1, 1}), Values({2}, {0, 0})},
                     {{"epsilon", 3.0}}),
               {2}, {-0.5, 0.5});
}

TEST(BatchNorm, ByHand) {
  // Channel 0: (x - 1) / sqrt(3 + 1) * 2 + 0.5; channel 1: (x - 0) / sqrt(0 + 1) * -1 + 0.
  Tensor data = Values({1, 2, 1, 2}, {1, 5, 3, -2});
  std::vector<Tensor> params = {Values({2}, {2, -1}), Values({2}, {0.5, 0}), Values({2}, {1, 0}),
                                Values({2}, {3, 0})};
  std::vector<Tensor> operands = {data};
  operands.insert(operands.end(), params.begin(), params.end());
  ExpectValues(RunOp("batch_norm", operands, {{"epsilon", 1.0}}), {1, 2, 1, 2}, {0.5, 4.5, -3, 2});
  // The same numbers with the channel as the last axis (NHWC).
  operands[0] = Values({1, 1, 2, 2}, {1, 3, 5, -2});
  ExpectValues(RunOp("batch_norm", operands, {{"epsilon", 1.0}, {"axis", int64_t{-1}}}),
               {1, 1, 2, 2}, {0.5, -3, 4.5, 2});
}

// ---- pooling, by hand ----

TEST(MaxPool2d, ByHand) {
  Tensor x = Iota({1, 1, 4, 4});
  ExpectValues(RunOp("max_pool2d", {x}, {{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}}),
               {1, 1, 2, 2}, {6, 8, 14, 16});
  // Dilation 2: each window reads four taps two apart.
  ExpectValues(RunOp("max_pool2d", {x}, {{"pool_size", Ints{2, 2}}, {"dilation", Ints{2, 2}}}),
               {1, 1, 2, 2}, {11, 12, 15, 16});
  // Padding never wins the max, even when every value is negative.
  Tensor negative = Values({1, 1, 2, 2}, {-4, -3, -2, -1});
  ExpectValues(
      RunOp("max_pool2d", {negative}, {{"pool_size", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}}),
      {1, 1, 3, 3}, {-4, -3, -3, -2, -1, -1, -2, -1, -1});
}

TEST(MaxPool2d, CeilModeKeepsPartialWindowsAndDropsPaddingOnlyOnes) {
  Tensor x = Iota({1, 1, 5, 5});
  Attrs attrs{{"pool_size", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  ExpectValues(RunOp("max_pool2d", {x}, attrs), {1, 1, 2, 2}, {7, 9, 17, 19});
  attrs.Set("ceil_mode", int64_t{1});
  ExpectValues(RunOp("max_pool2d", {x}, attrs), {1, 1, 3, 3}, {7, 9, 10, 17, 19, 20, 22, 24, 25});
  // 3x3 input, padding 1: a third window would start in the bottom/right padding, so it is
  // dropped (PyTorch and ONNX give 2x2 here too).
  attrs.Set("padding", Ints{1, 1, 1, 1});
  ExpectValues(RunOp("max_pool2d", {Iota({1, 1, 3, 3})}, attrs), {1, 1, 2, 2}, {1, 3, 7, 9});
}

TEST(AvgPool2d, CountIncludePad) {
  Tensor x = Iota({1, 1, 3, 3});
  Attrs attrs{{"pool_size", Ints{3, 3}}, {"padding", Ints{1, 1, 1, 1}}};
  ExpectValues(RunOp("avg_pool2d", {x}, attrs), {1, 1, 3, 3},
               {12.0 / 4, 21.0 / 6, 16.0 / 4, 27.0 / 6, 5, 33.0 / 6, 24.0 / 4, 39.0 / 6, 28.0 / 4});
  attrs.Set("count_include_pad", int64_t{1});
  ExpectValues(RunOp("avg_pool2d", {x}, attrs), {1, 1, 3, 3},
               {12.0 / 9, 21.0 / 9, 16.0 / 9, 27.0 / 9, 5, 33.0 / 9, 24.0 / 9, 39.0 / 9, 28.0 / 9});
}

TEST(AvgPool2d, CeilModeWindowsPastThePaddedInputAreNotCounted) {
  // 4x4 input, window 3, stride 2, padding 1, ceil mode: windows start at -1, 1, 3. The last one
  // covers row 3 (data), row 4 (padding) and row 5 (past the padded input).
  Tensor x = Iota({1, 1, 4, 4});
  Attrs attrs{{"pool_size", Ints{3, 3}},
              {"strides", Ints{2, 2}},
              {"padding", Ints{1, 1, 1, 1}},
              {"ceil_mode", int64_t{1}}};
  Tensor excluded = RunOp("avg_pool2d", {x}, attrs);
  ASSERT_EQ(excluded.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_FLOAT_EQ(excluded.GetDouble(0), 14.0 / 4);
  EXPECT_FLOAT_EQ(excluded.GetDouble(1), 30.0 / 6);
  EXPECT_FLOAT_EQ(excluded.GetDouble(8), 16.0);
  attrs.Set("count_include_pad", int64_t{1});
  Tensor included = RunOp("avg_pool2d", {x}, attrs);
  EXPECT_FLOAT_EQ(included.GetDouble(0), 14.0 / 9);
  EXPECT_FLOAT_EQ(included.GetDouble(1), 30.0 / 9);
  EXPECT_FLOAT_EQ(included.GetDouble(2), (4 + 8) / 6.0);  // rows -1..1, columns 3..4
  EXPECT_FLOAT_EQ(included.GetDouble(8), 16.0 / 4);
}

TEST(GlobalAvgPool2d, ByHand) {
  ExpectValues(RunOp("global_avg_pool2d", {Iota({1, 2, 2, 2})}), {1, 2, 1, 1}, {2.5, 6.5});
  Tensor nhwc = RunOp("global_avg_pool2d", {Iota({1, 2, 1, 2})}, {{"layout", std::string("NHWC")}});
  ExpectValues(nhwc, {1, 1, 1, 2}, {2, 3});
  EXPECT_EQ(nhwc.type().layout, "NHWC");
}

// ---- type errors ----

TEST(ConvErrors, NameTheOpAndTheNumbers) {
  auto conv = [](TensorType data, TensorType weight, Attrs attrs = {}) {
    return InferError("conv2d", {std::move(data), std::move(weight)}, std::move(attrs));
  };
  std::string e = conv(F32({1, 3, 8}), F32({4, 3, 3, 3}));
  EXPECT_CONTAINS(e, "conv2d");
  EXPECT_CONTAINS(e, "data must have rank 4");
  EXPECT_CONTAINS(e, "[1,3,8]");
  EXPECT_CONTAINS(conv(F32({1, 3, 8, 8}), F32({4, 3, 3})), "weight must have rank 4");
  e = conv(F32({1, 3, 8, 8}), F32({4, 2, 3, 3}));
  EXPECT_CONTAINS(e,
                  "conv2d: channels of data (3) must equal groups (1) x input channels of "
                  "weight (2)");
  EXPECT_CONTAINS(e, "operands: f32[1,3,8,8], f32[4,2,3,3]");
  EXPECT_CONTAINS(conv(F32({1, 6, 8, 8}), F32({4, 2, 3, 3}), {{"groups", int64_t{4}}}),
                  "channels of data (6) must be divisible by groups (4)");
  EXPECT_CONTAINS(conv(F32({1, 4, 8, 8}), F32({3, 2, 3, 3}), {{"groups", int64_t{2}}}),
                  "output channels of weight (3) must be divisible by groups (2)");
  EXPECT_CONTAINS(conv(F32({1, 4, 8, 8}), F32({4, 4, 3, 3}), {{"groups", int64_t{0}}}),
                  "groups must be positive but is 0");
  EXPECT_CONTAINS(conv(F32({1, 3, 8, 8}), F32({4, 3, 3, 3}), {{"strides", Ints{1}}}),
                  "attribute 'strides' must have 2 values but has 1");
  EXPECT_CONTAINS(conv(F32({1, 3, 8, 8}), F32({4, 3, 3, 3}), {{"padding", Ints{1, 1}}}),
                  "attribute 'padding' must have 4 values but has 2");
  EXPECT_CONTAINS(conv(F32({1, 3, 8, 8}), F32({4, 3, 3, 3}), {{"dilation", Ints{1, 1, 1}}}),
                  "attribute 'dilation' must have 2 values but has 3");
  EXPECT_CONTAINS(conv(F32({1, 3, 8, 8}), F32({4, 3, 3, 3}), {{"padding", Ints{0, -1, 0, 0}}}),
                  "padding must be non-negative but is [0,-1,0,0]");
  EXPECT_CONTAINS(conv(F32({1, 3, 8, 8}), F32({4, 3, 3, 3}), {{"strides", Ints{1, 0}}}),
                  "strides must be positive but is [1,0]");
  EXPECT_CONTAINS(conv(F32({1, 3, 8, 8}), F32({4, 3, 3, 3}), {{"dilation", Ints{0, 1}}}),
                  "dilation must be positive");
  e = conv(F32({1, 1, 4, 4}), F32({1, 1, 5, 3}));
  EXPECT_CONTAINS(e, "output extent on axis H would be non-positive");
  EXPECT_CONTAINS(e, "kernel extent 5");
  EXPECT_CONTAINS(e, "padded input extent 4");
  e = conv(F32({1, 1, 4, 4}), F32({1, 1, 3, 3}), {{"dilation", Ints{1, 2}}});
  EXPECT_CONTAINS(e, "axis W");
  EXPECT_CONTAINS(e, "kernel extent 5 (kernel 3, dilation 2)");
  e = InferError("conv2d", {F32({1, 3, 8, 8}), TensorType{{4, 3, 3, 3}, DataType::kFloat16, ""}});
  EXPECT_CONTAINS(e, "data is f32 but weight is f16");
}

TEST(ConvErrors, UnsupportedLayoutsAreClearErrors) {
  std::string e = InferError("conv2d", {F32({1, 3, 8, 8}), F32({4, 3, 3, 3})},
                             {{"data_layout", std::string("NCWH")}});
  EXPECT_CONTAINS(e, "data_layout 'NCWH' is not supported by the reference yet");
  e = InferError("conv2d", {F32({1, 8, 8, 3}), F32({4, 3, 3, 3})},
                 {{"data_layout", std::string("NHWC")}, {"kernel_layout", std::string("IHWO")}});
  EXPECT_CONTAINS(e, "kernel_layout 'IHWO' is not supported by the reference yet");
  e = InferError("conv1d", {F32({1, 8, 3}), F32({4, 3, 3})}, {{"data_layout", std::string("NWC")}});
  EXPECT_CONTAINS(e, "conv1d: data_layout 'NWC' is not supported");
  e = InferError("conv2d", {F32({1, 8, 8, 3}, "NHWC"), F32({4, 3, 3, 3})});
  EXPECT_CONTAINS(e, "data is tagged with layout 'NHWC' but the op expects 'NCHW'");
}

TEST(ConvErrors, OtherConvolutions) {
  EXPECT_CONTAINS(InferError("conv1d", {F32({1, 3, 2}), F32({4, 3, 3})}),
                  "output extent on axis W would be non-positive");
  EXPECT_CONTAINS(InferError("conv3d", {F32({1, 3, 4, 4, 4}), F32({4, 3, 3, 3, 3})},
                             {{"padding", Ints{1, 1, 1, 1}}}),
                  "attribute 'padding' must have 6 values but has 4");
  EXPECT_CONTAINS(InferError("conv3d", {F32({1, 3, 4, 4}), F32({4, 3, 3, 3, 3})}),
                  "data must have rank 5");
  auto transpose = [](TensorType data, TensorType weight, Attrs attrs = {}) {
    return InferError("conv2d_transpose", {std::move(data), std::move(weight)}, std::move(attrs));
  };
  std::string e = transpose(F32({1, 3, 4, 4}), F32({4, 2, 3, 3}));
  EXPECT_CONTAINS(e,
                  "conv2d_transpose: channels of data (3) must equal the input channels of "
                  "weight (4)");
  EXPECT_CONTAINS(transpose(F32({1, 3, 4, 4}), F32({3, 2, 3, 3}), {{"groups", int64_t{2}}}),
                  "channels of data (3) must be divisible by groups (2)");
  e = transpose(F32({1, 1, 1, 1}), F32({1, 1, 1, 1}), {{"padding", Ints{1, 0, 1, 0}}});
  EXPECT_CONTAINS(e, "output extent on axis H would be -1");
  EXPECT_CONTAINS(
      transpose(F32({1, 1, 2, 2}), F32({1, 1, 1, 1}), {{"output_padding", Ints{0, -1}}}),
      "output_padding must be non-negative");
  EXPECT_CONTAINS(transpose(F32({1, 1, 2, 2}), F32({1, 1, 1, 1}), {{"output_padding", Ints{0}}}),
                  "attribute 'output_padding' must have 2 values but has 1");
  EXPECT_EQ(
      Infer("conv2d_transpose", {F32({2, 4, 5, 6}), F32({4, 3, 3, 2})},
            {{"strides", Ints{2, 3}}, {"groups", int64_t{2}}, {"output_padding", Ints{1, 2}}}),
      Type(F32({2, 6, 12, 19})));
}

TEST(ConvTypes, ResultLayoutOnlyWhenNotDefault) {
  EXPECT_EQ(Infer("conv2d", {F32({1, 3, 8, 8}), F32({4, 3, 3, 3})}), Type(F32({1, 4, 6, 6})));
  EXPECT_EQ(Infer("conv2d", {F32({1, 3, 8, 8}, "NCHW"), F32({4, 3, 3, 3})}),
            Type(F32({1, 4, 6, 6})));
  EXPECT_EQ(Infer("conv2d", {F32({1, 8, 8, 3}, "NHWC"), F32({3, 3, 3, 4})},
                  {{"data_layout", std::string("NHWC")}, {"kernel_layout", std::string("HWIO")}}),
            Type(F32({1, 6, 6, 4}, "NHWC")));
}

TEST(MatmulErrors, NameTheShapes) {
  std::string e = InferError("dense", {F32({2, 5}), F32({3, 4})});
  EXPECT_CONTAINS(e, "dense: K of data (5");
  EXPECT_CONTAINS(e, "K of weight (4");
  EXPECT_CONTAINS(InferError("dense", {F32({2, 5}), F32({5})}), "weight must have rank 2");
  EXPECT_CONTAINS(InferError("dense", {F32({2, 5}), TensorType{{3, 5}, DataType::kFloat64, ""}}),
                  "data is f32 but weight is f64");
  e = InferError("matmul", {F32({2, 3}), F32({4, 5})});
  EXPECT_CONTAINS(e, "matmul: K of a (3");
  EXPECT_CONTAINS(e, "K of b (4");
  e = InferError("matmul", {F32({2, 2, 3}), F32({3, 3, 4})});
  EXPECT_CONTAINS(e, "batch axes of a [2,2,3] and b [3,3,4] cannot be broadcast");
  EXPECT_CONTAINS(InferError("matmul", {F32({3}), TensorType{{3}, DataType::kInt32, ""}}),
                  "a is f32 but b is i32");
  e = InferError("batch_matmul", {F32({2, 3, 4}), F32({2, 3, 5})}, {{"transpose_b", int64_t{1}}});
  EXPECT_CONTAINS(e, "K of a (4");
  EXPECT_CONTAINS(e, "K of b (5");
  EXPECT_CONTAINS(InferError("batch_matmul", {F32({2, 3, 4}), F32({3, 4, 5})}),
                  "batch of a (2) and batch of b (3) must be equal or 1");
  EXPECT_CONTAINS(InferError("batch_matmul", {F32({3, 4}), F32({3, 4, 5})}), "a must have rank 3");
  EXPECT_CONTAINS(
      InferError("batch_matmul", {F32({1, 3, 4}), F32({1, 4, 5})}, {{"transpose_a", int64_t{2}}}),
      "'transpose_a' must be 0 or 1 but is 2");
  EXPECT_EQ(Infer("batch_matmul", {F32({1, 4, 3}), F32({6, 5, 4})},
                  {{"transpose_a", int64_t{1}}, {"transpose_b", int64_t{1}}}),
            Type(F32({6, 3, 5})));
}

TEST(NormalizationErrors, NameTheOperands) {
  TensorType c3 = F32({3});
  std::string e = InferError("batch_norm", {F32({1, 3, 4, 4}), F32({4}), c3, c3, c3});
  EXPECT_CONTAINS(e,
                  "batch_norm: gamma must have shape [3] (the extent of data axis 1) but has "
                  "shape [4]");
  e = InferError("batch_norm",
                 {F32({1, 3, 4, 4}), c3, c3, c3, TensorType{{3}, DataType::kFloat16, ""}});
  EXPECT_CONTAINS(e, "data is f32 but variance is f16");
  EXPECT_CONTAINS(InferError("batch_norm", {F32({1, 3}), c3, c3, c3, c3}, {{"axis", int64_t{2}}}),
                  "axis 2 is out of range for rank 2");
  EXPECT_CONTAINS(InferError("batch_norm", {F32({1, 3}), c3, c3, c3, c3}, {{"epsilon", -1.0}}),
                  "epsilon must be finite and non-negative but is -1");
  e = InferError("layer_norm", {F32({2, 3, 4}), F32({3, 4}), F32({4})});
  EXPECT_CONTAINS(e, "layer_norm: gamma must have shape [4]");
  e = InferError("layer_norm", {F32({2, 3, 4}), F32({3, 4}), F32({4})}, {{"axis", int64_t{1}}});
  EXPECT_CONTAINS(e, "beta must have shape [3,4]");
  EXPECT_CONTAINS(InferError("softmax", {F32({2, 3})}, {{"axis", int64_t{2}}}),
                  "softmax: axis 2 is out of range for rank 2");
}

TEST(PoolErrors, NameTheNumbers) {
  auto pool = [](const std::string& op, TensorType data, Attrs attrs) {
    return InferError(op, {std::move(data)}, std::move(attrs));
  };
  EXPECT_CONTAINS(pool("max_pool2d", F32({1, 3, 8}), {{"pool_size", Ints{2, 2}}}),
                  "max_pool2d: data must have rank 4");
  EXPECT_CONTAINS(pool("max_pool2d", F32({1, 3, 8, 8}), {{"pool_size", Ints{2}}}),
                  "attribute 'pool_size' must have 2 values but has 1");
  EXPECT_CONTAINS(pool("avg_pool2d", F32({1, 3, 8, 8}), {{"pool_size", Ints{2, 0}}}),
                  "pool_size must be positive but is [2,0]");
  EXPECT_CONTAINS(
      pool("avg_pool2d", F32({1, 3, 8, 8}), {{"pool_size", Ints{2, 2}}, {"strides", Ints{0, 1}}}),
      "strides must be positive");
  std::string e = pool("max_pool2d", F32({1, 3, 4, 4}), {{"pool_size", Ints{5, 2}}});
  EXPECT_CONTAINS(e, "output extent on axis H would be non-positive");
  EXPECT_CONTAINS(e, "pooling window extent 5");
  EXPECT_CONTAINS(e, "padded input extent 4");
  EXPECT_CONTAINS(pool("max_pool2d", F32({1, 3, 4, 4}),
                       {{"pool_size", Ints{2, 2}}, {"padding", Ints{0, 2, 0, 0}}}),
                  "padding on axis W (2 and 0) must be smaller than the pooling window extent 2");
  EXPECT_CONTAINS(pool("max_pool2d", F32({1, 3, 4, 4}),
                       {{"pool_size", Ints{2, 2}}, {"layout", std::string("NCWH")}}),
                  "layout 'NCWH' is not supported by the reference yet");
  EXPECT_CONTAINS(pool("avg_pool2d", F32({1, 3, 4, 4}),
                       {{"pool_size", Ints{2, 2}}, {"count_include_pad", int64_t{3}}}),
                  "'count_include_pad' must be 0 or 1 but is 3");
  EXPECT_CONTAINS(pool("max_pool2d", F32({1, 3, 4, 4}),
                       {{"pool_size", Ints{2, 2}}, {"ceil_mode", int64_t{-1}}}),
                  "'ceil_mode' must be 0 or 1");
  EXPECT_CONTAINS(pool("global_avg_pool2d", F32({1, 3, 4}), {}),
                  "global_avg_pool2d: data must have rank 4");
  EXPECT_CONTAINS(pool("global_avg_pool2d", F32({1, 3, 0, 4}), {}),
                  "spatial extents of data must be positive");
  EXPECT_EQ(Infer("max_pool2d", {F32({1, 5, 5, 3}, "NHWC")},
                  {{"pool_size", Ints{2, 2}},
                   {"strides", Ints{2, 2}},
                   {"ceil_mode", int64_t{1}},
                   {"layout", std::string("NHWC")}}),
            Type(F32({1, 3, 3, 3}, "NHWC")));
}

}  // namespace
}  // namespace tandem::ir
