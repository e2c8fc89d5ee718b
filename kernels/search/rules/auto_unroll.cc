// auto_unroll: the GPU form of parallel_vectorize_unroll: annotates the root block with a sampled
// unroll depth only (threads take the place of parallel loops and vectors);
// RewriteParallelVectorizeUnroll unrolls the loops.
#include "kernels/schedule/block_analysis.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class AutoUnroll : public ScheduleRule {
 public:
  explicit AutoUnroll(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "auto_unroll"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    if (!BlockExists(schedule, block) || schedule.BlockName(block) != "root") {
      return {schedule};
    }
    std::vector<int64_t> depths = target_.unroll_depths;
    if (depths.empty()) depths = {0};
    std::vector<double> uniform(depths.size(), 1.0 / static_cast<double>(depths.size()));
    Schedule s = schedule;
    search::TrySteps(
        s, [&] { s.Annotate(block, search::kUnrollKey, s.SampleCategorical(depths, uniform)); });
    return {s};
  }

 private:
  SearchTarget target_;
};

}  // namespace

ScheduleRulePtr MakeAutoUnroll(const SearchTarget& target) {
  return std::make_shared<AutoUnroll>(target);
}

}  // namespace tandem::kernels
