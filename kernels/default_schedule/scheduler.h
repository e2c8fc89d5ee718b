// The scheduler behind ApplyDefaultSchedule (kernels/default_schedule.h): applies the default
// rules to a kernel's blocks through a Schedule. Its rules live in files named after them:
// register_tiled_schedule.cc (rule 2), row_group_schedule.cc (rule 2a), reduction_schedule.cc
// (rules 3 and 4) and spatial_schedule.cc (rules 5 and 6); default_schedule.cc runs them in order
// (rule 1 first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/kernel/stmt.h"
#include "kernels/default_schedule.h"
#include "kernels/default_schedule/access_model.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels::default_schedule {

// The block `name` of the schedule's function (which must exist).
const ir::Block& BlockOf(const Schedule& s, const std::string& name);
// True when `consumer`, which reads what `producer` writes, would recompute an inlined
// `producer` too often: a spatial block that loads it more than a few times, or that broadcasts
// a costly producer (a squeeze-excite scale: one sigmoid per channel, multiplied into every
// pixel of the channel), or a reduction that reads each of its elements many times (a dense
// convolution's pad). The default schedule and the search's auto_inline both keep such a
// producer a stage of its own.
bool KeepsProducerSeparate(const ir::Block& producer, const ir::Block& consumer);
// The largest divisor of `extent` that is at most `limit`.
int64_t LargestDivisor(int64_t extent, int64_t limit);
// How many partials a thread adds up in the first level of combining `lanes` partials (at most
// 16); 0 when no split leaves two or more of each level.
int64_t CombineGroup(int64_t lanes);

// A row-wise group of a kernel (softmax: max, then the exponentials and their sum, then the
// quotient; layer norm: mean, variance, then the normalized output): reduction blocks over the
// trailing axes of the same rows and elementwise blocks over those rows, ending with an
// elementwise block; no other block.
struct RowGroup {
  std::vector<std::string> stages;      // every block but the last, in block order
  std::vector<std::string> reductions;  // the reduction blocks among them
  std::string elementwise;              // the last block
  size_t row_axes = 0;                  // leading spatial iterators of every block (the rows)
  int64_t rows = 0;                     // their extent
  int64_t row_length = 0;               // the elementwise blocks' trailing extent (one for all)
  int64_t reduced_gcd = 0;              // gcd of the reductions' extents
};

// Applies the default rules to one kernel; each rule that turns out illegal for a block leaves
// the schedule as it was (TrySteps) and the next rule is tried.
class DefaultScheduler {
 public:
  DefaultScheduler(const ir::KernelFunction& kernel, const DefaultScheduleOptions& options);

  // The kernel with every block scheduled.
  Schedule Run();
  // The kernel with every block scheduled for a GPU (gpu_schedule.cc).
  Schedule RunGpu(const GpuScheduleOptions& options);

 private:
  bool Exists(const std::string& name) const;

  // Rule 1 (default_schedule.cc).
  void InlinePointwiseProducers(bool keep_shared_costly_producers);

  // The GPU rules for reductions with operand reuse (gpu_shared_tile_schedule.cc,
  // gpu_schedule.cc).
  bool ScheduleGpuSharedTile(const std::string& name, int64_t threads);
  bool ScheduleGpuRegisterTile(const std::string& name, int64_t threads);
  bool ScheduleGpuSplitReduction(const std::string& name, int64_t threads);
  // The reduction loops of block `name` (after its `spatial` leading spatial loops) fused, split
  // by `lanes` and the inner part factored into partials (rfactor) whose lane loop comes right
  // after the spatial loops. Returns the partials; the block combines them. Inside TrySteps.
  BlockRV FactorReductionOverLanes(const std::string& name, size_t spatial, int64_t lanes);
  // Partials computed at a (fused) row loop bound to blockIdx.x: their lane loop, right inside
  // it, bound to threadIdx.x and their buffer put in "shared" memory for the block to combine.
  void SharePartialsAcrossThreads(const BlockRV& partials, int64_t lanes);
  // The combination `name` of `lanes` partials (FactorReductionOverLanes) made two-level: groups
  // of CombineGroup(lanes) partials summed into group sums (the returned block, to be computed
  // and shared like the partials), which the combination then adds up; each thread then reads
  // lanes / group + group values instead of all lanes. None when the lanes do not split so.
  // Before any compute_at of the blocks involved. Inside TrySteps.
  std::optional<BlockRV> FactorCombination(const std::string& name, int64_t lanes);
  // A row-wise group (softmax, layer norm; gpu_row_group_schedule.cc).
  bool ScheduleGpuRowGroup(int64_t threads);
  // The blocks not yet scheduled when they form a row group (row_group_schedule.cc).
  std::optional<RowGroup> FindRowGroup() const;
  // The loops of a row group's elementwise block fused into (rows, columns), for the CPU and GPU
  // row-group rules. Inside TrySteps.
  std::pair<LoopRV, LoopRV> FuseRowsAndColumns(const RowGroup& group);
  // Rule 2a, the CPU rule for a row group (row_group_schedule.cc).
  bool ScheduleRowGroup();
  // An elementwise stage of a row group computed at the group's row loop (the first `row_axes`
  // iterators of the stage are the rows), its columns vectorized. Inside TrySteps.
  void ComputeElementwiseStageAt(const std::string& name, const LoopRV& row, size_t row_axes);

  // Rule 2 (register_tiled_schedule.cc). The loops of a register-tiled block once split:
  // outer spatial loops (those the vector operands depend on first), reduction loops, the tile
  // loops of the broadcast and second axes, and the vector loop.
  struct TileLoops {
    std::vector<LoopRV> outer, reduction, tile;
    LoopRV vector_loop;
    // Iterations of the fused outer loops from one set of vector operands (a weight panel) to
    // the next, when they stream from memory; 0 when they stay in L1 or never change.
    int64_t panel_iterations = 0;
    int64_t outer_iterations = 1;  // iterations of the fused outer loops
  };
  bool ScheduleRegisterTiled(const std::string& name);
  TileLoops SplitTileLoops(const BlockRV& b, const ir::Block& block, const AccessModel& model,
                           const RegisterTile& plan);
  void OrderReductionLoops(const ir::Block& block, const AccessModel& model,
                           std::vector<LoopRV>& reduction);
  void PackVectorOperands(const BlockRV& b, const ir::Block& block, const AccessModel& model,
                          const RegisterTile& plan);
  void InlineEpilogues(const std::string& reduction, const std::string& writeback);
  void UnrollTileAndVectorize(const BlockRV& block, size_t count);

  // Rules 3 and 4 (reduction_schedule.cc).
  bool ScheduleRowReduction(const std::string& name);
  void ScheduleReduction(const std::string& name);

  // Rules 5 and 6 (spatial_schedule.cc).
  bool ScheduleCaseSplit(const std::string& name);
  void ScheduleSpatialInner(const std::string& name);
  void ScheduleSpatial(const std::string& name);
  void ScheduleSpatialFused(const std::string& name);
  bool ScheduleSpatialRows(const std::string& name);
  bool ScheduleTranspose(const std::string& name);
  bool ScheduleBlockedTranspose(const std::string& name);

  Schedule s_;
  DefaultScheduleOptions options_;
  int threads_ = 1;
  std::set<std::string> done_;  // blocks already scheduled (or created by a rule)
};

}  // namespace tandem::kernels::default_schedule
