// The default GPU schedule's rule for matrix products: thread-block tiles whose operands are
// staged through shared memory (see ScheduleGpuSharedTile).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"

namespace tandem::kernels::default_schedule {

namespace {

// Outputs per thread along each of the two tiled axes.
constexpr int64_t kThreadTile = 4;
// Reduction steps staged per shared-memory tile.
constexpr int64_t kStagedSteps = 16;
// Threads of a block along the last spatial axis (the rest go along the one before).
constexpr int64_t kThreadsAlongColumns = 16;

}  // namespace

// A reduction with operand reuse whose nest is [spatial...] [one reduction] (matmul, batched
// matmul, dense) gets a thread-block tile of its last two spatial axes, each thread a
// kThreadTile x kThreadTile register tile of it, and its operands staged tile by tile through
// shared memory:
//   1. the tile planned: per thread up to kThreadTile outputs along each axis (a divisor of its
//      extent), threads per block along each (a divisor of what is left, the product at most
//      `threads` and at least a quarter of it), a reduction step of up to kStagedSteps;
//   2. the loops split and ordered [outer spatial] [reduction outer] [threads] [reduction inner]
//      [register tile], the outer spatial loops fused and bound to blockIdx.x, the thread loops
//      fused and bound to threadIdx.x;
//   3. the accumulators in a "local" cache_write block written back under blockIdx.x, its loops
//      split like the tile and bound to the same threads, the register tile loops unrolled;
//   4. each operand that is not the output cached in "shared" memory under the outer reduction
//      loop, its copy's loops fused and spread over the block's threads (consecutive threads
//      copy consecutive elements; as many threads as divide the copy evenly).
// The code generator places the barriers between the copies and the products that read them.
// False (schedule unchanged) when the block does not have that shape or the tile would be small.
bool DefaultScheduler::ScheduleGpuSharedTile(const std::string& name, int64_t threads) {
  const ir::Block block = BlockOf(s_, name);
  if (!IsReduction(block) || !HasDataReuse(block)) return false;
  size_t rank = block->iter_vars.size();
  if (rank < 3 || block->iter_vars.back().kind != ir::IterKind::kReduction ||
      CountIterators(block, ir::IterKind::kReduction) != 1) {
    return false;
  }
  // 1. The plan.
  int64_t rows = block->iter_vars[rank - 3].extent, columns = block->iter_vars[rank - 2].extent;
  int64_t steps = block->iter_vars[rank - 1].extent;
  int64_t tile_rows = LargestDivisor(rows, kThreadTile);
  int64_t tile_columns = LargestDivisor(columns, kThreadTile);
  int64_t threads_columns =
      LargestDivisor(columns / tile_columns, std::min(kThreadsAlongColumns, threads));
  int64_t threads_rows = LargestDivisor(rows / tile_rows, threads / threads_columns);
  int64_t step = LargestDivisor(steps, kStagedSteps);
  int64_t block_threads = threads_rows * threads_columns;
  if (tile_rows * tile_columns < 4 || block_threads < std::max<int64_t>(threads / 4, 32) ||
      step < 4 || steps / step < 2) {
    return false;
  }
  std::vector<int> operands;
  for (size_t r = 0; r < block->reads.size(); ++r) {
    bool output = false;
    for (const ir::BufferRegion& w : block->writes)
      output = output || w.buffer == block->reads[r].buffer;
    if (!output) operands.push_back(static_cast<int>(r));
  }
  return TrySteps(s_, [&] {
    // 2. Loops, blocks and threads.
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.size() != rank) throw ScheduleError("unexpected loop nest");
    std::vector<LoopRV> row = s_.Split(loops[rank - 3], {-1, threads_rows, tile_rows});
    std::vector<LoopRV> column = s_.Split(loops[rank - 2], {-1, threads_columns, tile_columns});
    std::vector<LoopRV> reduction = s_.Split(loops[rank - 1], {-1, step});
    std::vector<LoopRV> outer(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(rank - 3));
    outer.push_back(row[0]);
    outer.push_back(column[0]);
    std::vector<LoopRV> order = outer;
    order.insert(order.end(), {reduction[0], row[1], column[1], reduction[1], row[2], column[2]});
    s_.Reorder(order);
    LoopRV block_loop = s_.Fuse(outer);
    LoopRV thread_loop = s_.Fuse({row[1], column[1]});
    s_.Bind(block_loop, "blockIdx.x");
    s_.Bind(thread_loop, "threadIdx.x");
    // 3. Accumulators (first: the copies would otherwise share the block's loops with it).
    BlockRV writeback = s_.CacheWrite(b, 0, "local");
    s_.ReverseComputeAt(writeback, block_loop);
    std::vector<LoopRV> write_loops = s_.GetLoops(writeback);
    if (write_loops.size() < 3) throw ScheduleError("unexpected write-back nest");
    LoopRV write_rows = write_loops[write_loops.size() - 2];
    LoopRV write_columns = write_loops.back();
    std::vector<LoopRV> wr = s_.Split(write_rows, {threads_rows, tile_rows});
    std::vector<LoopRV> wc = s_.Split(write_columns, {threads_columns, tile_columns});
    s_.Reorder({wr[0], wc[0], wr[1], wc[1]});
    s_.Bind(s_.Fuse({wr[0], wc[0]}), "threadIdx.x");
    s_.Unroll(wr[1]);
    s_.Unroll(wc[1]);
    s_.Unroll(row[2]);
    s_.Unroll(column[2]);
    // 4. Operands in shared memory.
    for (auto it = operands.rbegin(); it != operands.rend(); ++it) {
      // The first copy goes to the top and moves under the reduction loop; later ones are
      // placed there already (the block's nest under it is no longer its own).
      BlockRV copy = s_.CacheRead(b, *it, "shared");
      std::vector<LoopRV> copy_loops = s_.GetLoops(copy);
      if (copy_loops.size() < 2 || !s_.LoopVar(copy_loops[1]).same_as(s_.LoopVar(reduction[0]))) {
        s_.ComputeAt(copy, reduction[0]);
        copy_loops = s_.GetLoops(copy);
      }
      std::vector<LoopRV> region(copy_loops.begin() + 2, copy_loops.end());
      LoopRV fused = region.size() > 1 ? s_.Fuse(region) : region[0];
      // An exact split: a guarded last round would widen the tile the code generator sizes.
      int64_t spread = LargestDivisor(s_.LoopExtent(fused), block_threads);
      std::vector<LoopRV> parts = s_.Split(fused, {-1, spread});
      s_.Reorder({parts[1], parts[0]});
      s_.Bind(parts[1], "threadIdx.x");
      done_.insert(s_.BlockName(copy));
    }
    done_.insert(s_.BlockName(writeback));
  });
}

}  // namespace tandem::kernels::default_schedule
