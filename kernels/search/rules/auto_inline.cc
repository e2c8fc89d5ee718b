// auto_inline: removes elementwise stages by inlining them into a neighbour. On a CPU a stage
// that a consumer would recompute too often (a dense convolution's pad, read once per output
// channel tile and tap: KeepsProducerSeparate, the default schedule's rule) stays a stage of
// its own, as MetaSchedule's CPU space keeps its pads; on a GPU every stage that can be is
// inlined.
#include <functional>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/primitives.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

// True when the block evaluates an intrinsic (exp, tanh, ...): inlining it into a reduction
// would evaluate it once per reduction step instead of once per element.
bool CallsIntrinsic(const ir::Block& block) {
  bool found = false;
  ir::VisitStmtExprs(block->body, [&](const ir::Expr& top) {
    ir::VisitExprTree(top,
                      [&](const ir::Expr& e) { found = found || e->kind == ir::ExprKind::kCall; });
  });
  return found;
}

bool Legal(const std::function<void()>& trial) {
  try {
    trial();
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

class AutoInline : public ScheduleRule {
 public:
  explicit AutoInline(bool keep_reused_stages) : keep_reused_stages_(keep_reused_stages) {}

  std::string name() const override { return "auto_inline"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    if (!BlockExists(schedule, block)) return {schedule};
    const std::string& name = schedule.BlockName(block);
    const ir::KernelFunction& fn = schedule.function();
    const ir::BlockRealizeNode* realize = FindRealize(fn, name);
    if (name == "root" || !realize || IsReduction(realize->block) || realize->block->init) {
      return {schedule};
    }
    Schedule s = schedule;
    bool into_reduction = false, keep = false;
    for (const std::string& consumer : ConsumersOf(fn, realize->block)) {
      const ir::BlockRealizeNode* c = FindRealize(fn, consumer);
      into_reduction = into_reduction || (c && IsReduction(c->block));
      keep = keep || (keep_reused_stages_ && c &&
                      default_schedule::KeepsProducerSeparate(realize->block, c->block));
    }
    // Trials on the bare function first, so the trace holds only steps that apply.
    if (!keep && !(into_reduction && CallsIntrinsic(realize->block)) &&
        Legal([&] { primitive::ComputeInline(fn, name); })) {
      search::TrySteps(s, [&] { s.ComputeInline(block); });
      return {s};
    }
    if (Legal([&] { primitive::ReverseComputeInline(fn, name); })) {
      search::TrySteps(s, [&] { s.ReverseComputeInline(block); });
    }
    return {s};
  }

 private:
  bool keep_reused_stages_;
};

}  // namespace

ScheduleRulePtr MakeAutoInline(const SearchTarget& target) {
  return std::make_shared<AutoInline>(/*keep_reused_stages=*/!target.gpu);
}

}  // namespace tandem::kernels
