// rewrite_panel_order: carries out MultiLevelTiling's S0 order decision. For every block whose
// "tandem.panels_outer" annotation is 1, its S0 loops (one per spatial iterator, outermost in
// its nest) are reordered so that those bound to iterators that move the block's vector
// operands (search::MovesVectorOperands) come first, the others after them, each group in its
// previous order. Consecutive iterations of the parallel loop the S0 loops become then share
// one panel of those operands. Blocks annotated 0, or whose S0 loops are already in that order,
// are left alone; a reorder the nest does not allow is skipped.
#include "ir/kernel/functor.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class RewritePanelOrder : public Postprocessor {
 public:
  std::string name() const override { return "rewrite_panel_order"; }

  // Steps:
  //   1. the blocks annotated 1 and the iterators that move their vector operands;
  //   2. the block's S0 loops: the outermost loops of its nest, one per spatial iterator, each
  //      bound to exactly one of them (or, of extent 1, to none);
  //   3. those that move the operands first, reordered when that changes the order.
  bool Apply(Schedule& s) const override {
    for (const std::string& name : s.BlockNames()) {
      // 1. The annotated blocks.
      std::optional<StmtPath> path = FindBlock(s.function(), name);
      if (!path) continue;
      const auto* realize = ir::As<ir::BlockRealizeNode>(path->target);
      const ir::Block& block = realize->block;
      if (block->annotations.GetInt(search::kPanelsOuterKey, 0) != 1) continue;
      size_t spatial = CountIterators(block, ir::IterKind::kSpatial);
      std::vector<bool> moves = search::MovesVectorOperands(s.function(), block);
      // 2. The S0 loops.
      std::vector<const ir::ForNode*> loops = EnclosingLoops(*path);
      if (loops.size() < spatial) continue;
      std::vector<size_t> first, second;
      bool ok = true;
      for (size_t l = 0; l < spatial && ok; ++l) {
        int bound = -1, count = 0;
        for (size_t k = 0; k < block->iter_vars.size(); ++k) {
          if (ir::UsesVar(realize->iter_values[k], loops[l]->loop_var)) {
            bound = static_cast<int>(k);
            ++count;
          }
        }
        // A loop of extent 1 (a batch of one) may be bound to no iterator: it stays behind.
        if (count == 0 && loops[l]->extent == 1) {
          second.push_back(l);
          continue;
        }
        ok = count == 1 &&
             block->iter_vars[static_cast<size_t>(bound)].kind == ir::IterKind::kSpatial;
        if (ok) (moves[static_cast<size_t>(bound)] ? first : second).push_back(l);
      }
      // 3. The reorder.
      std::vector<size_t> order = first;
      order.insert(order.end(), second.begin(), second.end());
      bool changes = false;
      for (size_t l = 0; l < order.size(); ++l) changes = changes || order[l] != l;
      if (!ok || !changes) continue;
      search::TrySteps(s, [&] {
        std::vector<LoopRV> handles = s.GetLoops(s.GetBlock(name));
        size_t offset = handles.size() - loops.size();
        std::vector<LoopRV> reordered;
        for (size_t l : order) reordered.push_back(handles[offset + l]);
        s.Reorder(reordered);
      });
    }
    return true;
  }
};

}  // namespace

PostprocessorPtr MakeRewritePanelOrder(const SearchTarget&) {
  return std::make_shared<RewritePanelOrder>();
}

}  // namespace tandem::kernels
