// The default GPU schedule (kernels/default_schedule.h, ApplyGpuDefaultSchedule): every block's
// outer spatial loops fused and spread over thread blocks and threads, the rest of its nest run
// by each thread.
#include <algorithm>
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

}  // namespace

// Steps:
//   1. pointwise producers inlined, as on the CPU (rule 1);
//   2. for each block, in program order: its leading spatial loops fused into one loop of
//      extent E, split by the threads per block T (E itself when smaller; the last thread block
//      guarded when T does not divide E), the outer part bound to blockIdx.x and the inner to
//      threadIdx.x. Reduction loops stay inside each thread, serial. A block with no spatial
//      loop (a full reduction) is left to run on a single thread.
Schedule DefaultScheduler::RunGpu(const GpuScheduleOptions& options) {
  // 1. Producers.
  InlinePointwiseProducers();
  // 2. Blocks.
  int64_t threads = std::max(1, options.threads_per_block);
  for (const std::string& name : s_.BlockNames()) {
    if (!Exists(name)) continue;
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
