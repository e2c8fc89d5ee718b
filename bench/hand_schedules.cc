#include "bench/hand_schedules.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"

namespace tandem::bench {

using kernels::BlockRV;
using kernels::LoopRV;
using kernels::Schedule;

namespace {

ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

int64_t Tile(const std::vector<int64_t>& tiles, size_t k, int64_t fallback) {
  return k < tiles.size() ? tiles[k] : fallback;
}

// Register-tiled matmul: i -> [i0, i1, i2], j -> [j0, j1, j2, 16], k -> [k0, k1], in the order
// i0 j0 | i1 j1 | k0 | i2 | k1 | j2 16 (S0 S1 R0 S2 R1 S3), the accumulator tile i2 x (j2*16)
// in a "local" buffer computed per (i1, j1) iteration, (i0, j0) fused and parallel.
Schedule MatmulSchedule(const ir::KernelFunction& kernel, const std::vector<int64_t>& tiles) {
  Schedule s(kernel);
  int64_t rows = Tile(tiles, 0, 4), vectors = Tile(tiles, 1, 4);
  int64_t row_tiles = Tile(tiles, 2, 8), column_tiles = Tile(tiles, 3, 1);
  int64_t k_inner = Tile(tiles, 4, 1);
  BlockRV block = s.GetBlock("matmul");
  if (Tile(tiles, 5, 0) == 1) {  // pack b into column panels [N / 16, K, 16] once per call
    BlockRV copy = s.CacheRead(block, 1, "global");
    s.TransformLayout(copy, 0, true, "AB", "BA16b");
    std::vector<LoopRV> copy_loops = s.GetLoops(copy);
    std::vector<LoopRV> lanes = s.Split(copy_loops.back(), {-1, 16});
    s.Vectorize(lanes[1]);
    s.Parallel(s.Fuse({copy_loops[0], lanes[0]}));
  }
  std::vector<LoopRV> loops = s.GetLoops(block);
  auto i = s.Split(loops[0], {-1, row_tiles, rows});
  auto j = s.Split(loops[1], {-1, column_tiles, vectors, 16});
  auto k = s.Split(loops[2], {-1, k_inner});
  s.Reorder({i[0], j[0], i[1], j[1], k[0], i[2], k[1], j[2], j[3]});
  BlockRV local = s.CacheWrite(block, 0, "local");
  s.ReverseComputeAt(local, j[1]);
  s.Unroll(i[2]);
  s.Unroll(k[1]);
  s.Unroll(j[2]);
  s.Vectorize(j[3]);
  BlockRV init = s.DecomposeReduction(block, k[0]);
  std::vector<LoopRV> init_loops = s.GetLoops(init);
  s.Unroll(init_loops[init_loops.size() - 3]);
  s.Unroll(init_loops[init_loops.size() - 2]);
  s.Vectorize(init_loops.back());
  std::vector<LoopRV> write_loops = s.GetLoops(local);
  auto w = s.Split(write_loops.back(), {-1, 16});
  s.Unroll(write_loops[write_loops.size() - 2]);
  s.Unroll(w[0]);
  s.Vectorize(w[1]);
  LoopRV outer = s.Fuse({i[0], j[0]});
  s.Parallel(outer);
  return s;
}

// The loop nest of `block` below its spatial loops: fused, split by 16 lanes and vectorized,
// the rest parallel (when `parallel`).
void VectorizeSpatial(Schedule& s, const BlockRV& block, bool parallel) {
  std::vector<LoopRV> loops = s.GetLoops(block);
  LoopRV fused = loops.size() > 1 ? s.Fuse(loops) : loops[0];
  int64_t extent = s.LoopExtent(fused);
  LoopRV outer = fused;
  if (extent % 16 == 0) {
    auto parts = s.Split(fused, {-1, 16});
    s.Vectorize(parts[1]);
    outer = parts[0];
  }
  if (parallel) s.Parallel(outer);
}

// Splits the innermost loop of `loops` (a tile of width `width`) into 16-lane vectors, unrolls
// the other tile loops from `first` on and vectorizes the lanes.
void UnrollAndVectorize(Schedule& s, const std::vector<LoopRV>& loops, size_t first) {
  for (size_t k = first; k + 1 < loops.size(); ++k) s.Unroll(loops[k]);
  LoopRV last = loops.back();
  int64_t extent = s.LoopExtent(last);
  if (extent > 16 && extent % 16 == 0) {
    auto parts = s.Split(last, {-1, 16});
    s.Unroll(parts[0]);
    s.Vectorize(parts[1]);
  } else {
    s.Vectorize(last);
  }
}

// Direct NCHW convolution: output channels x output width as the register tile (the width
// vectorized, input rows loaded as vectors, weights broadcast), the reduction over input
// channels and taps around it, (n, co, h) fused and parallel; the pad stage stays separate.
Schedule ConvolutionSchedule(const ir::KernelFunction& kernel, const std::vector<int64_t>& tiles) {
  Schedule s(kernel);
  int64_t width_tile = Tile(tiles, 0, 16), channel_tile = Tile(tiles, 1, 8);
  int64_t row_tile = Tile(tiles, 2, 1);
  BlockRV block = s.GetBlock("conv2d");
  std::vector<LoopRV> loops = s.GetLoops(block);  // n co h w ci kh kw
  auto co = s.Split(loops[1], {-1, channel_tile});
  auto h = s.Split(loops[2], {-1, row_tile});
  auto w = s.Split(loops[3], {-1, width_tile});
  s.Reorder({loops[0], co[0], h[0], w[0], loops[4], loops[5], loops[6], co[1], h[1], w[1]});
  BlockRV local = s.CacheWrite(block, 0, "local");
  s.ReverseComputeAt(local, w[0]);
  s.Unroll(co[1]);
  s.Unroll(h[1]);
  if (width_tile > 16 && width_tile % 16 == 0) {
    auto lanes = s.Split(w[1], {-1, 16});
    s.Unroll(lanes[0]);
    s.Vectorize(lanes[1]);
  } else {
    s.Vectorize(w[1]);
  }
  BlockRV init = s.DecomposeReduction(block, loops[4]);
  std::vector<LoopRV> init_loops = s.GetLoops(init);
  UnrollAndVectorize(s, init_loops, init_loops.size() - 4);
  std::vector<LoopRV> write_loops = s.GetLoops(local);
  UnrollAndVectorize(s, write_loops, write_loops.size() - 4);
  s.Parallel(s.Fuse({loops[0], co[0], h[0]}));
  for (const std::string& name : s.BlockNames()) {
    if (name == "pad") VectorizeSpatial(s, s.GetBlock(name), true);
  }
  return s;
}

// Direct NCHW16c convolution: the 16 output channels of a block vectorized (contiguous weight
// loads, input elements broadcast), output-channel blocks x output width as the register tile,
// the reduction (ci, kh, kw, ci_i) around it, (n, co, h) fused and parallel.
Schedule BlockedConvolutionSchedule(const ir::KernelFunction& kernel,
                                    const std::vector<int64_t>& tiles) {
  Schedule s(kernel);
  int64_t width_tile = Tile(tiles, 0, 7), block_tile = Tile(tiles, 1, 2);
  BlockRV block = s.GetBlock("conv2d");
  std::vector<LoopRV> loops = s.GetLoops(block);  // n co h w co_i ci ci_i kh kw
  auto co = s.Split(loops[1], {-1, block_tile});
  auto w = s.Split(loops[3], {-1, width_tile});
  s.Reorder({loops[0], co[0], loops[2], w[0], loops[5], loops[7], loops[8], loops[6], co[1], w[1],
             loops[4]});
  BlockRV local = s.CacheWrite(block, 0, "local");
  s.ReverseComputeAt(local, w[0]);
  s.Unroll(co[1]);
  s.Unroll(w[1]);
  s.Vectorize(loops[4]);
  BlockRV init = s.DecomposeReduction(block, loops[5]);
  std::vector<LoopRV> init_loops = s.GetLoops(init);
  for (size_t k = init_loops.size() - 3; k + 1 < init_loops.size(); ++k) s.Unroll(init_loops[k]);
  s.Vectorize(init_loops.back());
  std::vector<LoopRV> write_loops = s.GetLoops(local);
  for (size_t k = write_loops.size() - 5; k + 1 < write_loops.size(); ++k) {
    s.Unroll(write_loops[k]);
  }
  s.Vectorize(write_loops.back());
  s.Parallel(s.Fuse({loops[0], co[0], loops[2]}));
  for (const std::string& name : s.BlockNames()) {
    if (name == "pad") VectorizeSpatial(s, s.GetBlock(name), true);
  }
  return s;
}

}  // namespace

HandWorkload MakeHandWorkload(const std::string& op, std::vector<int64_t> shape) {
  HandWorkload w;
  w.op = op;
  if (op == "gmm") {
    if (shape.empty()) shape = {512};
    if (shape.size() == 1) shape = {shape[0], shape[0], shape[0]};
    if (shape.size() != 3) throw ir::Error("gmm takes --shape M [N K]");
    int64_t m = shape[0], n = shape[1], k = shape[2];
    w.kernel = kernels::LowerOpCall("gmm", "matmul", {}, {F32({m, k}), F32({k, n})}, F32({m, n}));
    w.description = fmt::format("[{},{}]x[{},{}]", m, k, k, n);
    w.flops = 2.0 * m * n * k;
  } else if (op == "conv" || op == "conv16c") {
    bool blocked = op == "conv16c";
    if (shape.empty()) {
      shape = blocked ? std::vector<int64_t>{64, 64, 56, 56, 3, 1, 1}
                      : std::vector<int64_t>{3, 64, 224, 224, 7, 2, 3};
    }
    if (shape.size() != 7) throw ir::Error("conv takes --shape C O H W kernel stride pad");
    int64_t c = shape[0], o = shape[1], h = shape[2], wd = shape[3], k = shape[4];
    int64_t stride = shape[5], pad = shape[6];
    ir::Attrs attrs{{"strides", std::vector<int64_t>{stride, stride}},
                    {"padding", std::vector<int64_t>{pad, pad, pad, pad}}};
    ir::TensorType data = F32({1, c, h, wd}), weight = F32({o, c, k, k});
    if (blocked) {
      if (c % 16 != 0 || o % 16 != 0) throw ir::Error("conv16c needs channels divisible by 16");
      attrs.Set("data_layout", std::string("NCHW16c"));
      attrs.Set("kernel_layout", std::string("OIHW16i16o"));
      data = F32({1, c / 16, h, wd, 16});
      weight = F32({o / 16, c / 16, k, k, 16, 16});
    }
    std::vector<ir::Type> types{data, weight};
    ir::Type out = ir::InferCallType("conv2d", types, attrs);
    w.kernel = kernels::LowerOpCall("conv", "conv2d", attrs, {data, weight}, out);
    const ir::Shape& result = out.tensor().shape;
    w.description = fmt::format("x[1,{},{},{}] w[{},{},{},{}] s{} p{} -> {}", c, h, wd, o, c, k, k,
                                stride, pad, ir::ShapeToString(result));
    w.flops = 2.0 * static_cast<double>(ir::NumElements(result)) * c * k * k;
  } else {
    throw ir::Error(fmt::format("unknown op '{}'", op));
  }
  w.shape = shape;
  return w;
}

Schedule ApplyHandSchedule(const HandWorkload& workload, std::vector<int64_t> tiles) {
  if (workload.op == "gmm") return MatmulSchedule(workload.kernel, tiles);
  if (workload.op == "conv") return ConvolutionSchedule(workload.kernel, tiles);
  if (workload.op == "conv16c") return BlockedConvolutionSchedule(workload.kernel, tiles);
  throw ir::Error(fmt::format("no hand schedule for '{}'", workload.op));
}

}  // namespace tandem::bench
