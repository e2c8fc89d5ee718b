// rewrite_parallel_vectorize_unroll: turns the root block's annotations (ParallelVectorizeUnroll)
// into loop kinds, nest by nest (each statement of the root's body):
//   - vectorize: the innermost loop of each block, when it holds just that block, is not bound
//     to a reduction iterator and its extent is a good vector width (no longer than the
//     annotated largest vector extent); a longer loop is first split by the largest good width
//     that divides it;
//   - parallel: the outermost perfectly nested loops that are bound to no reduction iterator are
//     fused and parallelized, as many as fit in the annotated largest parallel extent (at least
//     the outermost one; none when that extent is 1);
//   - unroll: from the innermost loop of each block outwards (vector loops count once), the
//     loops that hold just that block are unrolled while the product of their extents stays
//     within the annotated depth.
// Steps that turn out illegal are skipped.
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

using search::BlocksUnder;

bool CanSetKind(const ir::KernelFunction& fn, const ir::Var& loop, ir::ForKind kind) {
  try {
    primitive::SetLoopKind(fn, loop, kind);
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

class RewriteParallelVectorizeUnroll : public Postprocessor {
 public:
  explicit RewriteParallelVectorizeUnroll(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "rewrite_parallel_vectorize_unroll"; }

  bool Apply(Schedule& s) const override {
    const auto* root = ir::As<ir::BlockRealizeNode>(s.function().body);
    if (!root) return false;
    const ir::Attrs& a = root->block->annotations;
    if (!a.Has(search::kParallelKey) && !a.Has(search::kVectorizeKey) &&
        !a.Has(search::kUnrollKey)) {
      return true;
    }
    Limits limits{a.GetInt(search::kParallelKey, 1), a.GetInt(search::kVectorizeKey, 0),
                  a.GetInt(search::kUnrollKey, 0)};
    if (limits.parallel < 1 || limits.vector < 0 || limits.unroll < 0) return false;
    size_t nests = search::TopLevelStatements(s.function()).size();
    for (size_t t = 0; t < nests; ++t) {
      if (limits.vector > 0) Vectorize(s, t, limits);
      if (limits.parallel > 1) Parallelize(s, t, limits);
      if (limits.unroll > 0) Unroll(s, t, limits);
    }
    return true;
  }

 private:
  struct Limits {
    int64_t parallel;
    int64_t vector;
    int64_t unroll;
  };

  void Vectorize(Schedule& s, size_t nest, const Limits& limits) const {
    for (const std::string& name : BlocksUnder(search::TopLevelStatements(s.function())[nest])) {
      StmtPath path = GetBlockPath(s.function(), name);
      std::vector<const ir::ForNode*> loops = EnclosingLoops(path);
      if (loops.empty()) continue;
      const ir::ForNode* inner = loops.back();
      if (inner->body != path.target || inner->for_kind != ir::ForKind::kSerial ||
          !CanSetKind(s.function(), inner->loop_var, ir::ForKind::kVectorized)) {
        continue;
      }
      int64_t extent = inner->extent;
      int64_t width = 0;
      if (search::GoodVectorExtent(extent, limits.vector, target_.vector_lanes)) {
        width = extent;
      } else if (extent > limits.vector) {
        for (int64_t w = limits.vector; w >= 2 && width == 0; --w) {
          if (extent % w == 0 && search::GoodVectorExtent(w, limits.vector, target_.vector_lanes)) {
            width = w;
          }
        }
      }
      if (width == 0) continue;
      search::TrySteps(s, [&] {
        BlockRV b = s.GetBlock(name);
        LoopRV loop = s.GetLoops(b).back();
        if (width != extent) loop = s.Split(loop, {extent / width, width})[1];
        s.Vectorize(loop);
      });
    }
  }

  void Parallelize(Schedule& s, size_t nest, const Limits& limits) const {
    const ir::KernelFunction& fn = s.function();
    const ir::Stmt top = search::TopLevelStatements(fn)[nest];
    std::vector<std::string> blocks = BlocksUnder(top);
    if (blocks.empty()) return;
    // The outer loops that are perfectly nested, serial and bound to no reduction iterator.
    size_t count = 0;
    int64_t product = 1;
    for (const ir::ForNode* loop = ir::As<ir::ForNode>(top); loop;
         loop = ir::As<ir::ForNode>(loop->body)) {
      if (loop->for_kind != ir::ForKind::kSerial ||
          !CanSetKind(fn, loop->loop_var, ir::ForKind::kParallel)) {
        break;
      }
      if (count > 0 && product * loop->extent > limits.parallel) break;
      product *= loop->extent;
      ++count;
    }
    if (count == 0 || product <= 1) return;
    search::TrySteps(s, [&] {
      std::vector<LoopRV> loops = s.GetLoops(s.GetBlock(blocks.front()));
      std::vector<LoopRV> outer(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(count));
      s.Parallel(outer.size() > 1 ? s.Fuse(outer) : outer.front());
    });
  }

  void Unroll(Schedule& s, size_t nest, const Limits& limits) const {
    for (const std::string& name : BlocksUnder(search::TopLevelStatements(s.function())[nest])) {
      StmtPath path = GetBlockPath(s.function(), name);
      std::vector<const ir::ForNode*> loops = EnclosingLoops(path);
      std::vector<size_t> chosen;
      int64_t product = 1;
      for (size_t k = loops.size(); k-- > 0;) {
        const ir::ForNode* loop = loops[k];
        // Only loops around this block alone: unrolling a loop shared with other blocks would
        // replicate them too.
        if (loop->for_kind == ir::ForKind::kParallel || BlocksUnder(loop->body).size() != 1) break;
        if (loop->for_kind == ir::ForKind::kVectorized || loop->extent == 1) continue;
        if (product * loop->extent > limits.unroll) break;
        product *= loop->extent;
        if (loop->for_kind == ir::ForKind::kSerial) chosen.push_back(k);
      }
      if (chosen.empty()) continue;
      search::TrySteps(s, [&] {
        std::vector<LoopRV> handles = s.GetLoops(s.GetBlock(name));
        size_t offset = handles.size() - loops.size();
        for (size_t k : chosen) s.Unroll(handles[offset + k]);
      });
    }
  }

  SearchTarget target_;
};

}  // namespace

PostprocessorPtr MakeRewriteParallelVectorizeUnroll(const SearchTarget& target) {
  return std::make_shared<RewriteParallelVectorizeUnroll>(target);
}

}  // namespace tandem::kernels
