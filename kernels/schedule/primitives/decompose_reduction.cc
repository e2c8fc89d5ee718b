// decompose_reduction: hoist a reduction block's init into its own block before a loop.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Expr;
using ir::Stmt;

namespace {

// True when the predicate of `realize` lets the block run for exactly one value of `loop`'s
// variable (the conditions that mention it must mention nothing else).
bool RunsOnce(const ir::ForNode& loop, const ir::BlockRealizeNode* realize) {
  std::vector<Expr> conjuncts = ir::Conjuncts(realize->predicate);
  int64_t runs = 0;
  for (int64_t value = 0; value < loop.extent && runs <= 1; ++value) {
    ir::VarMap bind{{loop.loop_var.get(), ir::IntImm(value, loop.loop_var->dtype)}};
    bool holds = true;
    for (const Expr& c : conjuncts) {
      if (!ir::UsesVar(c, loop.loop_var)) continue;
      int64_t truth = 0;
      if (!ir::AsConstInt(ir::Simplify(ir::Substitute(c, bind)), &truth)) return false;
      holds = holds && truth != 0;
    }
    runs += holds ? 1 : 0;
  }
  return runs == 1;
}

}  // namespace

ir::KernelFunction DecomposeReduction(const ir::KernelFunction& fn, const std::string& block_name,
                                      const ir::Var& loop_var, std::string* init_block) {
  StmtPath path = GetBlockPath(fn, block_name);
  const auto* realize = ir::As<ir::BlockRealizeNode>(path.target);
  const ir::Block& block = realize->block;
  auto fail = [&](const std::string& why) {
    return ScheduleError(fmt::format("decompose_reduction of block '{}' at loop '{}': {}",
                                     block_name, loop_var->name, why));
  };
  if (!block->init) throw fail("the block has no init statement");
  std::vector<const ir::ForNode*> loops = EnclosingLoops(path);
  size_t position = loops.size();
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i]->loop_var.same_as(loop_var)) position = i;
  }
  if (position == loops.size()) throw fail("the loop does not enclose the block");
  bool inside = false;
  for (const Stmt& a : path.ancestors) {
    inside = inside || a.get() == loops[position];
    if (inside && a->kind == ir::StmtKind::kIfThenElse) {
      throw fail("the block is under a condition inside the loop, which the init would not see");
    }
  }

  auto used_by = [&](const ir::Var& v, ir::IterKind kind) {
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (block->iter_vars[k].kind == kind && ir::UsesVar(realize->iter_values[k], v)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < position; ++i) {
    if (used_by(loops[i]->loop_var, ir::IterKind::kReduction)) {
      throw fail(fmt::format("reduction loop '{}' is outside the loop", loops[i]->loop_var->name));
    }
  }
  // The init nest replicates the loops from `loop` down to the block that are not reduction
  // loops: the spatial ones, and those that feed no iterator but may appear in the predicate
  // (init is idempotent, so running it more than once per spatial point is harmless).
  ir::VarMap loop_map;
  std::vector<std::pair<ir::Var, int64_t>> init_loops;
  for (size_t i = position; i < loops.size(); ++i) {
    const ir::Var& v = loops[i]->loop_var;
    bool reduction = used_by(v, ir::IterKind::kReduction);
    if (reduction && used_by(v, ir::IterKind::kSpatial)) {
      throw fail(fmt::format("loop '{}' feeds both spatial and reduction iterators", v->name));
    }
    if (!reduction && !used_by(v, ir::IterKind::kSpatial) && !RunsOnce(*loops[i], realize)) {
      // The update runs several times for the same iterator values (after compute_at placed
      // the block's own nest under another block's loop): with its init inside, each run
      // recomputes the result; without it, the runs would add up.
      throw fail(
          fmt::format("loop '{}' feeds no iterator, so the update runs {} times per "
                      "reduction step",
                      v->name, loops[i]->extent));
    }
    if (!reduction) {
      ir::Var copy = ir::MakeVar(v->name + "_init");
      loop_map[v.get()] = copy;
      init_loops.emplace_back(copy, loops[i]->extent);
    }
  }
  auto init = std::make_shared<ir::BlockNode>();
  init->name = FreshBlockName(fn, block_name + "_init");
  std::vector<Expr> values;
  ir::VarMap iter_map;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (iv.kind != ir::IterKind::kSpatial) continue;
    ir::Var copy = ir::MakeVar(iv.var->name);
    iter_map[iv.var.get()] = copy;
    init->iter_vars.push_back(ir::IterVar{copy, iv.extent, ir::IterKind::kSpatial});
    values.push_back(ir::Substitute(realize->iter_values[k], loop_map));
  }
  init->body = ir::Substitute(block->init, iter_map);
  // Keep the predicate's conditions that do not involve reduction loops.
  std::vector<Expr> conjuncts = ir::Conjuncts(realize->predicate);
  Expr predicate = ir::IntImm(1, ir::DataType::kBool);
  for (const Expr& c : conjuncts) {
    bool reduction = false;
    for (const ir::ForNode* l : loops) {
      reduction = reduction ||
                  (used_by(l->loop_var, ir::IterKind::kReduction) && ir::UsesVar(c, l->loop_var));
    }
    int64_t always = 0;
    if (ir::AsConstInt(c, &always) && always != 0) continue;
    if (reduction) {
      // Dropped for the init, which must run for every spatial point; that is only right
      // when the condition does not also restrict the spatial loops.
      for (const auto& entry : loop_map) {
        const auto* copied = entry.first;
        ir::VisitExprTree(c, [&](const Expr& e) {
          if (e.get() == copied) {
            throw fail(fmt::format("the predicate ties loop '{}' to a reduction loop", e->name));
          }
        });
      }
      continue;
    }
    predicate = predicate && ir::Substitute(c, loop_map);
  }
  Stmt init_nest =
      ir::MakeBlockRealize(values, ir::Simplify(predicate), WithRecomputedRegions(init));
  for (size_t i = init_loops.size(); i-- > 0;) {
    init_nest =
        ir::MakeFor(init_loops[i].first, init_loops[i].second, ir::ForKind::kSerial, init_nest);
  }

  auto update = std::make_shared<ir::BlockNode>(*block);
  update->init = nullptr;
  // Without its init the update reads the buffer it accumulates into: recompute its regions.
  Stmt body = ReplaceStmt(fn.body, path.target.get(),
                          ir::MakeBlockRealize(realize->iter_values, realize->predicate,
                                               WithRecomputedRegions(update)));
  StmtPath loop_path = GetLoopPath(WithBody(fn, body), loop_var);
  body = ReplaceStmt(body, loop_path.target.get(), ir::MakeSeq({init_nest, loop_path.target}));
  if (init_block) *init_block = init->name;
  return WithBody(fn, body);
}

}  // namespace tandem::kernels::primitive
