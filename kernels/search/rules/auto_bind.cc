// auto_bind: spreads over GPU threads every loop nest that the other rules left unbound.
//
// Applied at the root block (visited last, so it sees the blocks other rules created, such as
// rfactor partials). For each statement of the root's body (one launch) without a bound loop and
// with a block of more than one spatial iteration:
//   1. its leading loops that are perfectly nested, serial and bound to no reduction iterator of
//      any block beneath are fused;
//   2. the fused loop is split by a sampled number of threads per block (a power of two from the
//      warp size up to the target's limit, at most the extent; the last thread block is guarded
//      when it does not divide the extent), the outer part bound to blockIdx.x and the inner to
//      threadIdx.x;
//   3. the nest's first block is annotated with the sampled count (kThreadExtentKey), which
//      MutateThreadExtent changes.
// A nest without such loops (a full reduction's final combination) is left to one thread.
#include "ir/kernel/functor.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

// True when `loop_var` computes a reduction iterator of a block under `stmt`.
bool BindsReduction(const ir::Stmt& stmt, const ir::Var& loop_var) {
  bool found = false;
  ir::VisitStmtTree(stmt, [&](const ir::Stmt& s) {
    const auto* realize = ir::As<ir::BlockRealizeNode>(s);
    if (!realize) return;
    for (size_t k = 0; k < realize->iter_values.size(); ++k) {
      if (realize->block->iter_vars[k].kind == ir::IterKind::kReduction &&
          ir::UsesVar(realize->iter_values[k], loop_var)) {
        found = true;
      }
    }
  });
  return found;
}

class AutoBind : public ScheduleRule {
 public:
  explicit AutoBind(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "auto_bind"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    if (!BlockExists(schedule, block) || schedule.BlockName(block) != "root") return {schedule};
    Schedule s = schedule;
    size_t nests = search::TopLevelStatements(s.function()).size();
    for (size_t t = 0; t < nests; ++t) BindNest(s, t);
    return {s};
  }

 private:
  void BindNest(Schedule& s, size_t nest) const {
    const ir::KernelFunction& fn = s.function();
    const ir::Stmt top = search::TopLevelStatements(fn)[nest];
    std::vector<std::string> blocks = search::BlocksUnder(top);
    if (blocks.empty() || search::HasThreadBinding(top)) return;
    bool work = false;
    for (const std::string& name : blocks) {
      const ir::BlockRealizeNode* realize = FindRealize(fn, name);
      if (realize && SpatialExtent(realize->block) > 1) work = true;
    }
    if (!work) return;
    // 1. Leading spatial loops.
    size_t count = 0;
    int64_t extent = 1;
    for (const ir::ForNode* loop = ir::As<ir::ForNode>(top); loop;
         loop = ir::As<ir::ForNode>(loop->body)) {
      if (loop->for_kind != ir::ForKind::kSerial || BindsReduction(top, loop->loop_var)) break;
      extent *= loop->extent;
      ++count;
    }
    std::vector<int64_t> counts = search::ThreadCountCandidates(
        extent, target_.warp_size, target_.max_threads_per_block, /*divisors_only=*/false);
    if (count == 0 || extent <= 1 || counts.empty()) return;
    std::vector<double> uniform(counts.size(), 1.0 / static_cast<double>(counts.size()));
    search::TrySteps(s, [&] {
      BlockRV first = s.GetBlock(blocks.front());
      std::vector<LoopRV> loops = s.GetLoops(first);
      loops.resize(count);
      LoopRV fused = count == 1 ? loops[0] : s.Fuse(loops);
      // 2. Threads.
      ExprRV threads = s.SampleCategorical(counts, uniform);
      std::vector<LoopRV> parts = s.Split(fused, {-1, threads});
      s.Bind(parts[0], "blockIdx.x");
      s.Bind(parts[1], "threadIdx.x");
      // 3. The decision, for the mutator.
      s.Annotate(first, search::kThreadExtentKey, threads);
    });
  }

  SearchTarget target_;
};

}  // namespace

ScheduleRulePtr MakeAutoBind(const SearchTarget& target) {
  return std::make_shared<AutoBind>(target);
}

}  // namespace tandem::kernels
