// verify_program: rejects a program before any time is spent building or measuring it when
//   - the root's annotations ask for a parallel extent below 1 or a negative vector extent or
//     unroll depth;
//   - a vectorized loop has a width the target does not do well (not a multiple of 4 lanes, or
//     longer than the annotated largest vector extent, 4 vectors by default), or holds a block
//     that allocates a buffer (code generation cannot give each lane its own);
//   - a parallel or vectorized loop fails the checks the parallel/vectorize primitives make
//     (bound to a reduction iterator, parallel inside a vector loop);
//   - the program is malformed: a loop extent below 1, a block whose bindings do not match its
//     iterators, a variable used outside the loops and blocks that define it, or a buffer that
//     is neither a parameter nor allocated by an enclosing block.
#include <set>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/primitives.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class Verifier {
 public:
  Verifier(const ir::KernelFunction& fn, int64_t max_vector, int vector_lanes)
      : fn_(fn), max_vector_(max_vector), lanes_(vector_lanes) {
    for (const ir::Buffer& p : fn.params) buffers_.insert(p.get());
  }

  bool Check() { return fn_.body && Visit(fn_.body, false) && ok_; }

 private:
  bool Visit(const ir::Stmt& s, bool in_vector) {
    if (!s || !ok_) return ok_;
    switch (s->kind) {
      case ir::StmtKind::kFor: {
        const auto* loop = ir::As<ir::ForNode>(s);
        if (loop->extent < 1 || !loop->loop_var.defined()) return Fail();
        if (loop->for_kind == ir::ForKind::kVectorized &&
            !search::GoodVectorExtent(loop->extent, max_vector_, lanes_)) {
          return Fail();
        }
        if (loop->for_kind == ir::ForKind::kParallel ||
            loop->for_kind == ir::ForKind::kVectorized) {
          try {
            primitive::SetLoopKind(fn_, loop->loop_var, loop->for_kind);
          } catch (const ScheduleError&) {
            return Fail();
          }
        }
        vars_.insert(loop->loop_var.get());
        bool result = Visit(loop->body, in_vector || loop->for_kind == ir::ForKind::kVectorized);
        vars_.erase(vars_.find(loop->loop_var.get()));
        return result;
      }
      case ir::StmtKind::kSeq:
        for (const ir::Stmt& child : ir::As<ir::SeqNode>(s)->stmts) {
          if (!Visit(child, in_vector)) return false;
        }
        return true;
      case ir::StmtKind::kStore: {
        const auto* store = ir::As<ir::StoreNode>(s);
        if (!Known(store->buffer) || !CheckExpr(store->value)) return Fail();
        for (const ir::Expr& index : store->indices) {
          if (!CheckExpr(index)) return false;
        }
        return true;
      }
      case ir::StmtKind::kIfThenElse: {
        const auto* branch = ir::As<ir::IfThenElseNode>(s);
        return CheckExpr(branch->condition) && Visit(branch->then_case, in_vector) &&
               Visit(branch->else_case, in_vector);
      }
      case ir::StmtKind::kBlockRealize: {
        const auto* realize = ir::As<ir::BlockRealizeNode>(s);
        const ir::Block& block = realize->block;
        if (!block || realize->iter_values.size() != block->iter_vars.size()) return Fail();
        if (in_vector && !block->alloc_buffers.empty()) return Fail();
        for (const ir::Expr& value : realize->iter_values) {
          if (!CheckExpr(value)) return false;
        }
        if (realize->predicate.defined() && !CheckExpr(realize->predicate)) return false;
        for (const ir::IterVar& iv : block->iter_vars) {
          if (iv.extent < 1) return Fail();
          vars_.insert(iv.var.get());
        }
        for (const ir::Buffer& b : block->alloc_buffers) buffers_.insert(b.get());
        bool result = Visit(block->init, in_vector) && Visit(block->body, in_vector);
        for (const ir::Buffer& b : block->alloc_buffers) buffers_.erase(buffers_.find(b.get()));
        for (const ir::IterVar& iv : block->iter_vars) vars_.erase(vars_.find(iv.var.get()));
        return result;
      }
    }
    return Fail();
  }

  // Every variable and buffer in `e` is in scope.
  bool CheckExpr(const ir::Expr& e) {
    if (!e.defined()) return Fail();
    ir::VisitExprTree(e, [&](const ir::Expr& x) {
      if (x->kind == ir::ExprKind::kVar && !vars_.count(x.get())) ok_ = false;
      if (x->kind == ir::ExprKind::kLoad && !Known(x->buffer)) ok_ = false;
    });
    return ok_;
  }

  bool Known(const ir::Buffer& b) const { return b && buffers_.count(b.get()); }
  bool Fail() { return ok_ = false; }

  const ir::KernelFunction& fn_;
  int64_t max_vector_;
  int lanes_;
  bool ok_ = true;
  std::multiset<const ir::ExprNode*> vars_;
  std::multiset<const ir::BufferNode*> buffers_;
};

class VerifyProgram : public Postprocessor {
 public:
  explicit VerifyProgram(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "verify_program"; }

  bool Apply(Schedule& s) const override {
    const ir::KernelFunction& fn = s.function();
    const auto* root = ir::As<ir::BlockRealizeNode>(fn.body);
    if (!root) return false;
    const ir::Attrs& a = root->block->annotations;
    int64_t max_vector =
        a.GetInt(search::kVectorizeKey, int64_t{std::max(1, target_.vector_lanes)} * 4);
    if (a.GetInt(search::kParallelKey, 1) < 1 || max_vector < 0 ||
        a.GetInt(search::kUnrollKey, 0) < 0) {
      return false;
    }
    return Verifier(fn, max_vector, target_.vector_lanes).Check();
  }

 private:
  SearchTarget target_;
};

}  // namespace

PostprocessorPtr MakeVerifyProgram(const SearchTarget& target) {
  return std::make_shared<VerifyProgram>(target);
}

}  // namespace tandem::kernels
