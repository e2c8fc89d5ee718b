// Winograd convolution transforms (see ir/ops/winograd_ops.cc for the ops and ir/ops/winograd.h
// for the matrices).
//
// The transform matrices are small tables that each kernel computes first, in a spatial block
// ("winograd_bt", "winograd_g", "winograd_at") whose body selects the constant entry; the
// transform itself is then a reduction that reads the table like an operand, so the default
// schedule and the kernel search treat it like a small matrix product (vector lanes along the
// channel axis, the table entries broadcast):
//   winograd_weight_transform: out[e, c, k] = sum_{i,j} G[e/a, i] G[e%a, j] weight[k, c, i, j]
//   winograd_input_transform:  "pad" copies the data, zero-padded to whole tiles, into NHWC
//     [N, tilesH*m + 2, tilesW*m + 2, C] so that the transform reads channels contiguously;
//     out[e, p, c] = sum_{i,j} B^T[e/a, i] B^T[e%a, j] pad[n, th*m + i, tw*m + j, c]
//   winograd_output_transform: the tiles [N, tilesH, m, tilesW, m, K] (NHWC of the uncropped
//     result) = sum_{xi,nu} A^T[i, xi] A^T[j, nu] y[xi*a + nu, p, k], then "crop" writes the
//     [N, K, OH, OW] result (where an elementwise epilogue fuses).
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/ops/winograd.h"
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
  int64_t a = w.size, m = w.tile;
  int64_t batch = data->shape[0], channels = data->shape[1];
  int64_t height = data->shape[2], width = data->shape[3];
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
    Expr load = ir::Load(data, {i[0], i[3], AddConst(i[1], -top), AddConst(i[2], -left)});
    Expr condition = All(inside);
    return condition.defined() ? ir::Select(condition, load, Constant(data->dtype, 0)) : load;
  });
  ir::Buffer bt = Table(builder, "winograd_bt", out->dtype, w.bt);
  int64_t per_image = tiles_h * tiles_w;
  builder.Reduce(
      call.op, out, {"e", "p", "c"}, {ReduceAxis{"i", a}, ReduceAxis{"j", a}}, Reducer::kSum,
      [&](const std::vector<Var>& s, const std::vector<Var>& r) {
        const Expr& p = s[1];
        Expr n = batch == 1 ? Expr(0) : ir::FloorDiv(p, Expr(per_image));
        Expr in_image = batch == 1 ? Expr(p) : ir::FloorMod(p, Expr(per_image));
        Expr th = ir::FloorDiv(in_image, Expr(tiles_w));
        Expr tw = ir::FloorMod(in_image, Expr(tiles_w));
        Expr xi = ir::FloorDiv(s[0], Expr(a));
        Expr nu = ir::FloorMod(s[0], Expr(a));
        Expr tile = ir::Load(pad, {n, MulConst(th, m) + r[0], MulConst(tw, m) + r[1], s[2]});
        return ir::Load(bt, {xi, r[0]}) * ir::Load(bt, {nu, r[1]}) * tile;
      });
}

void LowerWinogradOutputTransform(ComputeBuilder& builder, const OpCall& call) {
  const ir::ops::WinogradMatrices& w = Matrices(call);
  const ir::Buffer& y = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  int64_t a = w.size, m = w.tile;
  int64_t batch = out->shape[0], channels = out->shape[1];
  int64_t tiles_h = ir::ops::WinogradTiles(out->shape[2], m);
  int64_t tiles_w = ir::ops::WinogradTiles(out->shape[3], m);
  ir::Buffer at = Table(builder, "winograd_at", y->dtype, w.at);
  ir::Buffer tiles = builder.AddIntermediate(out->name + "_tiles", y->dtype,
                                             {batch, tiles_h, m, tiles_w, m, channels});
  builder.Reduce(
      call.op, tiles, {"n", "th", "i", "tw", "j", "k"}, {ReduceAxis{"xi", a}, ReduceAxis{"nu", a}},
      Reducer::kSum, [&](const std::vector<Var>& s, const std::vector<Var>& r) {
        Expr p = MulConst(MulConst(s[0], tiles_h) + s[1], tiles_w) + s[3];
        Expr e = MulConst(r[0], a) + r[1];
        return ir::Load(at, {s[2], r[0]}) * ir::Load(at, {s[4], r[1]}) * ir::Load(y, {e, p, s[5]});
      });
  builder.Compute("crop", out, {"n", "k", "h", "w"}, [&](const std::vector<Var>& i) {
    return ir::Load(tiles, {i[0], ir::FloorDiv(i[2], Expr(m)), ir::FloorMod(i[2], Expr(m)),
                            ir::FloorDiv(i[3], Expr(m)), ir::FloorMod(i[3], Expr(m)), i[1]});
  });
}

}  // namespace tandem::kernels
