// Relaxing the bounds predicates of blocks that only write "local" buffers (see
// RelaxLocalPredicates in codegen.h).
//
// A split whose factor does not divide the loop guards every block under it with
// `binding < extent`. Inside a register tile that guard sits in the reduction loop, once per
// accumulator and step, and keeps LLVM from holding the tile in registers. A block that writes
// only local buffers (a register tile's init and update) can run its out-of-range instances
// harmlessly instead (its relaxed iterators' domains grow to hold them): they write rows of the
// local buffer past its end (the buffer is padded to hold them), read global buffers at clamped
// indices, and nothing reads what they wrote except themselves, since every block that writes a
// global buffer (the write-back) keeps its guard. Iterators bound to a vectorized loop keep their
// guards: the vector code masks those lanes and keeps its loads contiguous. The conditions that
// make this exact:
//   - the block is a leaf (no nested blocks, no allocations) and stores to local buffers only;
//   - a relaxed iterator indexes local buffers only directly (`buf[..., v, ...]`), so an
//     out-of-range instance touches only padded positions, never a valid one;
//   - global loads are clamped into their buffer's shape wherever the relaxed ranges could
//     leave it, so no access leaves its buffer.
#include <algorithm>
#include <map>

#include "backends/llvm/codegen.h"
#include "ir/kernel/bound.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"

namespace tandem::backends {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

namespace {

bool IsLeaf(const ir::Block& block) {
  if (!block->alloc_buffers.empty()) return false;
  bool leaf = true;
  for (const Stmt& s : {block->init, block->body}) {
    if (!s) continue;
    ir::VisitStmtTree(s, [&](const Stmt& t) {
      if (t->kind == ir::StmtKind::kBlockRealize) leaf = false;
    });
  }
  return leaf;
}

// Padded extents per local buffer axis, as the relaxed blocks need them.
using Padding = std::map<const ir::BufferNode*, std::vector<int64_t>>;

// Clamps the indices of global loads into their buffer where `ranges` could leave it.
class ClampGlobalLoads : public ir::StmtMutator {
 public:
  explicit ClampGlobalLoads(const ir::VarRanges& ranges) : ranges_(ranges) {}

  Expr VisitExpr(const Expr& e) override {
    Expr visited = VisitChildren(e);
    if (visited->kind != ExprKind::kLoad || visited->buffer->scope == "local") return visited;
    std::vector<Expr> indices = visited->operands;
    bool changed = false;
    for (size_t d = 0; d < indices.size(); ++d) {
      ir::IntInterval bound = ir::ConstIntBound(indices[d], ranges_);
      int64_t last = visited->buffer->shape[d] - 1;
      if (bound.min < 0) indices[d] = ir::Max(indices[d], ir::IntImm(0));
      if (bound.max > last) indices[d] = ir::Min(indices[d], ir::IntImm(last));
      changed = changed || bound.min < 0 || bound.max > last;
    }
    return changed ? ir::Load(visited->buffer, std::move(indices)) : visited;
  }

 private:
  const ir::VarRanges& ranges_;
};

class Relaxer : public ir::StmtMutator {
 public:
  Padding padding;

 protected:
  Stmt VisitFor(const ir::ForNode* op, const Stmt& s) override {
    loop_ranges_[op->loop_var.get()] = {0, op->extent - 1};
    if (op->for_kind == ir::ForKind::kVectorized) vector_loops_.push_back(op->loop_var);
    Stmt out = StmtMutator::VisitFor(op, s);
    if (op->for_kind == ir::ForKind::kVectorized) vector_loops_.pop_back();
    loop_ranges_.erase(op->loop_var.get());
    return out;
  }

  Stmt VisitBlockRealize(const ir::BlockRealizeNode* op, const Stmt& s) override {
    int64_t always = 0;
    if (!op->predicate.defined() || ir::AsConstInt(op->predicate, &always) || !IsLeaf(op->block)) {
      return StmtMutator::VisitBlockRealize(op, s);
    }
    const ir::Block& block = op->block;
    for (const ir::BufferRegion& w : block->writes) {
      if (w.buffer->scope != "local") return s;
    }
    // Terms `binding(v) < extent(v)` are relaxed; the rest of the predicate stays.
    std::vector<Expr> terms = ir::Conjuncts(op->predicate), kept;
    ir::VarRanges block_ranges;
    for (const ir::IterVar& iv : block->iter_vars) block_ranges[iv.var.get()] = {0, iv.extent - 1};
    std::vector<const ir::ExprNode*> relaxed;
    for (const Expr& term : terms) {
      int64_t limit = 0;
      bool matched = false;
      if (term->kind == ExprKind::kLT && ir::AsConstInt(term->operands[1], &limit)) {
        for (size_t v = 0; v < block->iter_vars.size() && !matched; ++v) {
          const ir::IterVar& iv = block->iter_vars[v];
          if (iv.extent != limit || UsesVectorLoop(op->iter_values[v])) continue;
          Expr difference = ir::Simplify(term->operands[0] - op->iter_values[v], loop_ranges_);
          if (!difference->is_const_int(0)) continue;
          ir::IntInterval bound = ir::ConstIntBound(op->iter_values[v], loop_ranges_);
          if (!bound.has_upper() || bound.min < 0) continue;
          block_ranges[iv.var.get()] = {0, std::max(bound.max, iv.extent - 1)};
          relaxed.push_back(iv.var.get());
          matched = true;
        }
      }
      if (!matched) kept.push_back(term);
    }
    if (relaxed.empty()) return s;
    // Local accesses may use a relaxed iterator only as a whole index; record the padding.
    Padding needed;
    bool ok = true;
    auto check_local = [&](const ir::Buffer& buffer, const std::vector<Expr>& indices) {
      if (buffer->scope != "local") return;
      std::vector<int64_t>& extents = needed[buffer.get()];
      if (extents.empty()) extents = buffer->shape;
      for (size_t d = 0; d < indices.size(); ++d) {
        for (const ir::ExprNode* var : relaxed) {
          bool whole = indices[d].get() == var;
          bool uses = whole;
          ir::VisitExprTree(indices[d], [&](const Expr& e) { uses = uses || e.get() == var; });
          if (uses && !whole) ok = false;
          if (whole) extents[d] = std::max(extents[d], block_ranges[var].max + 1);
        }
      }
    };
    for (const Stmt& part : {block->init, block->body}) {
      if (!part) continue;
      ir::VisitStmtTree(part, [&](const Stmt& t) {
        if (const auto* store = ir::As<ir::StoreNode>(t)) {
          if (store->buffer->scope != "local") ok = false;
          check_local(store->buffer, store->indices);
        }
      });
      ir::VisitStmtExprs(part, [&](const Expr& top) {
        ir::VisitExprTree(top, [&](const Expr& e) {
          if (e->kind == ExprKind::kLoad) check_local(e->buffer, e->operands);
        });
      });
    }
    if (!ok) return s;
    for (const auto& [buffer, extents] : needed) {
      std::vector<int64_t>& merged = padding[buffer];
      if (merged.empty()) merged = extents;
      for (size_t d = 0; d < extents.size(); ++d) merged[d] = std::max(merged[d], extents[d]);
    }
    ClampGlobalLoads clamp(block_ranges);
    auto n = std::make_shared<ir::BlockNode>(*block);
    // The out-of-range instances become part of the block's domain.
    for (ir::IterVar& iv : n->iter_vars) iv.extent = block_ranges[iv.var.get()].max + 1;
    n->body = clamp.VisitStmt(block->body);
    if (block->init) n->init = clamp.VisitStmt(block->init);
    Expr predicate = ir::IntImm(1, op->predicate->dtype);
    for (size_t k = 0; k < kept.size(); ++k) predicate = k == 0 ? kept[0] : (predicate && kept[k]);
    return ir::MakeBlockRealize(op->iter_values, predicate, n);
  }

 private:
  // The vector code masks out-of-range lanes itself, keeping contiguous loads; clamped indices
  // would turn them into gathers.
  bool UsesVectorLoop(const Expr& e) const {
    for (const ir::Var& v : vector_loops_) {
      if (ir::UsesVar(e, v)) return true;
    }
    return false;
  }

  ir::VarRanges loop_ranges_;
  std::vector<ir::Var> vector_loops_;
};

// Replaces every use of the padded local buffers with their padded versions.
class PadBuffers : public ir::StmtMutator {
 public:
  explicit PadBuffers(const Padding& padding) {
    for (const auto& [buffer, extents] : padding) {
      if (extents == buffer->shape) continue;
      replacements_[buffer] = ir::MakeBuffer(buffer->name, buffer->dtype, extents, buffer->scope);
    }
  }
  bool empty() const { return replacements_.empty(); }

  Expr VisitExpr(const Expr& e) override {
    Expr visited = VisitChildren(e);
    if (visited->kind != ExprKind::kLoad) return visited;
    auto it = replacements_.find(visited->buffer.get());
    return it == replacements_.end() ? visited : ir::Load(it->second, visited->operands);
  }

 protected:
  Stmt VisitStore(const ir::StoreNode* op, const Stmt& s) override {
    Stmt visited = StmtMutator::VisitStore(op, s);
    const auto* store = ir::As<ir::StoreNode>(visited);
    auto it = replacements_.find(store->buffer.get());
    if (it == replacements_.end()) return visited;
    return ir::MakeStore(it->second, store->indices, store->value);
  }

  ir::Block VisitBlock(const ir::Block& block) override {
    ir::Block visited = StmtMutator::VisitBlock(block);
    auto n = std::make_shared<ir::BlockNode>(*visited);
    bool changed = false;
    auto replace = [&](ir::Buffer& buffer) {
      auto it = replacements_.find(buffer.get());
      if (it == replacements_.end()) return;
      buffer = it->second;
      changed = true;
    };
    for (ir::Buffer& buffer : n->alloc_buffers) replace(buffer);
    for (std::vector<ir::BufferRegion>* regions : {&n->reads, &n->writes}) {
      for (ir::BufferRegion& region : *regions) replace(region.buffer);
    }
    return changed ? n : visited;
  }

 private:
  std::map<const ir::BufferNode*, ir::Buffer> replacements_;
};

}  // namespace

ir::KernelFunction RelaxLocalPredicates(const ir::KernelFunction& kernel) {
  Relaxer relaxer;
  Stmt body = relaxer.VisitStmt(kernel.body);
  if (body == kernel.body) return kernel;
  PadBuffers pad(relaxer.padding);
  ir::KernelFunction out = kernel;
  out.body = pad.empty() ? body : pad.VisitStmt(body);
  return out;
}

}  // namespace tandem::backends
