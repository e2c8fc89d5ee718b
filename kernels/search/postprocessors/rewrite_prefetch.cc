// rewrite_prefetch: the search's counterpart of the default schedules' prefetch (the
// register-tiled rule's step 7). A parallel loop over tiles whose weights stream panel by panel
// gets tandem.prefetch_distance (ir::kPrefetchDistanceKey) = the iterations between panels, so
// that the CPU code generator fetches the next panel while the current one is in use. A nest
// qualifies when:
//   - its outermost loop is parallel (rewrite_parallel_vectorize_unroll ran before) and has no
//     prefetch distance yet (a replayed default schedule brings its own);
//   - a block under it reads as vectors (the index moves with a vectorized loop) a kernel
//     parameter the kernel never writes (weights) of more than kL1ResidentOperandBytes (they do
//     not stay in L1), at an index that moves with the loop only through floordiv(loop, d),
//     with one d such that 1 < d < extent: d consecutive iterations share a panel, and a next
//     panel exists (multi_level_tiling samples that loop order);
//   - the weights' panel (their bytes over the extent / d panels) and the next one fit in the
//     core's L2 (default_schedule::PrefetchedPanelFitsInL2), as in the default schedules.
// An index that moves with every iteration (floormod(loop, m), or the loop itself) gets nothing: a
// prefetch one tile ahead made depthwise convolutions slower in the default schedules. Nothing
// but the annotation changes, and a nest that does not qualify is left alone.
#include <optional>
#include <set>

#include "ir/kernel/functor.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

// Adds to `divisors` the divisor of every floordiv(var, constant) in `e`; false when `var`
// appears anywhere else in `e`.
bool UsedOnlyInFloorDivs(const ir::Expr& e, const ir::ExprNode* var, std::set<int64_t>& divisors) {
  if (e.get() == var) return false;
  if (e->kind == ir::ExprKind::kFloorDiv && e->operands[0].get() == var) {
    if (!e->operands[1]->is_const_int()) return false;
    divisors.insert(e->operands[1]->int_value);
    return true;
  }
  for (const ir::Expr& operand : e->operands) {
    if (!UsedOnlyInFloorDivs(operand, var, divisors)) return false;
  }
  return true;
}

class RewritePrefetch : public Postprocessor {
 public:
  explicit RewritePrefetch(CpuCoreModel core) : core_(core) {}

  std::string name() const override { return "rewrite_prefetch"; }

  bool Apply(Schedule& s) const override {
    const ir::KernelFunction& fn = s.function();
    std::set<const ir::BufferNode*> written = search::WrittenBuffers(fn);
    std::set<const ir::BufferNode*> weights;
    for (const ir::Buffer& param : fn.params) {
      int64_t bytes = ir::NumElements(param->shape) * ir::SizeOf(param->dtype);
      if (!written.count(param.get()) && bytes > default_schedule::kL1ResidentOperandBytes) {
        weights.insert(param.get());
      }
    }
    if (weights.empty()) return true;
    for (const ir::Stmt& top : search::TopLevelStatements(fn)) {
      const auto* loop = ir::As<ir::ForNode>(top);
      if (!loop || loop->for_kind != ir::ForKind::kParallel ||
          loop->annotations.Has(ir::kPrefetchDistanceKey)) {
        continue;
      }
      std::optional<int64_t> distance = PanelDistance(*loop, weights);
      if (!distance) continue;
      int64_t panels = (loop->extent + *distance - 1) / *distance;
      if (!default_schedule::PrefetchedPanelFitsInL2(WeightBytes(weights) / panels, core_)) {
        continue;
      }
      std::vector<std::string> blocks = search::BlocksUnder(top);
      if (blocks.empty()) continue;
      search::TrySteps(s, [&] {
        LoopRV handle = s.GetLoops(s.GetBlock(blocks.front())).front();
        s.Annotate(handle, ir::kPrefetchDistanceKey, *distance);
      });
    }
    return true;
  }

 private:
  CpuCoreModel core_;

  static int64_t WeightBytes(const std::set<const ir::BufferNode*>& weights) {
    int64_t bytes = 0;
    for (const ir::BufferNode* w : weights) {
      bytes += ir::NumElements(w->shape) * ir::SizeOf(w->dtype);
    }
    return bytes;
  }

  // Steps:
  //   1. every block under the loop, its iterators replaced by their bindings;
  //   2. the vector reads of `weights` (their index mentions a vectorized loop) whose index
  //      mentions the loop variable;
  //   3. the divisors of the floordivs the loop variable appears in: one only, between 1 and
  //      the extent, when every such read moves with the loop through floordiv alone.
  static std::optional<int64_t> PanelDistance(const ir::ForNode& loop,
                                              const std::set<const ir::BufferNode*>& weights) {
    const ir::ExprNode* var = loop.loop_var.get();
    std::vector<ir::Var> vector_loops;
    ir::VisitStmtTree(loop.body, [&](const ir::Stmt& st) {
      const auto* inner = ir::As<ir::ForNode>(st);
      if (inner && inner->for_kind == ir::ForKind::kVectorized) {
        vector_loops.push_back(inner->loop_var);
      }
    });
    std::set<int64_t> divisors;
    bool moves = false, other_use = false;
    ir::VisitStmtTree(loop.body, [&](const ir::Stmt& st) {
      const auto* realize = ir::As<ir::BlockRealizeNode>(st);
      if (!realize || other_use) return;
      // 1. The bindings.
      ir::VarMap bindings;
      for (size_t k = 0; k < realize->block->iter_vars.size(); ++k) {
        bindings[realize->block->iter_vars[k].var.get()] = realize->iter_values[k];
      }
      // 2-3. The reads of weights that move with the loop.
      ir::VisitStmtExprs(realize->block->body, [&](const ir::Expr& expr) {
        ir::VisitExprTree(expr, [&](const ir::Expr& e) {
          if (e->kind != ir::ExprKind::kLoad || !weights.count(e->buffer.get())) return;
          std::vector<ir::Expr> indices;
          bool vector_read = false;
          for (const ir::Expr& index : e->operands) {
            indices.push_back(ir::Substitute(index, bindings));
            for (const ir::Var& v : vector_loops) {
              vector_read = vector_read || ir::UsesVar(indices.back(), v);
            }
          }
          if (!vector_read) return;
          for (const ir::Expr& bound : indices) {
            bool mentions = ir::UsesVar(bound, loop.loop_var);
            moves = moves || mentions;
            if (mentions && !UsedOnlyInFloorDivs(bound, var, divisors)) other_use = true;
          }
        });
      });
    });
    if (!moves || other_use || divisors.size() != 1) return std::nullopt;
    int64_t d = *divisors.begin();
    if (d <= 1 || d >= loop.extent) return std::nullopt;
    return d;
  }
};

}  // namespace

PostprocessorPtr MakeRewritePrefetch(const SearchTarget& target) {
  return std::make_shared<RewritePrefetch>(target.core);
}

}  // namespace tandem::kernels
