// Kernel variants for schedule tests: a strided and dilated convolution, and the unusual (but
// valid) shapes the schedule primitives must handle: blocks under an IfThenElse, and loops that
// feed no block iterator.
#pragma once

#include <string>
#include <vector>

#include "ir/kernel/functor.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels::testing {

// conv2d with padding 1 and the given strides and dilation.
inline ir::KernelFunction Conv(int64_t c, int64_t o, int64_t hw, std::vector<int64_t> strides,
                               std::vector<int64_t> dilation) {
  ir::Attrs attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}},
                  {"strides", std::move(strides)},
                  {"dilation", std::move(dilation)}};
  return LowerOp("conv2d", {F32({1, c, hw, hw}), F32({o, c, 3, 3})}, attrs);
}

// `fn` with the realize of block `block` wrapped in `if (loop < bound)`, where `loop` is the
// block's loop named `loop_name`.
inline ir::KernelFunction GuardBlock(const ir::KernelFunction& fn, const std::string& block,
                                     const std::string& loop_name, int64_t bound) {
  class Guard : public ir::StmtMutator {
   public:
    Guard(std::string block, std::string loop_name, int64_t bound)
        : block_(std::move(block)), loop_name_(std::move(loop_name)), bound_(bound) {}
    ir::Expr VisitExpr(const ir::Expr& e) override { return e; }

   protected:
    ir::Stmt VisitFor(const ir::ForNode* op, const ir::Stmt& s) override {
      if (op->loop_var->name == loop_name_) loop_ = op->loop_var;
      return StmtMutator::VisitFor(op, s);
    }
    ir::Stmt VisitBlockRealize(const ir::BlockRealizeNode* op, const ir::Stmt& s) override {
      if (op->block->name != block_) return StmtMutator::VisitBlockRealize(op, s);
      return ir::MakeIfThenElse(loop_ < ir::IntImm(bound_), s);
    }

   private:
    std::string block_, loop_name_;
    int64_t bound_;
    ir::Var loop_;
  };
  Guard guard(block, loop_name, bound);
  ir::KernelFunction out = fn;
  out.body = guard.VisitStmt(fn.body);
  return out;
}

// `fn` with the loop named `loop_name` wrapped in a loop `dead` of extent 3 that feeds no block
// iterator. When `predicated`, every block under it runs only for `dead < 1` (the shape a split
// of a loop of extent 1 into 3 x 1 leaves once the simplifier folds the bindings); otherwise
// they run three times (the shape compute_at leaves when it moves a block's own nest under
// another block's loop).
inline ir::KernelFunction AddDeadLoop(const ir::KernelFunction& fn, const std::string& loop_name,
                                      bool predicated = true) {
  class Wrapper : public ir::StmtMutator {
   public:
    Wrapper(std::string name, bool predicated) : name_(std::move(name)), predicated_(predicated) {}
    ir::Expr VisitExpr(const ir::Expr& e) override { return e; }

   protected:
    ir::Stmt VisitFor(const ir::ForNode* op, const ir::Stmt& s) override {
      if (op->loop_var->name != name_) return StmtMutator::VisitFor(op, s);
      ir::Var dead = ir::MakeVar("dead");
      ir::Stmt inner = predicated_ ? AddPredicate(op->body, dead < ir::IntImm(1)) : op->body;
      ir::Stmt body = ir::MakeFor(op->loop_var, op->extent, op->for_kind, inner, op->annotations);
      return ir::MakeFor(dead, 3, ir::ForKind::kSerial, body);
    }

   private:
    static ir::Stmt AddPredicate(const ir::Stmt& s, const ir::Expr& condition) {
      if (const auto* loop = ir::As<ir::ForNode>(s)) {
        return ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind,
                           AddPredicate(loop->body, condition), loop->annotations);
      }
      const auto* realize = ir::As<ir::BlockRealizeNode>(s);
      return ir::MakeBlockRealize(realize->iter_values, condition, realize->block);
    }
    std::string name_;
    bool predicated_;
  };
  Wrapper wrapper(loop_name, predicated);
  ir::KernelFunction out = fn;
  out.body = wrapper.VisitStmt(fn.body);
  return out;
}

}  // namespace tandem::kernels::testing
