// cross_thread_reduction: a reduction with long rows spread over the threads of a block.
//
// For a reduction block in its own nest whose loops are [spatial...] [reduction...], with no
// operand reuse (row sums, norms, softmax statistics; matrix products are tiled instead) and a
// reduction of at least two warps, adds a design space (beside the block unchanged) where:
//   1. the reduction loops are fused and split by a sampled number of threads (a power of two
//      from the warp size up to the target's limit that divides the reduction, leaving at least
//      two steps per thread);
//   2. the inner part is factored out (rfactor) into per-thread partial results, its loop moved
//      right after the spatial loops;
//   3. with spatial loops: one thread block per output (the combination's spatial loops fused
//      and bound to blockIdx.x), the partials computed under it with their loop bound to
//      threadIdx.x into "shared" memory, and combined by the block in the same launch; without
//      (a full reduction): the partials are a launch of their own that AutoBind spreads, the
//      combination a launch on one thread.
// The sampled thread count annotates the partials block (kThreadExtentKey). This reassociates the
// reduction.
#include <optional>

#include "kernels/schedule/block_analysis.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class CrossThreadReduction : public ScheduleRule {
 public:
  explicit CrossThreadReduction(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "cross_thread_reduction"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    const ir::BlockRealizeNode* realize = PristineReduction(schedule, block);
    if (!realize) return {schedule};
    const ir::Block b = realize->block;
    if (HasDataReuse(b)) return {schedule};
    size_t spatial = 0;
    while (spatial < b->iter_vars.size() && b->iter_vars[spatial].kind == ir::IterKind::kSpatial) {
      ++spatial;
    }
    if (CountIterators(b, ir::IterKind::kSpatial) != spatial) return {schedule};
    int64_t extent = ReductionExtent(b);
    std::vector<int64_t> counts;
    for (int64_t count : search::ThreadCountCandidates(extent, target_.warp_size,
                                                       target_.max_threads_per_block, true)) {
      if (count >= target_.warp_size && extent / count >= 2) counts.push_back(count);
    }
    if (counts.empty()) return {schedule};
    size_t rank = 0;
    for (const ir::BufferRegion& w : b->writes) rank = w.buffer->shape.size();
    Schedule s = schedule;
    bool done = search::TrySteps(s, [&] {
      // 1. Split.
      std::vector<LoopRV> loops = s.GetLoops(block);
      if (loops.size() != b->iter_vars.size()) throw ScheduleError("unexpected loop nest");
      std::vector<LoopRV> reductions(loops.begin() + static_cast<std::ptrdiff_t>(spatial),
                                     loops.end());
      LoopRV reduction = reductions.size() > 1 ? s.Fuse(reductions) : reductions[0];
      std::vector<double> uniform(counts.size(), 1.0 / static_cast<double>(counts.size()));
      ExprRV lanes = s.SampleCategorical(counts, uniform);
      std::vector<LoopRV> parts = s.Split(reduction, {-1, lanes});
      // 2. Partials, their loop right after the spatial ones.
      BlockRV partials = s.RFactor(parts[1], static_cast<int>(rank));
      std::vector<LoopRV> rf_loops = s.GetLoops(partials);
      std::vector<LoopRV> order(rf_loops.begin(),
                                rf_loops.begin() + static_cast<std::ptrdiff_t>(spatial));
      order.push_back(rf_loops.back());
      order.insert(order.end(), rf_loops.begin() + static_cast<std::ptrdiff_t>(spatial),
                   rf_loops.end() - 1);
      s.Reorder(order);
      s.Annotate(partials, search::kThreadExtentKey, lanes);
      if (spatial == 0) return;
      // 3. One thread block per output.
      std::vector<LoopRV> combine = s.GetLoops(block);
      combine.resize(spatial);
      LoopRV row = spatial > 1 ? s.Fuse(combine) : combine[0];
      s.Bind(row, "blockIdx.x");
      s.ComputeAt(partials, row);
      // Under the block loop: a loop of extent 1 for each fused output axis, then the partials'.
      std::optional<LoopRV> lane_loop;
      std::vector<LoopRV> under = s.GetLoops(partials);
      for (size_t k = 1; k < under.size() && !lane_loop; ++k) {
        if (s.LoopExtent(under[k]) == s.Value(lanes)) lane_loop = under[k];
      }
      if (!lane_loop) throw ScheduleError("no loop over the partials under the block loop");
      s.Bind(*lane_loop, "threadIdx.x");
      s.SetScope(partials, 0, "shared");
    });
    if (!done) return {schedule};
    return {schedule, s};
  }

 private:
  SearchTarget target_;
};

}  // namespace

ScheduleRulePtr MakeCrossThreadReduction(const SearchTarget& target) {
  return std::make_shared<CrossThreadReduction>(target);
}

}  // namespace tandem::kernels
