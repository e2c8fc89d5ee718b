// random_compute_location: computes a block under a sampled loop of its consumers (or leaves it
// at the root), for blocks that neither inlining nor tiling took care of.
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/primitives.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class RandomComputeLocation : public ScheduleRule {
 public:
  std::string name() const override { return "random_compute_location"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    if (!BlockExists(schedule, block)) return {schedule};
    const std::string& name = schedule.BlockName(block);
    const ir::KernelFunction& fn = schedule.function();
    const ir::BlockRealizeNode* realize = FindRealize(fn, name);
    if (name == "root" || !realize || realize->block->annotations.Has(search::kTilingKey) ||
        !IsPristineNest(fn, name) || WritesOutput(fn, realize->block) ||
        ConsumersOf(fn, realize->block).empty() ||
        primitive::ComputeAtLocations(fn, name).empty()) {
      return {schedule};
    }
    Schedule s = schedule;
    search::TrySteps(s, [&] { s.ComputeAt(block, s.SampleComputeLocation(block)); });
    return {s};
  }
};

}  // namespace

ScheduleRulePtr MakeRandomComputeLocation(const SearchTarget&) {
  return std::make_shared<RandomComputeLocation>();
}

}  // namespace tandem::kernels
