// add_rfactor: for a reduction whose few output elements leave cores and vector lanes idle
// (a row sum, the statistics of a norm, softmax's max and sum), adds design spaces where the
// reduction loops are fused, split in two (sample_perfect_tile) and factored (rfactor) on the
// inner part (partial sums computed lane-parallel) or on the outer part (partial sums computed
// core-parallel). The unfactored space stays.
#include "ir/error.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class AddRFactor : public ScheduleRule {
 public:
  explicit AddRFactor(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "add_rfactor"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    const ir::BlockRealizeNode* realize = PristineReduction(schedule, block);
    if (!realize) return {schedule};
    const ir::Block b = realize->block;
    int64_t max_parallel = int64_t{std::max(1, target_.num_cores)} * 16;
    if (b->writes.empty() || HasDataReuse(b) ||
        SpatialExtent(b) >= max_parallel ||
        ReductionExtent(b) < 2 * int64_t{std::max(1, target_.vector_lanes)}) {
      return {schedule};
    }
    int factor_axis = static_cast<int>(b->writes[0].buffer->shape.size());
    std::vector<Schedule> out{schedule};
    for (size_t part : {size_t{1}, size_t{0}}) {
      Schedule s = schedule;
      bool applied = search::TrySteps(s, [&] {
        std::vector<LoopRV> loops = s.GetLoops(block);
        std::vector<LoopRV> reduction;
        for (size_t k = 0; k < loops.size(); ++k) {
          if (b->iter_vars[k].kind == ir::IterKind::kReduction) reduction.push_back(loops[k]);
        }
        LoopRV fused = reduction.size() > 1 ? s.Fuse(reduction) : reduction[0];
        std::vector<ExprRV> factors = s.SamplePerfectTile(fused, 2, target_.max_innermost_factor);
        std::vector<LoopRV> parts =
            s.Split(fused, std::vector<Factor>(factors.begin(), factors.end()));
        s.RFactor(parts[part], factor_axis);
      });
      if (applied) out.push_back(s);
    }
    return out;
  }

 private:
  SearchTarget target_;
};

}  // namespace

ScheduleRulePtr MakeAddRFactor(const SearchTarget& target) {
  return std::make_shared<AddRFactor>(target);
}

}  // namespace tandem::kernels
