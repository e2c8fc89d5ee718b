#include "kernels/dynamic_access.h"

#include "ir/kernel/functor.h"

namespace tandem::kernels::dynamic_access {

namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

// Adds the loads of `e` to `accesses`, each with the guards of the selects around it.
void CollectLoads(const Expr& e, std::vector<Expr>& guards, std::vector<Access>& accesses) {
  if (e->kind == ExprKind::kSelect) {
    CollectLoads(e->operands[0], guards, accesses);
    size_t outer = guards.size();
    for (const Expr& conjunct : ir::Conjuncts(e->operands[0])) guards.push_back(conjunct);
    CollectLoads(e->operands[1], guards, accesses);
    guards.resize(outer);
    CollectLoads(e->operands[2], guards, accesses);
    return;
  }
  if (e->kind == ExprKind::kLoad) accesses.push_back({e->buffer, e->operands, false, guards});
  for (const Expr& operand : e->operands) CollectLoads(operand, guards, accesses);
}

}  // namespace

std::vector<Access> AccessesOf(const ir::BlockNode& block) {
  std::vector<Access> accesses;
  auto collect = [&](const Stmt& s) {
    if (!s) return;
    ir::VisitStmtTree(s, [&](const Stmt& stmt) {
      if (const auto* store = ir::As<ir::StoreNode>(stmt)) {
        accesses.push_back({store->buffer, store->indices, true, {}});
      }
    });
    ir::VisitStmtExprs(s, [&](const Expr& top) {
      std::vector<Expr> guards;
      CollectLoads(top, guards, accesses);
    });
  };
  collect(block.init);
  collect(block.body);
  return accesses;
}

bool IsLeaf(const ir::BlockNode& block) {
  bool leaf = true;
  for (const Stmt& part : {block.init, block.body}) {
    if (!part) continue;
    ir::VisitStmtTree(part, [&](const Stmt& inner) {
      if (ir::As<ir::BlockRealizeNode>(inner)) leaf = false;
    });
  }
  return leaf;
}

std::vector<const ir::BlockRealizeNode*> LeafBlocks(const Stmt& body) {
  std::vector<const ir::BlockRealizeNode*> blocks;
  ir::VisitStmtTree(body, [&](const Stmt& s) {
    const auto* realize = ir::As<ir::BlockRealizeNode>(s);
    if (realize && realize->block && IsLeaf(*realize->block)) blocks.push_back(realize);
  });
  return blocks;
}

bool LinearTerms(const ir::Expr& e, int64_t scale, std::vector<std::pair<int64_t, ir::Expr>>& terms,
                 int64_t& constant) {
  int64_t value = 0;
  if (ir::AsConstInt(e, &value)) {
    constant += scale * value;
    return true;
  }
  switch (e->kind) {
    case ir::ExprKind::kAdd:
      return LinearTerms(e->operands[0], scale, terms, constant) &&
             LinearTerms(e->operands[1], scale, terms, constant);
    case ir::ExprKind::kSub:
      return LinearTerms(e->operands[0], scale, terms, constant) &&
             LinearTerms(e->operands[1], -scale, terms, constant);
    case ir::ExprKind::kMul:
      if (ir::AsConstInt(e->operands[1], &value)) {
        return LinearTerms(e->operands[0], scale * value, terms, constant);
      }
      if (ir::AsConstInt(e->operands[0], &value)) {
        return LinearTerms(e->operands[1], scale * value, terms, constant);
      }
      break;
    default:
      break;
  }
  terms.emplace_back(scale, e);
  return true;
}

}  // namespace tandem::kernels::dynamic_access
