// reorder: permute loops along one perfectly nested chain.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Stmt;

namespace {

// A reduction block runs its init at the first iteration that reaches a spatial point. Loops
// that each feed a block only spatial or only reduction iterators can be permuted freely:
// whatever their order, that first iteration has every reduction loop at 0. A loop that feeds
// both kinds (after fusing a spatial with a reduction loop) mixes the two: moving such loops
// past each other changes which reduction iteration comes first, so the init would wipe
// partial sums. Throws when `result` changes the relative order of two such loops of a block.
void CheckMixedLoopsKeepOrder(const std::vector<const ir::ForNode*>& chain,
                              const std::vector<const ir::ForNode*>& result) {
  ir::VisitStmtTree(chain.back()->body, [&](const Stmt& s) {
    const auto* realize = ir::As<ir::BlockRealizeNode>(s);
    if (!realize) return;
    auto feeds = [&](const ir::ForNode* loop, ir::IterKind kind) {
      for (size_t k = 0; k < realize->iter_values.size(); ++k) {
        if (realize->block->iter_vars[k].kind == kind &&
            ir::UsesVar(realize->iter_values[k], loop->loop_var)) {
          return true;
        }
      }
      return false;
    };
    std::vector<const ir::ForNode*> mixed_before, mixed_after;
    for (const ir::ForNode* loop : chain) {
      if (feeds(loop, ir::IterKind::kSpatial) && feeds(loop, ir::IterKind::kReduction)) {
        mixed_before.push_back(loop);
      }
    }
    for (const ir::ForNode* loop : result) {
      if (std::find(mixed_before.begin(), mixed_before.end(), loop) != mixed_before.end()) {
        mixed_after.push_back(loop);
      }
    }
    for (size_t i = 0; i < mixed_before.size(); ++i) {
      if (mixed_before[i] != mixed_after[i]) {
        throw ScheduleError(fmt::format(
            "reorder: loops '{}' and '{}' both feed spatial and reduction "
            "iterators of block '{}'; swapping them would change which "
            "iteration initializes the reduction",
            mixed_before[i]->loop_var->name, mixed_after[i]->loop_var->name, realize->block->name));
      }
    }
  });
}

}  // namespace

ir::KernelFunction Reorder(const ir::KernelFunction& fn, const std::vector<ir::Var>& order) {
  if (order.empty()) return fn;
  std::set<const ir::ExprNode*> wanted;
  for (const ir::Var& v : order) {
    if (!wanted.insert(v.get()).second) {
      throw ScheduleError(fmt::format("reorder: loop '{}' is listed twice", v->name));
    }
  }
  // The outermost of the given loops is the one with the fewest enclosing loops.
  StmtPath top_path;
  size_t best_depth = SIZE_MAX;
  for (const ir::Var& v : order) {
    StmtPath p = GetLoopPath(fn, v);
    if (p.ancestors.size() < best_depth) {
      best_depth = p.ancestors.size();
      top_path = p;
    }
  }
  // Walk the chain down from the outermost loop until every given loop has been seen.
  std::vector<const ir::ForNode*> chain;
  size_t seen = 0;
  const ir::ForNode* current = ir::As<ir::ForNode>(top_path.target);
  while (true) {
    chain.push_back(current);
    if (wanted.count(current->loop_var.get())) ++seen;
    if (seen == wanted.size()) break;
    const auto* next = ir::As<ir::ForNode>(current->body);
    if (next == nullptr) {
      throw ScheduleError(
          fmt::format("reorder: the loops do not lie on one perfectly nested chain (loop "
                      "'{}' has a body that is not a single loop)",
                      current->loop_var->name));
    }
    current = next;
  }
  // Positions in the chain occupied by given loops get the given loops in the new order.
  std::vector<const ir::ForNode*> result = chain;
  size_t next_given = 0;
  for (auto& slot : result) {
    if (!wanted.count(slot->loop_var.get())) continue;
    const ir::Var& v = order[next_given++];
    for (const ir::ForNode* c : chain) {
      if (c->loop_var.same_as(v)) slot = c;
    }
  }
  CheckMixedLoopsKeepOrder(chain, result);
  Stmt body = chain.back()->body;
  for (size_t i = result.size(); i-- > 0;) {
    const ir::ForNode* n = result[i];
    body = ir::MakeFor(n->loop_var, n->extent, n->for_kind, body, n->annotations);
  }
  return WithBody(fn, ReplaceStmt(fn.body, top_path.target.get(), body));
}

}  // namespace tandem::kernels::primitive
