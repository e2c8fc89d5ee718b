// The default GPU schedule (kernels/default_schedule.h, ApplyGpuDefaultSchedule): every block's
// outer spatial loops fused and spread over thread blocks and threads, the rest of its nest run
// by each thread.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ir/kernel/functor.h"
#include "kernels/default_schedule.h"
#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels {
namespace default_schedule {

namespace {

// How many of the loops around block `name` (outermost first) are spatial: they bind no
// reduction iterator of the block, so their iterations write disjoint outputs.
size_t LeadingSpatialLoops(const Schedule& s, const std::string& name) {
  StmtPath path = GetBlockPath(s.function(), name);
  const auto* realize = ir::As<ir::BlockRealizeNode>(path.target);
  size_t count = 0;
  for (const ir::ForNode* loop : EnclosingLoops(path)) {
    if (loop->for_kind != ir::ForKind::kSerial) break;
    bool reduction = false;
    for (size_t k = 0; k < realize->iter_values.size(); ++k) {
      if (realize->block->iter_vars[k].kind == ir::IterKind::kReduction &&
          ir::UsesVar(realize->iter_values[k], loop->loop_var)) {
        reduction = true;
      }
    }
    if (reduction) break;
    ++count;
  }
  return count;
}

// Outputs per thread along each of the two tiled axes of a register tile.
constexpr int64_t kRegisterTile = 4;
// A reduction at least this long gets a thread block per output whatever the number of outputs.
constexpr int64_t kLongRow = 512;
// Partials a thread adds up in the first level of a two-level combination (FactorCombination).
constexpr int64_t kCombineGroup = 16;

}  // namespace

int64_t CombineGroup(int64_t lanes) {
  int64_t group = LargestDivisor(lanes, kCombineGroup);
  return group >= 2 && lanes / group >= 2 ? group : 0;
}

// A reduction that reuses its operands (matmul, convolution) gets a register tile per thread:
//   1. its last two leading spatial loops split by up to kRegisterTile (a divisor of each);
//   2. loop order [outer spatial] [reduction] [tile], the outer spatial loops fused, split by
//      the threads per block and bound to blockIdx.x and threadIdx.x;
//   3. the tile accumulated in a "local" cache_write block computed under the thread loop (the
//      code generator shrinks it to the tile, in registers), the tile loops unrolled.
// Skipped (false) when the block has no such reuse, fewer than two spatial loops, a tile below 4
// outputs or too few tiles to give every thread of one block one.
bool DefaultScheduler::ScheduleGpuRegisterTile(const std::string& name, int64_t threads) {
  const ir::Block& block = BlockOf(s_, name);
  if (!IsReduction(block) || !HasDataReuse(block)) return false;
  size_t spatial = LeadingSpatialLoops(s_, name);
  if (spatial < 2) return false;
  std::vector<LoopRV> loops = s_.GetLoops(s_.GetBlock(name));
  int64_t tile_a = LargestDivisor(s_.LoopExtent(loops[spatial - 2]), kRegisterTile);
  int64_t tile_b = LargestDivisor(s_.LoopExtent(loops[spatial - 1]), kRegisterTile);
  int64_t outputs = 1;
  for (size_t k = 0; k < spatial; ++k) outputs *= s_.LoopExtent(loops[k]);
  if (tile_a * tile_b < 4 || outputs / (tile_a * tile_b) < threads) return false;
  return TrySteps(s_, [&] {
    // 1. Tile.
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> all = s_.GetLoops(b);
    std::vector<LoopRV> a = s_.Split(all[spatial - 2], {-1, tile_a});
    std::vector<LoopRV> c = s_.Split(all[spatial - 1], {-1, tile_b});
    // 2. Order and threads.
    std::vector<LoopRV> outer(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(spatial - 2));
    outer.push_back(a[0]);
    outer.push_back(c[0]);
    std::vector<LoopRV> order = outer;
    order.insert(order.end(), all.begin() + static_cast<std::ptrdiff_t>(spatial), all.end());
    order.push_back(a[1]);
    order.push_back(c[1]);
    s_.Reorder(order);
    LoopRV fused = s_.Fuse(outer);
    std::vector<LoopRV> parts = s_.Split(fused, {-1, std::min(s_.LoopExtent(fused), threads)});
    s_.Bind(parts[0], "blockIdx.x");
    s_.Bind(parts[1], "threadIdx.x");
    // 3. Accumulators.
    BlockRV writeback = s_.CacheWrite(b, 0, "local");
    s_.ReverseComputeAt(writeback, parts[1]);
    done_.insert(s_.BlockName(writeback));
    s_.Unroll(a[1]);
    s_.Unroll(c[1]);
  });
}

// A reduction with a long innermost reduction and few outputs (fewer than a block has threads)
// or long rows (a norm, a global sum, the statistics of a layer norm) is spread over threads
// through partials:
//   1. the reduction loops (all after the spatial ones) fused and split by the largest divisor of
//      their extent up to the threads per block (at least 32, leaving at least 2 steps each);
//   2. the inner part factored out (rfactor) into partial results, its loop moved right after
//      the spatial loops;
//   3. with spatial loops (an output per row): one thread block per output, the combination's
//      spatial loops fused and bound to blockIdx.x, the partials computed under it with their
//      loop bound to threadIdx.x and kept in "shared" memory, combined in two levels
//      (FactorCombination: shared group sums by a few threads, then the block; every thread
//      computes the same sum; one launch);
//      without (a full reduction): the partials and their combination are two launches, which
//      the flat rule schedules (one thread per partial, then one thread).
// This reassociates the reduction, as on the CPU.
bool DefaultScheduler::ScheduleGpuSplitReduction(const std::string& name, int64_t threads) {
  const ir::Block block = BlockOf(s_, name);
  if (!IsReduction(block) || block->iter_vars.back().kind != ir::IterKind::kReduction) {
    return false;
  }
  int64_t extent = ReductionExtent(block);
  if (SpatialExtent(block) >= threads && extent < kLongRow) return false;
  size_t spatial = 0;
  while (spatial < block->iter_vars.size() &&
         block->iter_vars[spatial].kind == ir::IterKind::kSpatial) {
    ++spatial;
  }
  if (CountIterators(block, ir::IterKind::kSpatial) != spatial) return false;
  int64_t lanes = LargestDivisor(extent, threads);
  if (lanes < 32 || extent / lanes < 2) return false;
  return TrySteps(s_, [&] {
    // 1 and 2. Partials.
    BlockRV partials = FactorReductionOverLanes(name, spatial, lanes);
    // 3. One block per output.
    if (spatial == 0) return;
    std::optional<BlockRV> groups = FactorCombination(name, lanes);
    std::vector<LoopRV> combine_loops = s_.GetLoops(s_.GetBlock(name));
    std::vector<LoopRV> outputs(combine_loops.begin(),
                                combine_loops.begin() + static_cast<std::ptrdiff_t>(spatial));
    LoopRV row = outputs.size() > 1 ? s_.Fuse(outputs) : outputs[0];
    s_.Bind(row, "blockIdx.x");
    if (groups) s_.ComputeAt(*groups, row);
    s_.ComputeAt(partials, row);
    SharePartialsAcrossThreads(partials, lanes);
    if (groups) SharePartialsAcrossThreads(*groups, lanes / CombineGroup(lanes));
    done_.insert(name);
  });
}

BlockRV DefaultScheduler::FactorReductionOverLanes(const std::string& name, size_t spatial,
                                                   int64_t lanes) {
  const ir::Block block = BlockOf(s_, name);
  size_t rank = 0;
  for (const ir::BufferRegion& w : block->writes) rank = w.buffer->shape.size();
  std::vector<LoopRV> loops = s_.GetLoops(s_.GetBlock(name));
  if (loops.size() != block->iter_vars.size()) throw ScheduleError("unexpected loop nest");
  std::vector<LoopRV> reductions(loops.begin() + static_cast<std::ptrdiff_t>(spatial), loops.end());
  LoopRV reduction = reductions.size() > 1 ? s_.Fuse(reductions) : reductions[0];
  std::vector<LoopRV> parts = s_.Split(reduction, {-1, lanes});
  BlockRV partials = s_.RFactor(parts[1], static_cast<int>(rank));
  std::vector<LoopRV> rf_loops = s_.GetLoops(partials);
  std::vector<LoopRV> order(rf_loops.begin(),
                            rf_loops.begin() + static_cast<std::ptrdiff_t>(spatial));
  order.push_back(rf_loops.back());
  order.insert(order.end(), rf_loops.begin() + static_cast<std::ptrdiff_t>(spatial),
               rf_loops.end() - 1);
  s_.Reorder(order);
  return partials;
}

std::optional<BlockRV> DefaultScheduler::FactorCombination(const std::string& name, int64_t lanes) {
  int64_t group = CombineGroup(lanes);
  if (group == 0) return std::nullopt;
  std::vector<LoopRV> loops = s_.GetLoops(s_.GetBlock(name));
  if (loops.empty() || s_.LoopExtent(loops.back()) != lanes) {
    throw ScheduleError("the combination's last loop is not over the lanes");
  }
  std::vector<LoopRV> parts = s_.Split(loops.back(), {-1, group});
  size_t rank = 0;
  for (const ir::BufferRegion& w : BlockOf(s_, name)->writes) rank = w.buffer->shape.size();
  return s_.RFactor(parts[0], static_cast<int>(rank));
}

void DefaultScheduler::SharePartialsAcrossThreads(const BlockRV& partials, int64_t lanes) {
  std::vector<LoopRV> loops = s_.GetLoops(partials);
  size_t lane = 1;
  while (lane < loops.size() && s_.LoopExtent(loops[lane]) != lanes) ++lane;
  if (lane >= loops.size()) throw ScheduleError("no lane loop inside the partials' row loop");
  s_.Bind(loops[lane], "threadIdx.x");
  s_.SetScope(partials, 0, "shared");
  done_.insert(s_.BlockName(partials));
}

// Steps:
//   1. pointwise producers inlined, as on the CPU (rule 1);
//   2. a row-wise group (softmax, layer norm: row reductions feeding one elementwise block) in
//      one launch with a thread block per row (ScheduleGpuRowGroup); a matrix product:
//      thread-block tiles staged through shared memory
//      (ScheduleGpuSharedTile); another reduction with operand reuse: a register tile per
//      thread (ScheduleGpuRegisterTile); a reduction with few outputs: per-thread partials
//      (ScheduleGpuSplitReduction);
//   3. every block left (partials and their combination included), in program order: its
//      leading spatial loops fused into one loop of
//      extent E, split by the threads per block T (E itself when smaller; the last thread block
//      guarded when T does not divide E), the outer part bound to blockIdx.x and the inner to
//      threadIdx.x. Reduction loops stay inside each thread, serial. A block with no spatial
//      loop (a full reduction) is left to run on a single thread.
Schedule DefaultScheduler::RunGpu(const GpuScheduleOptions& options) {
  // 1. Producers (a costly one read by several blocks too: recomputing it per thread costs less
  // than a trip through shared memory).
  InlinePointwiseProducers(/*keep_shared_costly_producers=*/false);
  int64_t threads = std::max(1, options.threads_per_block);
  // 2. A row-wise group, register tiles, then partials of reductions with few outputs.
  ScheduleGpuRowGroup(threads);
  for (const std::string& name : s_.BlockNames()) {
    if (!Exists(name) || done_.count(name)) continue;
    if (ScheduleGpuSharedTile(name, threads) || ScheduleGpuRegisterTile(name, threads)) {
      done_.insert(name);
    }
  }
  for (const std::string& name : s_.BlockNames()) {
    if (Exists(name) && !done_.count(name)) ScheduleGpuSplitReduction(name, threads);
  }
  // 3. Other blocks (the write-back blocks of register tiles are placed already).
  for (const std::string& name : s_.BlockNames()) {
    if (!Exists(name) || done_.count(name)) continue;
    size_t spatial = LeadingSpatialLoops(s_, name);
    if (spatial == 0) continue;
    TrySteps(s_, [&] {
      std::vector<LoopRV> loops = s_.GetLoops(s_.GetBlock(name));
      loops.resize(spatial);
      LoopRV fused = spatial == 1 ? loops[0] : s_.Fuse(loops);
      int64_t extent = s_.LoopExtent(fused);
      int64_t per_block = std::min(extent, threads);
      std::vector<LoopRV> parts = s_.Split(fused, {-1, per_block});
      s_.Bind(parts[0], "blockIdx.x");
      s_.Bind(parts[1], "threadIdx.x");
    });
  }
  return s_;
}

}  // namespace default_schedule

Schedule ApplyGpuDefaultSchedule(const ir::KernelFunction& kernel,
                                 const GpuScheduleOptions& options) {
  return default_schedule::DefaultScheduler(kernel, {}).RunGpu(options);
}

}  // namespace tandem::kernels
