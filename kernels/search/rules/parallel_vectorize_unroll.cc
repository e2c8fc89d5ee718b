// parallel_vectorize_unroll: annotates the root block with how the program's loops should run
// in parallel, in vectors and unrolled; RewriteParallelVectorizeUnroll makes the loops.
#include <algorithm>

#include "kernels/schedule/block_analysis.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class ParallelVectorizeUnroll : public ScheduleRule {
 public:
  explicit ParallelVectorizeUnroll(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "parallel_vectorize_unroll"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    if (!BlockExists(schedule, block) || schedule.BlockName(block) != "root") {
      return {schedule};
    }
    // Largest parallel extents: serial, or a few jobs per core (most likely 16).
    int64_t cores = std::max(1, target_.num_cores);
    std::vector<int64_t> extents;
    std::vector<double> weights;
    const std::pair<int64_t, double> choices[] = {
        {1, 0.1}, {cores * 4, 0.2}, {cores * 16, 0.5}, {cores * 64, 0.2}};
    for (const auto& [extent, weight] : choices) {
      auto it = std::find(extents.begin(), extents.end(), extent);
      if (it == extents.end()) {
        extents.push_back(extent);
        weights.push_back(weight);
      } else {
        weights[static_cast<size_t>(it - extents.begin())] += weight;
      }
    }
    std::vector<int64_t> depths = target_.unroll_depths;
    if (depths.empty()) depths = {0};
    std::vector<double> uniform(depths.size(), 1.0 / static_cast<double>(depths.size()));
    Schedule s = schedule;
    search::TrySteps(s, [&] {
      s.Annotate(block, search::kParallelKey, s.SampleCategorical(extents, weights));
      s.Annotate(block, search::kVectorizeKey,
                 int64_t{std::max(1, target_.vector_lanes) * int64_t{4}});
      s.Annotate(block, search::kUnrollKey, s.SampleCategorical(depths, uniform));
    });
    return {s};
  }

 private:
  SearchTarget target_;
};

}  // namespace

ScheduleRulePtr MakeParallelVectorizeUnroll(const SearchTarget& target) {
  return std::make_shared<ParallelVectorizeUnroll>(target);
}

}  // namespace tandem::kernels
