#include "ir/kernel/functor.h"

#include <unordered_set>

namespace tandem::ir {

Expr ExprMutator::VisitExpr(const Expr& e) {
  return VisitChildren(e);
}

Expr ExprMutator::VisitChildren(const Expr& e) {
  if (!e.defined() || e->operands.empty()) return e;
  bool changed = false;
  std::vector<Expr> operands;
  operands.reserve(e->operands.size());
  for (const Expr& o : e->operands) {
    Expr m = VisitExpr(o);
    changed = changed || !m.same_as(o);
    operands.push_back(std::move(m));
  }
  if (!changed) return e;
  ExprNode n = *e;
  n.operands = std::move(operands);
  return Expr(std::make_shared<const ExprNode>(std::move(n)));
}

Stmt StmtMutator::VisitStmt(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::kFor:
      return VisitFor(As<ForNode>(s), s);
    case StmtKind::kSeq:
      return VisitSeq(As<SeqNode>(s), s);
    case StmtKind::kStore:
      return VisitStore(As<StoreNode>(s), s);
    case StmtKind::kIfThenElse:
      return VisitIfThenElse(As<IfThenElseNode>(s), s);
    case StmtKind::kBlockRealize:
      return VisitBlockRealize(As<BlockRealizeNode>(s), s);
  }
  return s;
}

Stmt StmtMutator::VisitFor(const ForNode* op, const Stmt& s) {
  Stmt body = VisitStmt(op->body);
  if (body == op->body) return s;
  auto n = std::make_shared<ForNode>(*op);
  n->body = std::move(body);
  return n;
}

Stmt StmtMutator::VisitSeq(const SeqNode* op, const Stmt& s) {
  bool changed = false;
  std::vector<Stmt> stmts;
  for (const Stmt& child : op->stmts) {
    Stmt m = VisitStmt(child);
    changed = changed || m != child;
    stmts.push_back(std::move(m));
  }
  if (!changed) return s;
  return MakeSeq(std::move(stmts));
}

Stmt StmtMutator::VisitStore(const StoreNode* op, const Stmt& s) {
  bool changed = false;
  std::vector<Expr> indices;
  for (const Expr& i : op->indices) {
    Expr m = VisitExpr(i);
    changed = changed || !m.same_as(i);
    indices.push_back(std::move(m));
  }
  Expr value = VisitExpr(op->value);
  changed = changed || !value.same_as(op->value);
  if (!changed) return s;
  auto n = std::make_shared<StoreNode>(*op);
  n->indices = std::move(indices);
  n->value = std::move(value);
  return n;
}

Stmt StmtMutator::VisitIfThenElse(const IfThenElseNode* op, const Stmt& s) {
  Expr condition = VisitExpr(op->condition);
  Stmt then_case = VisitStmt(op->then_case);
  Stmt else_case = VisitStmt(op->else_case);
  if (condition.same_as(op->condition) && then_case == op->then_case &&
      else_case == op->else_case) {
    return s;
  }
  return MakeIfThenElse(std::move(condition), std::move(then_case), std::move(else_case));
}

Stmt StmtMutator::VisitBlockRealize(const BlockRealizeNode* op, const Stmt& s) {
  bool changed = false;
  std::vector<Expr> values;
  for (const Expr& v : op->iter_values) {
    Expr m = VisitExpr(v);
    changed = changed || !m.same_as(v);
    values.push_back(std::move(m));
  }
  Expr predicate = VisitExpr(op->predicate);
  changed = changed || !predicate.same_as(op->predicate);
  Block block = VisitBlock(op->block);
  changed = changed || block != op->block;
  if (!changed) return s;
  auto n = std::make_shared<BlockRealizeNode>(*op);
  n->iter_values = std::move(values);
  n->predicate = std::move(predicate);
  n->block = std::move(block);
  return n;
}

Block StmtMutator::VisitBlock(const Block& block) {
  bool changed = false;
  auto visit_regions = [&](const std::vector<BufferRegion>& regions) {
    std::vector<BufferRegion> out = regions;
    for (BufferRegion& r : out) {
      for (Range& range : r.region) {
        Expr min = VisitExpr(range.min), extent = VisitExpr(range.extent);
        changed = changed || !min.same_as(range.min) || !extent.same_as(range.extent);
        range = Range{std::move(min), std::move(extent)};
      }
    }
    return out;
  };
  std::vector<BufferRegion> reads = visit_regions(block->reads);
  std::vector<BufferRegion> writes = visit_regions(block->writes);
  Stmt init = VisitStmt(block->init);
  Stmt body = VisitStmt(block->body);
  changed = changed || init != block->init || body != block->body;
  if (!changed) return block;
  auto n = std::make_shared<BlockNode>(*block);
  n->reads = std::move(reads);
  n->writes = std::move(writes);
  n->init = std::move(init);
  n->body = std::move(body);
  return n;
}

void VisitExprTree(const Expr& e, const std::function<void(const Expr&)>& fn) {
  if (!e.defined()) return;
  fn(e);
  for (const Expr& o : e->operands) VisitExprTree(o, fn);
}

void VisitStmtTree(const Stmt& s, const std::function<void(const Stmt&)>& fn) {
  if (!s) return;
  fn(s);
  switch (s->kind) {
    case StmtKind::kFor:
      VisitStmtTree(As<ForNode>(s)->body, fn);
      break;
    case StmtKind::kSeq:
      for (const Stmt& c : As<SeqNode>(s)->stmts) VisitStmtTree(c, fn);
      break;
    case StmtKind::kStore:
      break;
    case StmtKind::kIfThenElse:
      VisitStmtTree(As<IfThenElseNode>(s)->then_case, fn);
      VisitStmtTree(As<IfThenElseNode>(s)->else_case, fn);
      break;
    case StmtKind::kBlockRealize: {
      const Block& b = As<BlockRealizeNode>(s)->block;
      VisitStmtTree(b->init, fn);
      VisitStmtTree(b->body, fn);
      break;
    }
  }
}

void VisitStmtExprs(const Stmt& s, const std::function<void(const Expr&)>& fn) {
  VisitStmtTree(s, [&](const Stmt& stmt) {
    switch (stmt->kind) {
      case StmtKind::kStore: {
        const StoreNode* st = As<StoreNode>(stmt);
        for (const Expr& i : st->indices) fn(i);
        fn(st->value);
        break;
      }
      case StmtKind::kIfThenElse:
        fn(As<IfThenElseNode>(stmt)->condition);
        break;
      case StmtKind::kBlockRealize: {
        const BlockRealizeNode* br = As<BlockRealizeNode>(stmt);
        for (const Expr& v : br->iter_values) fn(v);
        fn(br->predicate);
        for (const auto* regions : {&br->block->reads, &br->block->writes}) {
          for (const BufferRegion& r : *regions) {
            for (const Range& range : r.region) {
              fn(range.min);
              fn(range.extent);
            }
          }
        }
        break;
      }
      default:
        break;
    }
  });
}

namespace {
class Substituter : public StmtMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  Expr VisitExpr(const Expr& e) override {
    if (e.defined() && e->kind == ExprKind::kVar) {
      auto it = map_.find(e.get());
      return it == map_.end() ? e : it->second;
    }
    return VisitChildren(e);
  }

 private:
  const VarMap& map_;
};
}  // namespace

Expr Substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  Substituter s(map);
  return s.VisitExpr(e);
}

Stmt Substitute(const Stmt& stmt, const VarMap& map) {
  if (map.empty()) return stmt;
  Substituter s(map);
  return s.VisitStmt(stmt);
}

bool UsesVar(const Expr& e, const Var& v) {
  bool found = false;
  VisitExprTree(e, [&](const Expr& x) { found = found || x.same_as(v); });
  return found;
}

bool HasLoad(const Expr& e) {
  bool found = false;
  VisitExprTree(e, [&](const Expr& x) { found = found || x->kind == ExprKind::kLoad; });
  return found;
}

bool LoadsBufferStoredIn(const Expr& e, const Stmt& s) {
  bool loads = false;
  VisitExprTree(e, [&](const Expr& x) { loads = loads || x->kind == ExprKind::kLoad; });
  if (!loads) return false;
  std::unordered_set<const BufferNode*> stored;
  VisitStmtTree(s, [&](const Stmt& st) {
    if (const auto* store = As<StoreNode>(st)) stored.insert(store->buffer.get());
  });
  bool found = false;
  VisitExprTree(e, [&](const Expr& x) {
    found = found || (x->kind == ExprKind::kLoad && stored.count(x->buffer.get()));
  });
  return found;
}

bool HasVar(const Expr& e) {
  bool found = false;
  VisitExprTree(e, [&](const Expr& x) { found = found || x->kind == ExprKind::kVar; });
  return found;
}

std::vector<Expr> Conjuncts(const Expr& e) {
  if (e->kind != ExprKind::kAnd) return {e};
  std::vector<Expr> out = Conjuncts(e->operands[0]);
  std::vector<Expr> rest = Conjuncts(e->operands[1]);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace tandem::ir
