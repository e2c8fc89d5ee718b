// parallel / vectorize / unroll / bind / annotate: change how a loop runs, or attach a hint.
#include <fmt/format.h>

#include <set>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Stmt;

namespace {

// Throws when `loop_var` feeds a reduction iterator of a block under `body`.
void CheckNotBoundToReduction(const Stmt& body, const ir::Var& loop_var, const char* what) {
  ir::VisitStmtTree(body, [&](const Stmt& s) {
    const auto* realize = ir::As<ir::BlockRealizeNode>(s);
    if (!realize) return;
    for (size_t k = 0; k < realize->iter_values.size(); ++k) {
      const ir::IterVar& iv = realize->block->iter_vars[k];
      if (iv.kind == ir::IterKind::kReduction && ir::UsesVar(realize->iter_values[k], loop_var)) {
        throw ScheduleError(
            fmt::format("cannot {} loop '{}': it is bound to reduction iterator '{}' of "
                        "block '{}'",
                        what, loop_var->name, iv.var->name, realize->block->name));
      }
    }
  });
}

// Throws when a block under `body` writes a buffer allocated outside the loop at elements that
// do not depend on `loop_var`: parallel iterations would all write the same elements (a block
// recomputed whole in every iteration of the loop it was placed under).
void CheckWritesDependOnLoop(const Stmt& body, const ir::Var& loop_var, const char* what) {
  std::set<const ir::BufferNode*> inner;  // allocated under the loop: private per iteration
  ir::VisitStmtTree(body, [&](const Stmt& s) {
    if (const auto* realize = ir::As<ir::BlockRealizeNode>(s)) {
      for (const ir::Buffer& b : realize->block->alloc_buffers) inner.insert(b.get());
    }
  });
  ir::VisitStmtTree(body, [&](const Stmt& s) {
    const auto* realize = ir::As<ir::BlockRealizeNode>(s);
    if (!realize || realize->block->writes.empty()) return;
    // The block's iterators whose binding moves with the loop.
    std::vector<ir::Var> moving;
    for (size_t k = 0; k < realize->iter_values.size(); ++k) {
      if (ir::UsesVar(realize->iter_values[k], loop_var)) {
        moving.push_back(realize->block->iter_vars[k].var);
      }
    }
    for (const ir::BufferRegion& write : realize->block->writes) {
      if (inner.count(write.buffer.get())) continue;
      bool depends = false;
      for (const ir::Range& range : write.region) {
        for (const ir::Expr& e : {range.min, range.extent}) {
          depends = depends || ir::UsesVar(e, loop_var);
          for (const ir::Var& v : moving) depends = depends || ir::UsesVar(e, v);
        }
      }
      if (!depends) {
        throw ScheduleError(fmt::format(
            "cannot {} loop '{}': block '{}' writes '{}' at the same elements in "
            "every iteration",
            what, loop_var->name, realize->block->name, write.buffer->name));
      }
    }
  });
}

}  // namespace

ir::KernelFunction SetLoopKind(const ir::KernelFunction& fn, const ir::Var& loop_var,
                               ir::ForKind kind) {
  StmtPath path = GetLoopPath(fn, loop_var);
  const auto* loop = ir::As<ir::ForNode>(path.target);
  if (kind == ir::ForKind::kParallel || ir::IsThreadBinding(kind)) {
    const char* what = kind == ir::ForKind::kParallel ? "parallelize" : "bind";
    CheckNotBoundToReduction(loop->body, loop_var, what);
    if (loop->extent > 1) CheckWritesDependOnLoop(loop->body, loop_var, what);
  }
  if (ir::IsThreadBinding(kind)) {
    // One launch binds each index once along a path: a thread cannot be two threads.
    for (const Stmt& a : path.ancestors) {
      const auto* outer = ir::As<ir::ForNode>(a);
      if (outer && (outer->for_kind == kind || outer->for_kind == ir::ForKind::kVectorized ||
                    outer->for_kind == ir::ForKind::kParallel)) {
        throw ScheduleError(fmt::format("cannot bind loop '{}' to {} inside {} loop '{}'",
                                        loop_var->name, ir::ToString(kind),
                                        ir::ToString(outer->for_kind), outer->loop_var->name));
      }
    }
    ir::VisitStmtTree(loop->body, [&](const Stmt& s) {
      const auto* inner = ir::As<ir::ForNode>(s);
      if (inner && inner->for_kind == kind) {
        throw ScheduleError(fmt::format("cannot bind loop '{}' to {}: loop '{}' inside it is "
                                        "bound to it already",
                                        loop_var->name, ir::ToString(kind),
                                        inner->loop_var->name));
      }
    });
  }
  if (kind == ir::ForKind::kVectorized) {
    CheckNotBoundToReduction(loop->body, loop_var, "vectorize");
    ir::VisitStmtTree(loop->body, [&](const Stmt& s) {
      const auto* inner = ir::As<ir::ForNode>(s);
      if (inner && inner->for_kind == ir::ForKind::kParallel) {
        throw ScheduleError(
            fmt::format("cannot vectorize loop '{}': it contains parallel loop '{}'",
                        loop_var->name, inner->loop_var->name));
      }
    });
  }
  if (kind == ir::ForKind::kParallel) {
    for (const Stmt& a : path.ancestors) {
      const auto* outer = ir::As<ir::ForNode>(a);
      if (outer && outer->for_kind == ir::ForKind::kVectorized) {
        throw ScheduleError(fmt::format("cannot parallelize loop '{}' inside vectorized loop '{}'",
                                        loop_var->name, outer->loop_var->name));
      }
    }
  }
  Stmt replaced = ir::MakeFor(loop->loop_var, loop->extent, kind, loop->body, loop->annotations);
  return WithBody(fn, ReplaceStmt(fn.body, path.target.get(), replaced));
}

ir::KernelFunction AnnotateLoop(const ir::KernelFunction& fn, const ir::Var& loop_var,
                                const std::string& key, const ir::AttrValue& value) {
  StmtPath path = GetLoopPath(fn, loop_var);
  const auto* loop = ir::As<ir::ForNode>(path.target);
  ir::Attrs annotations = loop->annotations;
  annotations.Set(key, value);
  Stmt replaced =
      ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind, loop->body, annotations);
  return WithBody(fn, ReplaceStmt(fn.body, path.target.get(), replaced));
}

ir::KernelFunction AnnotateBlock(const ir::KernelFunction& fn, const std::string& block,
                                 const std::string& key, const ir::AttrValue& value) {
  StmtPath path = GetBlockPath(fn, block);
  const auto* realize = ir::As<ir::BlockRealizeNode>(path.target);
  auto new_block = std::make_shared<ir::BlockNode>(*realize->block);
  new_block->annotations.Set(key, value);
  Stmt replaced = ir::MakeBlockRealize(realize->iter_values, realize->predicate, new_block);
  return WithBody(fn, ReplaceStmt(fn.body, path.target.get(), replaced));
}

}  // namespace tandem::kernels::primitive
