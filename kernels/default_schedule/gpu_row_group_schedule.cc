// The GPU rule for row-wise groups: reductions over the rows of a tensor feeding one elementwise
// block over the same rows (softmax: max, then the sum of exponentials, then the quotient; layer
// norm: mean, variance, then the normalized output) run in one launch, a thread block per row.
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/primitives.h"

namespace tandem::kernels::default_schedule {

namespace {

// Rows shorter than a warp leave most threads of a block idle: one thread per row does better.
constexpr int64_t kMinLanes = 32;

}  // namespace

// A kernel whose blocks left are reductions R1..Rn (each reducing the trailing axes of its rows)
// followed by one elementwise block E over the same rows, e.g. a fused softmax or layer norm:
//   1. lanes: the largest divisor, up to the threads per block and at least kMinLanes, of the
//      row length of E and of every reduction;
//   2. E's row loops fused and bound to blockIdx.x; its other loops fused, split by the lanes,
//      the lane part bound to threadIdx.x and moved outside the rest (consecutive threads,
//      consecutive elements);
//   3. each reduction, last first: factored over the lanes into partials (as for long rows),
//      the combination in two levels (FactorCombination), computed at E's row loop into a
//      "local" buffer (every thread of the block combines the same group sums, so each holds the
//      row's value), the group sums and the partials computed there too, each with its lane loop
//      bound to threadIdx.x in "shared" memory.
// The code generator puts a barrier between the partials and their combination. Skipped (false,
// schedule unchanged) when the blocks do not have that shape or a step is illegal.
bool DefaultScheduler::ScheduleGpuRowGroup(int64_t threads) {
  std::optional<RowGroup> group = FindRowGroup();
  if (!group || group->stages.size() != group->reductions.size()) return false;
  // 1. The lanes.
  size_t row_axes = group->row_axes;
  int64_t lanes = LargestDivisor(std::gcd(group->reduced_gcd, group->row_length), threads);
  if (lanes < kMinLanes) return false;
  const std::vector<std::string>& reductions = group->reductions;
  return TrySteps(s_, [&] {
    // 2. The elementwise block.
    auto [row, column] = FuseRowsAndColumns(*group);
    std::vector<LoopRV> parts = s_.Split(column, {-1, lanes});
    s_.Reorder({parts[1], parts[0]});
    s_.Bind(row, "blockIdx.x");
    s_.Bind(parts[1], "threadIdx.x");
    // 3. The reductions, consumers before their producers.
    for (auto name = reductions.rbegin(); name != reductions.rend(); ++name) {
      BlockRV partials = FactorReductionOverLanes(*name, row_axes, lanes);
      std::optional<BlockRV> groups = FactorCombination(*name, lanes);
      BlockRV combination = s_.GetBlock(*name);
      s_.ComputeAt(combination, row);
      s_.SetScope(combination, 0, "local");
      if (groups) s_.ComputeAt(*groups, row);
      s_.ComputeAt(partials, row);
      SharePartialsAcrossThreads(partials, lanes);
      if (groups) SharePartialsAcrossThreads(*groups, lanes / CombineGroup(lanes));
      done_.insert(*name);
    }
    done_.insert(group->elementwise);
  });
}

}  // namespace tandem::kernels::default_schedule
