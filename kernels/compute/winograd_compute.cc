// Winograd convolution transforms (see ir/ops/winograd_ops.cc for the ops and ir/ops/winograd.h
// for the matrices).
//
// The filter transform reads its matrix from a small table that the kernel computes first (a
// spatial block "winograd_g" selecting the constant entries) and is a reduction over the 3x3
// filter; for constant weights it runs once, at compile time.
//
// The input and output transforms run at inference time, so they are written out: every
// element of a transformed tile is its own arm of a case split on the tile position, a sum of
// the tile's elements with the matrices' constant coefficients (zeros skipped, factored by
// rows so that the arms share the row sums once their copies sit side by side):
//   winograd_input_transform:  "pad" copies the data, zero-padded to whole tiles, into NHWC
//     [N, tilesH*m + 2, tilesW*m + 2, C] so that the transform reads channels contiguously (a
//     transpose for NCHW data, a plain copy for NHWC);
//     out[xi*a + nu, p, c] = sum_j B^T[nu, j] (sum_i B^T[xi, i] pad[n, th*m + i, tw*m + j, c])
//   winograd_output_transform: the tiles [N, tilesH, m, tilesW, m, K] (NHWC of the uncropped
//     result) [.., i, .., j, k] = sum_nu A^T[j, nu] (sum_xi A^T[i, xi] y[xi*a + nu, p, k]), then
//     "crop" writes the [N, K, OH, OW] result (where an elementwise epilogue fuses; a
//     transpose) or, with layout NHWC, the [N, OH, OW, K] result (a copy).
// The dense form (a reduction over a table of B^T[xi, i] B^T[nu, j]) multiplies 36 pairs per
// element of an F(4x4,3x3) tile; this one about 7.
#include <fmt/format.h>

#include <functional>

#include "ir/error.h"
#include "ir/ops/winograd.h"
#include "kernels/case_split.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

// A block computing `table`[r, c] = matrix[r][c] (a select over the non-zero entries).
void ConstantTable(ComputeBuilder& builder, const std::string& name, const ir::Buffer& table,
                   const std::vector<std::vector<double>>& matrix) {
  builder.Compute(name, table, {"r", "c"}, [&](const std::vector<Var>& i) {
    Expr value = Constant(table->dtype, 0);
    for (size_t r = 0; r < matrix.size(); ++r) {
      for (size_t c = 0; c < matrix[r].size(); ++c) {
        if (matrix[r][c] == 0) continue;
        Expr here = i[0] == Expr(static_cast<int64_t>(r)) && i[1] == Expr(static_cast<int64_t>(c));
        value = ir::Select(here, Constant(table->dtype, matrix[r][c]), value);
      }
    }
    return value;
  });
}

ir::Buffer Table(ComputeBuilder& builder, const std::string& name, ir::DataType dtype,
                 const std::vector<std::vector<double>>& matrix) {
  ir::Buffer table = builder.AddIntermediate(
      name, dtype,
      {static_cast<int64_t>(matrix.size()), static_cast<int64_t>(matrix.front().size())});
  ConstantTable(builder, name, table, matrix);
  return table;
}

// sum_k coefficients[k] * term(k) over the non-zero coefficients, without multiplications by
// +-1: the transforms' matrices are sparse small integers and fractions, so written out with
// constant coefficients a transform costs a fraction of a dense table product.
Expr SparseSum(const std::vector<double>& coefficients, ir::DataType dtype,
               const std::function<Expr(int64_t)>& term) {
  Expr sum;
  for (size_t k = 0; k < coefficients.size(); ++k) {
    double c = coefficients[k];
    if (c == 0) continue;
    Expr t = term(static_cast<int64_t>(k));
    if (!sum.defined()) {
      sum = c == 1 ? t : Constant(dtype, c) * t;
    } else if (c == 1 || c == -1) {
      sum = c == 1 ? sum + t : sum - t;
    } else {
      sum = c > 0 ? sum + Constant(dtype, c) * t : sum - Constant(dtype, -c) * t;
    }
  }
  return sum.defined() ? sum : Constant(dtype, 0);
}

const ir::ops::WinogradMatrices& Matrices(const OpCall& call) {
  try {
    return ir::ops::Winograd(call.attrs.GetInt("tile"));
  } catch (const ir::Error& e) {
    throw LoweringError(call.op, e.message());
  }
}

}  // namespace

void LowerWinogradWeightTransform(ComputeBuilder& builder, const OpCall& call) {
  const ir::ops::WinogradMatrices& w = Matrices(call);
  const ir::Buffer& weight = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  int64_t a = w.size;
  ir::Buffer g = Table(builder, "winograd_g", out->dtype, w.g);
  builder.Reduce(call.op, out, {"e", "c", "k"}, {ReduceAxis{"i", 3}, ReduceAxis{"j", 3}},
                 Reducer::kSum, [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   Expr xi = ir::FloorDiv(s[0], Expr(a));
                   Expr nu = ir::FloorMod(s[0], Expr(a));
                   return ir::Load(g, {xi, r[0]}) * ir::Load(g, {nu, r[1]}) *
                          ir::Load(weight, {s[2], s[1], r[0], r[1]});
                 });
}

void LowerWinogradInputTransform(ComputeBuilder& builder, const OpCall& call) {
  const ir::ops::WinogradMatrices& w = Matrices(call);
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  const std::vector<int64_t>& padding = call.attrs.GetInts("padding");
  bool nhwc = call.attrs.GetString("layout") == "NHWC";
  int64_t a = w.size, m = w.tile;
  int64_t batch = data->shape[0], channels = data->shape[nhwc ? 3 : 1];
  int64_t height = data->shape[nhwc ? 1 : 2], width = data->shape[nhwc ? 2 : 3];
  int64_t top = padding[0], left = padding[1];
  int64_t tiles_h = ir::ops::WinogradTiles(height + padding[0] + padding[2] - 2, m);
  int64_t tiles_w = ir::ops::WinogradTiles(width + padding[1] + padding[3] - 2, m);
  int64_t padded_h = tiles_h * m + 2, padded_w = tiles_w * m + 2;

  ir::Buffer pad = builder.AddIntermediate(data->name + "_pad", data->dtype,
                                           {batch, padded_h, padded_w, channels});
  builder.Compute("pad", pad, {"n", "h", "w", "c"}, [&](const std::vector<Var>& i) {
    std::vector<Expr> inside;
    if (top > 0) inside.push_back(i[1] >= Expr(top));
    if (padded_h - top > height) inside.push_back(i[1] < Expr(top + height));
    if (left > 0) inside.push_back(i[2] >= Expr(left));
    if (padded_w - left > width) inside.push_back(i[2] < Expr(left + width));
    Expr load = nhwc ? ir::Load(data, {i[0], AddConst(i[1], -top), AddConst(i[2], -left), i[3]})
                     : ir::Load(data, {i[0], i[3], AddConst(i[1], -top), AddConst(i[2], -left)});
    Expr condition = All(inside);
    return condition.defined() ? ir::Select(condition, load, Constant(data->dtype, 0)) : load;
  });
  int64_t per_image = tiles_h * tiles_w;
  builder.Compute(call.op, out, {"e", "p", "c"}, [&](const std::vector<Var>& s) {
    const Expr& p = s[1];
    Expr n = batch == 1 ? Expr(0) : ir::FloorDiv(p, Expr(per_image));
    Expr in_image = batch == 1 ? Expr(p) : ir::FloorMod(p, Expr(per_image));
    Expr th = ir::FloorDiv(in_image, Expr(tiles_w));
    Expr tw = ir::FloorMod(in_image, Expr(tiles_w));
    auto tile = [&](int64_t i, int64_t j) {
      return ir::Load(pad, {n, AddConst(MulConst(th, m), i), AddConst(MulConst(tw, m), j), s[2]});
    };
    std::vector<Expr> arms;
    for (int64_t xi = 0; xi < a; ++xi) {
      for (int64_t nu = 0; nu < a; ++nu) {
        arms.push_back(SparseSum(w.bt[nu], out->dtype, [&](int64_t j) {
          return SparseSum(w.bt[xi], out->dtype, [&](int64_t i) { return tile(i, j); });
        }));
      }
    }
    return MakeCaseSplit({s[0]}, {a * a}, arms);
  });
}

void LowerWinogradOutputTransform(ComputeBuilder& builder, const OpCall& call) {
  const ir::ops::WinogradMatrices& w = Matrices(call);
  const ir::Buffer& y = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  bool nhwc = call.attrs.GetString("layout") == "NHWC";
  int64_t a = w.size, m = w.tile;
  int64_t batch = out->shape[0], channels = out->shape[nhwc ? 3 : 1];
  int64_t tiles_h = ir::ops::WinogradTiles(out->shape[nhwc ? 1 : 2], m);
  int64_t tiles_w = ir::ops::WinogradTiles(out->shape[nhwc ? 2 : 3], m);
  ir::Buffer tiles = builder.AddIntermediate(out->name + "_tiles", y->dtype,
                                             {batch, tiles_h, m, tiles_w, m, channels});
  builder.Compute(call.op, tiles, {"n", "th", "i", "tw", "j", "k"}, [&](const std::vector<Var>& s) {
    Expr p = MulConst(MulConst(s[0], tiles_h) + s[1], tiles_w) + s[3];
    std::vector<Expr> arms;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        arms.push_back(SparseSum(w.at[j], y->dtype, [&](int64_t nu) {
          return SparseSum(w.at[i], y->dtype, [&](int64_t xi) {
            return ir::Load(y, {Expr(xi * a + nu), p, s[5]});
          });
        }));
      }
    }
    return MakeCaseSplit({s[2], s[4]}, {m, m}, arms);
  });
  if (nhwc) {
    builder.Compute("crop", out, {"n", "h", "w", "k"}, [&](const std::vector<Var>& i) {
      return ir::Load(tiles, {i[0], ir::FloorDiv(i[1], Expr(m)), ir::FloorMod(i[1], Expr(m)),
                              ir::FloorDiv(i[2], Expr(m)), ir::FloorMod(i[2], Expr(m)), i[3]});
    });
    return;
  }
  builder.Compute("crop", out, {"n", "k", "h", "w"}, [&](const std::vector<Var>& i) {
    return ir::Load(tiles, {i[0], ir::FloorDiv(i[2], Expr(m)), ir::FloorMod(i[2], Expr(m)),
                            ir::FloorDiv(i[3], Expr(m)), ir::FloorMod(i[3], Expr(m)), i[1]});
  });
}

}  // namespace tandem::kernels
