// reorder: permute loops along one perfectly nested chain.
#include <fmt/format.h>

#include <set>

#include "ir/error.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Error;
using ir::Stmt;

ir::KernelFunction Reorder(const ir::KernelFunction& fn, const std::vector<ir::Var>& order) {
  if (order.empty()) return fn;
  std::set<const ir::ExprNode*> wanted;
  for (const ir::Var& v : order) {
    if (!wanted.insert(v.get()).second) {
      throw Error(fmt::format("reorder: loop '{}' is listed twice", v->name));
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
      throw Error(fmt::format("reorder: the loops do not lie on one perfectly nested chain (loop "
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
  Stmt body = chain.back()->body;
  for (size_t i = result.size(); i-- > 0;) {
    const ir::ForNode* n = result[i];
    body = ir::MakeFor(n->loop_var, n->extent, n->for_kind, body, n->annotations);
  }
  return WithBody(fn, ReplaceStmt(fn.body, top_path.target.get(), body));
}

}  // namespace tandem::kernels::primitive
