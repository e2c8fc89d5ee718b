// rewrite_reduction_block: moves the init of every reduction block into its own block placed
// before the block's outermost reduction loop (decompose_reduction), so that the reduction loops
// run without testing for their first iteration and the init loops vectorize on their own.
#include "ir/kernel/functor.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class RewriteReductionBlock : public Postprocessor {
 public:
  std::string name() const override { return "rewrite_reduction_block"; }

  bool Apply(Schedule& s) const override {
    for (const std::string& name : s.BlockNames()) {
      auto path = FindBlock(s.function(), name);
      if (!path) continue;
      const auto* realize = ir::As<ir::BlockRealizeNode>(path->target);
      const ir::Block& block = realize->block;
      if (!block->init || !IsReduction(block)) continue;
      std::vector<const ir::ForNode*> loops = EnclosingLoops(*path);
      size_t first = loops.size();
      for (size_t k = 0; k < loops.size() && first == loops.size(); ++k) {
        for (size_t j = 0; j < block->iter_vars.size(); ++j) {
          if (block->iter_vars[j].kind == ir::IterKind::kReduction &&
              ir::UsesVar(realize->iter_values[j], loops[k]->loop_var)) {
            first = k;
          }
        }
      }
      if (first == loops.size()) continue;
      // GetLoops also lists loops of enclosing scopes: index from the innermost.
      size_t from_inside = loops.size() - first;
      search::TrySteps(s, [&] {
        BlockRV b = s.GetBlock(name);
        std::vector<LoopRV> handles = s.GetLoops(b);
        s.DecomposeReduction(b, handles[handles.size() - from_inside]);
      });
    }
    return true;
  }
};

}  // namespace

PostprocessorPtr MakeRewriteReductionBlock(const SearchTarget&) {
  return std::make_shared<RewriteReductionBlock>();
}

}  // namespace tandem::kernels
