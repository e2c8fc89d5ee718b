// The register-tiled matmul schedule the code generator tests compile: a 4-row x 64-column
// tile (i -> [i0, 4], j -> [j0, 4, 16], k whole), the accumulators in a "local" cache_write
// block under the fused, parallel outer loop, init decomposed, tiles unrolled and vectorized.
#pragma once

#include "kernels/compute/lower.h"
#include "kernels/schedule/schedule.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem::testing {

// `columns_outside`: the fused outer loop is [j0, i0] (a column panel of the right operand
// serves m / 4 consecutive iterations) instead of [i0, j0].
inline ir::KernelFunction RegisterTiledMatmul(int64_t m, int64_t n, int64_t k,
                                              bool columns_outside = false) {
  ir::KernelFunction kernel =
      kernels::LowerOpCall("mm", "matmul", {}, {F32({m, k}), F32({k, n})}, F32({m, n}));
  kernels::Schedule s(kernel);
  kernels::BlockRV block = s.GetBlock("matmul");
  std::vector<kernels::LoopRV> loops = s.GetLoops(block);
  auto i = s.Split(loops[0], {-1, 4});
  auto j = s.Split(loops[1], {-1, 4, 16});
  std::vector<kernels::LoopRV> outer =
      columns_outside ? std::vector{j[0], i[0]} : std::vector{i[0], j[0]};
  s.Reorder({outer[0], outer[1], loops[2], i[1], j[1], j[2]});
  kernels::BlockRV local = s.CacheWrite(block, 0, "local");
  kernels::LoopRV fused = s.Fuse(outer);
  s.ReverseComputeAt(local, fused);
  s.Unroll(i[1]);
  s.Unroll(j[1]);
  s.Vectorize(j[2]);
  kernels::BlockRV init = s.DecomposeReduction(block, loops[2]);
  std::vector<kernels::LoopRV> init_loops = s.GetLoops(init);
  s.Unroll(init_loops[init_loops.size() - 3]);
  s.Unroll(init_loops[init_loops.size() - 2]);
  s.Vectorize(init_loops.back());
  std::vector<kernels::LoopRV> write_loops = s.GetLoops(local);
  s.Unroll(write_loops[write_loops.size() - 2]);
  s.Vectorize(write_loops.back());
  s.Parallel(fused);
  return s.function();
}

}  // namespace tandem::testing
