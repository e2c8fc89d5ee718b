// The Winograd ops: type inference and its errors, and reference semantics: the chain
// output_transform(batch_matmul(input_transform(x), weight_transform(w))) computes conv2d(x, w)
// on random inputs, for both tiles, with padding, partial tiles and batch 2.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/ops/winograd.h"
#include "tests/ir/nn_test_util.h"

namespace tandem::ir {
namespace {

using testing::F32;
using testing::F64;
using testing::Infer;
using testing::InferError;
using testing::RandomF64;
using testing::RunOp;
using Ints = std::vector<int64_t>;

Attrs Tile(int64_t tile) {
  return Attrs{{"tile", tile}};
}

TEST(WinogradOps, InferredShapes) {
  EXPECT_EQ(Infer("winograd_weight_transform", {F32({8, 3, 3, 3})}, Tile(2)),
            Type(F32({16, 3, 8})));
  EXPECT_EQ(Infer("winograd_weight_transform", {F32({8, 3, 3, 3})}, Tile(4)),
            Type(F32({36, 3, 8})));
  // OH = 9 + 0 + 2 - 2 = 9 -> 3 tiles of 4; OW = 6 + 1 + 1 - 2 = 6 -> 2 tiles.
  EXPECT_EQ(Infer("winograd_input_transform", {F32({2, 5, 9, 6})},
                  Attrs{{"tile", int64_t{4}}, {"padding", Ints{0, 1, 2, 1}}}),
            Type(F32({36, 12, 5})));
  EXPECT_EQ(Infer("winograd_input_transform", {F64({1, 2, 4, 4})}, Tile(2)), Type(F64({16, 1, 2})));
  EXPECT_EQ(Infer("winograd_output_transform", {F32({36, 12, 7})},
                  Attrs{{"tile", int64_t{4}}, {"output_shape", Ints{2, 7, 9, 6}}}),
            Type(F32({2, 7, 9, 6})));
}

TEST(WinogradOps, TypeErrorsNameTheProblem) {
  EXPECT_CONTAINS(InferError("winograd_weight_transform", {F32({8, 3, 3, 3})}, Tile(3)),
                  "tile must be 2 or 4");
  EXPECT_CONTAINS(InferError("winograd_weight_transform", {F32({8, 3, 3, 3})}),
                  "requires attribute 'tile'");
  EXPECT_CONTAINS(InferError("winograd_weight_transform", {F32({8, 3, 5, 5})}, Tile(2)),
                  "3x3 kernel");
  EXPECT_CONTAINS(InferError("winograd_weight_transform", {F32({8, 3, 3})}, Tile(2)),
                  "must have rank 4");
  EXPECT_CONTAINS(InferError("winograd_weight_transform",
                             {TensorType{{8, 3, 3, 3}, DataType::kInt32, ""}}, Tile(2)),
                  "must be f32 or f64");
  EXPECT_CONTAINS(InferError("winograd_input_transform", {F32({1, 2, 2, 5})}, Tile(2)),
                  "smaller than the 3x3 kernel");
  EXPECT_CONTAINS(InferError("winograd_input_transform", {F32({1, 2, 5, 5})},
                             Attrs{{"tile", int64_t{2}}, {"padding", Ints{1, 1}}}),
                  "padding");
  EXPECT_CONTAINS(InferError("winograd_input_transform", {F32({1, 2, 5, 5})},
                             Attrs{{"tile", int64_t{2}}, {"padding", Ints{1, -1, 1, 1}}}),
                  "non-negative");
  EXPECT_CONTAINS(InferError("winograd_input_transform", {F32({1, 16, 5, 5}, "NCHW16c")}, Tile(2)),
                  "no layout tag");
  EXPECT_CONTAINS(InferError("winograd_output_transform", {F32({36, 11, 7})},
                             Attrs{{"tile", int64_t{4}}, {"output_shape", Ints{2, 7, 9, 6}}}),
                  "y must have shape [36, 12, 7]");
  EXPECT_CONTAINS(InferError("winograd_output_transform", {F32({16, 12, 7})},
                             Attrs{{"tile", int64_t{4}}, {"output_shape", Ints{2, 7, 9, 6}}}),
                  "y must have shape");
  EXPECT_CONTAINS(InferError("winograd_output_transform", {F32({36, 12, 7})},
                             Attrs{{"tile", int64_t{4}}, {"output_shape", Ints{2, 7, 9}}}),
                  "output_shape");
  EXPECT_CONTAINS(InferError("winograd_output_transform", {F32({36, 12, 7})}, Tile(4)),
                  "requires attribute 'output_shape'");
}

// The matrices are exact: for every a x a tile d and filter g, A^T [(G g G^T) . (B^T d B)] A is
// the valid 3x3 correlation of d with g.
TEST(WinogradOps, MatricesComputeTheCorrelationOfOneTile) {
  for (int64_t tile : {2, 4}) {
    const ops::WinogradMatrices& w = ops::Winograd(tile);
    int64_t a = w.size, m = w.tile;
    Tensor d = RandomF64({a, a}, 1 + tile), g = RandomF64({3, 3}, 2 + tile);
    auto D = [&](int64_t i, int64_t j) { return d.GetDouble(i * a + j); };
    auto Gf = [&](int64_t i, int64_t j) { return g.GetDouble(i * 3 + j); };
    std::vector<double> u(a * a, 0), v(a * a, 0);
    for (int64_t x = 0; x < a; ++x) {
      for (int64_t y = 0; y < a; ++y) {
        for (int64_t i = 0; i < 3; ++i) {
          for (int64_t j = 0; j < 3; ++j) u[x * a + y] += w.g[x][i] * Gf(i, j) * w.g[y][j];
        }
        for (int64_t i = 0; i < a; ++i) {
          for (int64_t j = 0; j < a; ++j) v[x * a + y] += w.bt[x][i] * D(i, j) * w.bt[y][j];
        }
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double got = 0, want = 0;
        for (int64_t x = 0; x < a; ++x) {
          for (int64_t y = 0; y < a; ++y)
            got += w.at[i][x] * u[x * a + y] * v[x * a + y] * w.at[j][y];
        }
        for (int64_t r = 0; r < 3; ++r) {
          for (int64_t s = 0; s < 3; ++s) want += D(i + r, j + s) * Gf(r, s);
        }
        EXPECT_NEAR(got, want, 1e-12) << "tile " << tile << " output " << i << "," << j;
      }
    }
  }
}

struct ChainCase {
  int64_t tile;
  Shape data;
  int64_t out_channels;
  Ints padding;
};

// The chain equals conv2d on random f64 inputs.
TEST(WinogradOps, ChainEqualsDirectConvolution) {
  std::vector<ChainCase> cases = {
      {2, {1, 3, 6, 6}, 4, {0, 0, 0, 0}},    // whole tiles
      {2, {1, 3, 7, 5}, 2, {1, 1, 1, 1}},    // partial tiles, padding
      {4, {2, 3, 9, 7}, 5, {0, 1, 2, 1}},    // batch 2, asymmetric padding, partial tiles
      {4, {1, 2, 3, 3}, 3, {0, 0, 0, 0}},    // a single output, less than one tile
      {4, {2, 4, 10, 10}, 3, {1, 1, 1, 1}},  // whole tiles, batch 2
  };
  uint64_t seed = 10;
  for (const ChainCase& c : cases) {
    SCOPED_TRACE(fmt::format("tile {} data {} padding {}", c.tile, ShapeToString(c.data),
                             ToString(AttrValue(c.padding))));
    Tensor x = RandomF64(c.data, ++seed);
    Tensor w = RandomF64({c.out_channels, c.data[1], 3, 3}, ++seed);
    Tensor direct = RunOp("conv2d", {x, w}, Attrs{{"padding", c.padding}});
    Tensor u = RunOp("winograd_weight_transform", {w}, Tile(c.tile));
    Tensor v =
        RunOp("winograd_input_transform", {x}, Attrs{{"tile", c.tile}, {"padding", c.padding}});
    Tensor product = RunOp("batch_matmul", {v, u});
    Tensor result = RunOp("winograd_output_transform", {product},
                          Attrs{{"tile", c.tile}, {"output_shape", direct.shape()}});
    testing::ExpectClose(result, direct, 1e-12);
    // The same chain on NHWC activations computes the NHWC convolution.
    Attrs nchw_to_nhwc{{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NHWC")}};
    Tensor x_nhwc = RunOp("layout_transform", {x}, nchw_to_nhwc);
    Tensor v_nhwc =
        RunOp("winograd_input_transform", {x_nhwc},
              Attrs{{"tile", c.tile}, {"padding", c.padding}, {"layout", std::string("NHWC")}});
    testing::ExpectClose(v_nhwc, v, 0);
    Tensor result_nhwc = RunOp(
        "winograd_output_transform", {product},
        Attrs{{"tile", c.tile}, {"output_shape", direct.shape()}, {"layout", std::string("NHWC")}});
    EXPECT_EQ(result_nhwc.type().layout, "NHWC");
    testing::ExpectClose(
        RunOp("layout_transform", {result_nhwc},
              Attrs{{"src_layout", std::string("NHWC")}, {"dst_layout", std::string("NCHW")}}),
        direct, 1e-12);
  }
}

TEST(WinogradOps, NhwcLayoutShapesAndErrors) {
  Attrs input{{"tile", int64_t{4}}, {"padding", Ints{1, 1, 1, 1}}, {"layout", std::string("NHWC")}};
  EXPECT_EQ(Infer("winograd_input_transform", {F32({1, 8, 8, 16})}, input).tensor().shape,
            (Shape{36, 4, 16}));
  Attrs output{
      {"tile", int64_t{4}}, {"output_shape", Ints{1, 16, 8, 8}}, {"layout", std::string("NHWC")}};
  Type y = Infer("winograd_output_transform", {F32({36, 4, 16})}, output);
  EXPECT_EQ(y.tensor().shape, (Shape{1, 8, 8, 16}));
  EXPECT_EQ(y.tensor().layout, "NHWC");
  input.Set("layout", std::string("NCHW16c"));
  EXPECT_CONTAINS(InferError("winograd_input_transform", {F32({1, 8, 8, 16})}, input),
                  "layout must be NCHW or NHWC");
  input.Set("layout", std::string("NCHW"));
  EXPECT_CONTAINS(InferError("winograd_input_transform",
                             {TensorType{{1, 8, 8, 16}, DataType::kFloat32, "NHWC"}}, input),
                  "must have no layout tag but is tagged 'NHWC'");
}

}  // namespace
}  // namespace tandem::ir
