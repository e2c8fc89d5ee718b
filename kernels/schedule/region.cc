#include "kernels/schedule/region.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"
#include "kernels/schedule/access.h"

namespace tandem::kernels {

using ir::Error;
using ir::Expr;
using ir::Stmt;

ir::VarRanges LoopRangesAt(const StmtPath& loop_path) {
  ir::VarRanges ranges;
  for (const Stmt& a : loop_path.ancestors) {
    if (const auto* l = ir::As<ir::ForNode>(a)) ranges[l->loop_var.get()] = {0, l->extent - 1};
  }
  const auto* loop = ir::As<ir::ForNode>(loop_path.target);
  ranges[loop->loop_var.get()] = {0, loop->extent - 1};
  return ranges;
}

std::vector<AxisRegion> RegionUnderLoop(const StmtPath& loop_path, const ir::Buffer& buffer,
                                        bool reads, const std::string& context,
                                        const std::string& only_block) {
  const auto* loop = ir::As<ir::ForNode>(loop_path.target);
  ir::VarRanges outer = LoopRangesAt(loop_path);
  size_t rank = buffer->shape.size();
  std::vector<Expr> mins(rank), maxs(rank);
  bool any = false;
  // Walks the loop body tracking the ranges of inner loops, binding block iterators.
  std::function<void(const Stmt&, ir::VarRanges&)> walk = [&](const Stmt& s, ir::VarRanges& inner) {
    if (!s) return;
    if (const auto* l = ir::As<ir::ForNode>(s)) {
      inner[l->loop_var.get()] = {0, l->extent - 1};
      walk(l->body, inner);
      inner.erase(l->loop_var.get());
    } else if (const auto* seq = ir::As<ir::SeqNode>(s)) {
      for (const Stmt& c : seq->stmts) walk(c, inner);
    } else if (const auto* branch = ir::As<ir::IfThenElseNode>(s)) {
      walk(branch->then_case, inner);
      walk(branch->else_case, inner);
    } else if (const auto* realize = ir::As<ir::BlockRealizeNode>(s)) {
      const ir::Block& b = realize->block;
      if (!only_block.empty() && b->name != only_block) return;
      ir::VarMap bind;
      for (size_t k = 0; k < b->iter_vars.size(); ++k) {
        bind[b->iter_vars[k].var.get()] = realize->iter_values[k];
      }
      Stmt whole = ir::MakeSeq({b->init, b->body});
      // Loops inside the block (nested loops in its body) vary too. Blocks nested in the body
      // are covered by the body's accesses.
      ir::VarRanges ranges = inner;
      ir::VisitStmtTree(whole, [&](const Stmt& x) {
        if (const auto* l = ir::As<ir::ForNode>(x)) ranges[l->loop_var.get()] = {0, l->extent - 1};
      });
      for (const Access& a : reads ? CollectLoads(whole) : CollectStores(whole)) {
        if (a.buffer != buffer) continue;
        for (size_t d = 0; d < rank; ++d) {
          Expr index = ir::Substitute(a.indices[d], bind);
          Expr lo, hi;
          if (!SymbolicBounds(index, ranges, &lo, &hi)) {
            lo = ir::IntImm(0);
            hi = ir::IntImm(buffer->shape[d] - 1);
          }
          mins[d] = mins[d].defined() ? ir::Simplify(ir::Min(mins[d], lo), outer) : lo;
          maxs[d] = maxs[d].defined() ? ir::Simplify(ir::Max(maxs[d], hi), outer) : hi;
        }
        any = true;
      }
    }
  };
  ir::VarRanges inner;
  walk(loop->body, inner);
  if (!any) {
    throw Error(fmt::format("{}: no block under loop '{}' {} buffer '{}'", context,
                            loop->loop_var->name, reads ? "reads" : "writes", buffer->name));
  }
  std::vector<AxisRegion> region(rank);
  for (size_t d = 0; d < rank; ++d) {
    // The extent comes from the unclamped bounds (exact for affine indices); the box is then
    // clamped to the buffer, so that an access outside it (a guarded read of a padding border)
    // neither shifts the box out of the buffer nor cuts its end off.
    ir::IntInterval span = ir::ConstIntBound(ir::Simplify(maxs[d] - mins[d], outer), outer);
    int64_t extent = span.max == INT64_MAX ? buffer->shape[d] : span.max + 1;
    extent = std::clamp<int64_t>(extent, 1, buffer->shape[d]);
    Expr lo = ir::Simplify(ir::Max(mins[d], ir::IntImm(0)), outer);
    Expr hi = ir::Simplify(ir::Min(maxs[d], ir::IntImm(buffer->shape[d] - 1)), outer);
    region[d] = AxisRegion{lo, hi, extent};
  }
  return region;
}

namespace {

// Structural equality of expressions (variables and buffers by identity).
bool SameExpr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind || a->dtype != b->dtype || a->operands.size() != b->operands.size() ||
      a->kind == ir::ExprKind::kVar || a->int_value != b->int_value ||
      a->float_value != b->float_value || a->name != b->name || a->buffer != b->buffer) {
    return false;
  }
  for (size_t i = 0; i < a->operands.size(); ++i) {
    if (!SameExpr(a->operands[i], b->operands[i])) return false;
  }
  return true;
}

class ValuesToIterators : public ir::ExprMutator {
 public:
  explicit ValuesToIterators(const ir::BlockRealizeNode* realize) : realize_(realize) {}
  Expr VisitExpr(const Expr& e) override {
    for (size_t k = 0; k < realize_->iter_values.size(); ++k) {
      const Expr& value = realize_->iter_values[k];
      if (!value->is_const_int() && SameExpr(e, value)) return realize_->block->iter_vars[k].var;
    }
    return VisitChildren(e);
  }

 private:
  const ir::BlockRealizeNode* realize_;
};

}  // namespace

Expr PredicateOverIterators(const ir::BlockRealizeNode* realize, const ir::VarRanges& kept) {
  const ir::Block& block = realize->block;
  ValuesToIterators rewriter(realize);
  ir::VarRanges ranges = kept;
  for (const ir::IterVar& iv : block->iter_vars) ranges[iv.var.get()] = {0, iv.extent - 1};
  std::vector<Expr> conjuncts = ir::Conjuncts(realize->predicate);
  Expr predicate = ir::IntImm(1, ir::DataType::kBool);
  for (const Expr& conjunct : conjuncts) {
    Expr rewritten = rewriter.VisitExpr(conjunct);
    // Loops of the old place that remain.
    ir::VarMap old_loops;
    ir::VisitExprTree(rewritten, [&](const Expr& e) {
      if (e->kind == ir::ExprKind::kVar && !ranges.count(e.get())) {
        old_loops[e.get()] = ir::IntImm(0, e->dtype);
      }
    });
    if (old_loops.empty()) {
      predicate = predicate && rewritten;
      continue;
    }
    // A condition on loops that feed no iterator only picks which of several identical
    // executions of the block happen; when the first one (those loops at 0) always runs, the
    // block ran at every point, and the condition can go.
    for (const Expr& value : realize->iter_values) {
      bool feeds = false;
      ir::VisitExprTree(value, [&](const Expr& e) { feeds = feeds || old_loops.count(e.get()); });
      if (feeds) return Expr();
    }
    if (!ir::CanProve(ir::Substitute(rewritten, old_loops), ranges)) return Expr();
  }
  return ir::Simplify(predicate, ranges);
}

Stmt RegenerateNest(const ir::Block& block, const std::vector<int>& spatial_iters,
                    const std::vector<AxisRegion>& region, const Expr& iterator_predicate,
                    const ir::VarRanges& outer) {
  size_t n = block->iter_vars.size();
  std::vector<Expr> values(n);
  std::vector<ir::Var> loop_vars;
  std::vector<int64_t> extents;
  Expr predicate = ir::IntImm(1, ir::DataType::kBool);
  ir::VarRanges ranges = outer;
  for (size_t d = 0; d < spatial_iters.size(); ++d) {
    if (spatial_iters[d] < 0) continue;  // an axis of length 1 at a constant index
    ir::Var ax = ir::MakeVar(fmt::format("ax{}", d));
    loop_vars.push_back(ax);
    extents.push_back(region[d].extent);
    ranges[ax.get()] = {0, region[d].extent - 1};
    values[static_cast<size_t>(spatial_iters[d])] = region[d].min + ax;
  }
  for (size_t d = 0; d < spatial_iters.size(); ++d) {
    if (spatial_iters[d] < 0) continue;
    Expr index = values[static_cast<size_t>(spatial_iters[d])];
    int64_t domain = block->iter_vars[static_cast<size_t>(spatial_iters[d])].extent;
    for (Expr guard :
         {index <= region[d].max, index < ir::IntImm(domain), index >= ir::IntImm(0)}) {
      if (!ir::CanProve(guard, ranges)) predicate = predicate && guard;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    if (values[k].defined()) continue;
    ir::Var r = ir::MakeVar(block->iter_vars[k].var->name);
    loop_vars.push_back(r);
    extents.push_back(block->iter_vars[k].extent);
    ranges[r.get()] = {0, block->iter_vars[k].extent - 1};
    values[k] = r;
  }
  for (Expr& v : values) v = ir::Simplify(v, ranges);
  int64_t always = 0;
  if (!ir::AsConstInt(iterator_predicate, &always) || always == 0) {
    ir::VarMap bind;
    for (size_t k = 0; k < n; ++k) bind[block->iter_vars[k].var.get()] = values[k];
    predicate = predicate && ir::Substitute(iterator_predicate, bind);
  }
  Stmt nest = ir::MakeBlockRealize(values, ir::Simplify(predicate, ranges), block);
  for (size_t i = loop_vars.size(); i-- > 0;) {
    nest = ir::MakeFor(loop_vars[i], extents[i], ir::ForKind::kSerial, nest);
  }
  return nest;
}

}  // namespace tandem::kernels
