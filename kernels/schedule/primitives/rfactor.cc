// rfactor: split a reduction into partial results along one loop plus a final reduction.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

namespace {

struct ReductionPattern {
  ir::Buffer buffer;
  std::vector<Expr> indices;
  ExprKind combiner;  // kAdd, kMul, kMax or kMin
  Expr value;         // the reduced operand
  Expr identity;      // init value
};

bool SameIndices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // Variables by identity; constants (a folded axis of length 1) by value.
    bool same = a[i].same_as(b[i]) || (a[i]->is_const_int() && b[i]->is_const_int(a[i]->int_value));
    if (!same) return false;
  }
  return true;
}

bool MatchReduction(const ir::Block& block, ReductionPattern* out) {
  const auto* store = ir::As<ir::StoreNode>(block->body);
  const auto* init = ir::As<ir::StoreNode>(block->init);
  if (!store || !init || init->buffer != store->buffer) return false;
  if (!SameIndices(init->indices, store->indices)) return false;
  const Expr& v = store->value;
  if (v->kind != ExprKind::kAdd && v->kind != ExprKind::kMul && v->kind != ExprKind::kMax &&
      v->kind != ExprKind::kMin) {
    return false;
  }
  for (int side = 0; side < 2; ++side) {
    const Expr& self = v->operands[static_cast<size_t>(side)];
    if (self->kind == ExprKind::kLoad && self->buffer == store->buffer &&
        SameIndices(self->operands, store->indices)) {
      *out = ReductionPattern{store->buffer, store->indices, v->kind,
                              v->operands[1 - static_cast<size_t>(side)], init->value};
      return true;
    }
  }
  return false;
}

Expr Combine(ExprKind kind, Expr a, Expr b) {
  switch (kind) {
    case ExprKind::kAdd:
      return a + b;
    case ExprKind::kMul:
      return a * b;
    case ExprKind::kMin:
      return ir::Min(a, b);
    default:
      return ir::Max(a, b);
  }
}

}  // namespace

ir::KernelFunction RFactor(const ir::KernelFunction& fn, const ir::Var& loop_var, int factor_axis,
                           std::string* rf_block) {
  StmtPath loop_path = GetLoopPath(fn, loop_var);
  const auto* loop = ir::As<ir::ForNode>(loop_path.target);
  auto fail = [&](const std::string& why) {
    return ScheduleError(fmt::format("rfactor of loop '{}': {}", loop_var->name, why));
  };
  // The one block under the loop whose reduction iterators use the loop.
  const ir::BlockRealizeNode* realize = nullptr;
  ir::VisitStmtTree(loop->body, [&](const Stmt& s) {
    const auto* r = ir::As<ir::BlockRealizeNode>(s);
    if (!r) return;
    for (size_t k = 0; k < r->iter_values.size(); ++k) {
      if (r->block->iter_vars[k].kind == ir::IterKind::kReduction &&
          ir::UsesVar(r->iter_values[k], loop_var)) {
        if (realize && realize != r) throw fail("several reduction blocks use the loop");
        realize = r;
      }
    }
  });
  if (!realize) throw fail("no reduction block is bound to the loop");
  const ir::Block& block = realize->block;
  ReductionPattern pattern;
  if (!MatchReduction(block, &pattern)) {
    throw fail(fmt::format("block '{}' is not a sum or max reduction `out = out + value` with init",
                           block->name));
  }
  int rank = static_cast<int>(pattern.buffer->shape.size());
  if (factor_axis < 0 || factor_axis > rank) {
    throw fail(fmt::format("factor_axis {} is out of range [0, {}]", factor_axis, rank));
  }
  StmtPath block_path = GetBlockPath(fn, block->name);
  std::vector<const ir::ForNode*> loops = EnclosingLoops(block_path);
  // The block's nest must not share loops with other blocks.
  const ir::StmtNode* top = block_path.target.get();
  for (auto it = block_path.ancestors.rbegin(); it != block_path.ancestors.rend(); ++it) {
    const auto* l = ir::As<ir::ForNode>(*it);
    if (!l || l->body.get() != top) break;
    top = l;
  }
  // Above the exclusive nest, up to the enclosing block, there must be no loop: the write-back
  // placed after the nest has to see every partial result.
  bool above_top = false;
  for (auto it = block_path.ancestors.rbegin(); it != block_path.ancestors.rend(); ++it) {
    if ((*it)->kind == ir::StmtKind::kBlockRealize) break;
    if (above_top && (*it)->kind == ir::StmtKind::kFor) {
      throw fail(fmt::format("block '{}' shares loops with other blocks; rfactor before compute_at",
                             block->name));
    }
    if (it->get() == top) above_top = true;
  }
  if (top == block_path.target.get()) {
    for (auto it = block_path.ancestors.rbegin(); it != block_path.ancestors.rend(); ++it) {
      if ((*it)->kind == ir::StmtKind::kBlockRealize) break;
      if ((*it)->kind == ir::StmtKind::kFor) throw fail("the block shares loops with other blocks");
    }
  }
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    if (block->iter_vars[k].kind == ir::IterKind::kSpatial &&
        ir::UsesVar(realize->iter_values[k], loop_var)) {
      throw fail("the loop also feeds a spatial iterator");
    }
  }

  // Partial block: spatial iterators + the factored loop as a spatial axis + one reduction
  // iterator per other reduction loop.
  auto rf = std::make_shared<ir::BlockNode>();
  rf->name = FreshBlockName(fn, block->name + "_rf");
  ir::Var vf = ir::MakeVar(loop_var->name + "_rf");
  ir::VarMap loop_to_iter{{loop_var.get(), vf}};
  std::vector<Expr> rf_values;
  ir::VarMap iter_to_new;
  std::vector<Expr> rf_indices;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (iv.kind != ir::IterKind::kSpatial) continue;
    ir::Var copy = ir::MakeVar(iv.var->name);
    iter_to_new[iv.var.get()] = copy;
    rf->iter_vars.push_back(ir::IterVar{copy, iv.extent, ir::IterKind::kSpatial});
    rf_values.push_back(realize->iter_values[k]);
  }
  rf->iter_vars.push_back(ir::IterVar{vf, loop->extent, ir::IterKind::kSpatial});
  rf_values.push_back(loop_var);
  for (const ir::ForNode* l : loops) {
    if (l->loop_var.same_as(loop_var)) continue;
    bool reduction = false;
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      reduction = reduction || (block->iter_vars[k].kind == ir::IterKind::kReduction &&
                                ir::UsesVar(realize->iter_values[k], l->loop_var));
    }
    if (!reduction) continue;
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (block->iter_vars[k].kind == ir::IterKind::kSpatial &&
          ir::UsesVar(realize->iter_values[k], l->loop_var)) {
        // Its iterations would become reduction iterations of the partial block that do not
        // start at 0 for every spatial point, so the partial block's init would not run.
        throw fail(fmt::format("loop '{}' feeds both spatial and reduction iterators of block '{}'",
                               l->loop_var->name, block->name));
      }
    }
    ir::Var r = ir::MakeVar(l->loop_var->name + "_r");
    loop_to_iter[l->loop_var.get()] = r;
    rf->iter_vars.push_back(ir::IterVar{r, l->extent, ir::IterKind::kReduction});
    rf_values.push_back(l->loop_var);
  }
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (iv.kind == ir::IterKind::kReduction) {
      iter_to_new[iv.var.get()] = ir::Substitute(realize->iter_values[k], loop_to_iter);
    }
  }
  for (const Expr& i : pattern.indices) rf_indices.push_back(ir::Substitute(i, iter_to_new));
  rf_indices.insert(rf_indices.begin() + factor_axis, vf);
  ir::Shape rf_shape = pattern.buffer->shape;
  rf_shape.insert(rf_shape.begin() + factor_axis, loop->extent);
  ir::Buffer rf_buffer =
      ir::MakeBuffer(pattern.buffer->name + "_rf", pattern.buffer->dtype, rf_shape);
  Expr value = ir::Substitute(pattern.value, iter_to_new);
  rf->init = ir::MakeStore(rf_buffer, rf_indices, pattern.identity);
  rf->body = ir::MakeStore(rf_buffer, rf_indices,
                           Combine(pattern.combiner, ir::Load(rf_buffer, rf_indices), value));
  Stmt rf_realize = ir::MakeBlockRealize(rf_values, realize->predicate, WithRecomputedRegions(rf));

  // Write-back block: reduces the partial axis into the original buffer.
  auto wb = std::make_shared<ir::BlockNode>();
  wb->name = block->name;
  std::vector<Expr> wb_values;
  std::vector<std::pair<ir::Var, int64_t>> wb_loops;
  ir::VarMap wb_map;
  for (const ir::IterVar& iv : block->iter_vars) {
    if (iv.kind != ir::IterKind::kSpatial) continue;
    ir::Var copy = ir::MakeVar(iv.var->name);
    wb_map[iv.var.get()] = copy;
    wb->iter_vars.push_back(ir::IterVar{copy, iv.extent, ir::IterKind::kSpatial});
    ir::Var l = ir::MakeVar("ax" + std::to_string(wb_loops.size()));
    wb_loops.emplace_back(l, iv.extent);
    wb_values.push_back(l);
  }
  ir::Var rv = ir::MakeVar(loop_var->name + "_v");
  wb->iter_vars.push_back(ir::IterVar{rv, loop->extent, ir::IterKind::kReduction});
  ir::Var rv_loop = ir::MakeVar("ax" + std::to_string(wb_loops.size()));
  wb_loops.emplace_back(rv_loop, loop->extent);
  wb_values.push_back(rv_loop);
  std::vector<Expr> out_indices, partial_indices;
  for (const Expr& i : pattern.indices) out_indices.push_back(ir::Substitute(i, wb_map));
  partial_indices = out_indices;
  partial_indices.insert(partial_indices.begin() + factor_axis, rv);
  wb->init = ir::MakeStore(pattern.buffer, out_indices, pattern.identity);
  wb->body = ir::MakeStore(pattern.buffer, out_indices,
                           Combine(pattern.combiner, ir::Load(pattern.buffer, out_indices),
                                   ir::Load(rf_buffer, partial_indices)));
  Stmt wb_nest = ir::MakeBlockRealize(wb_values, Expr(), WithRecomputedRegions(wb));
  for (size_t i = wb_loops.size(); i-- > 0;) {
    wb_nest = ir::MakeFor(wb_loops[i].first, wb_loops[i].second, ir::ForKind::kSerial, wb_nest);
  }

  Stmt body = ReplaceStmt(fn.body, block_path.target.get(), rf_realize);
  // Find the exclusive nest again (its top statement was rebuilt) and append the write-back.
  StmtPath rf_path = GetBlockPath(WithBody(fn, body), rf->name);
  Stmt new_top = rf_path.target;
  for (auto it = rf_path.ancestors.rbegin(); it != rf_path.ancestors.rend(); ++it) {
    const auto* l = ir::As<ir::ForNode>(*it);
    if (!l || l->body != new_top) break;
    new_top = *it;
  }
  body = ReplaceStmt(body, new_top.get(), ir::MakeSeq({new_top, wb_nest}));
  body = AddAllocation(body, rf_buffer,
                       EnclosingBlock(rf_path) ? EnclosingBlock(rf_path)->block->name : "root");
  if (rf_block) *rf_block = rf->name;
  return WithBody(fn, body);
}

}  // namespace tandem::kernels::primitive
