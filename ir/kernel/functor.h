// Traversal and rewriting of kernel IR.
//
// StmtMutator and ExprMutator rebuild only what changes: a visit that returns its input
// unchanged keeps sharing the original node, so a rewrite of one loop copies just the path to
// it. Override the Visit* method of the node kinds you care about and call the base method to
// recurse.
#pragma once

#include <functional>
#include <unordered_map>

#include "ir/kernel/expr.h"
#include "ir/kernel/stmt.h"

namespace tandem::ir {

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  virtual Expr VisitExpr(const Expr& e);

 protected:
  // Rebuilds `e` with mutated operands (same node when none changed).
  Expr VisitChildren(const Expr& e);
};

class StmtMutator : public ExprMutator {
 public:
  virtual Stmt VisitStmt(const Stmt& s);

 protected:
  virtual Stmt VisitFor(const ForNode* op, const Stmt& s);
  virtual Stmt VisitSeq(const SeqNode* op, const Stmt& s);
  virtual Stmt VisitStore(const StoreNode* op, const Stmt& s);
  virtual Stmt VisitIfThenElse(const IfThenElseNode* op, const Stmt& s);
  virtual Stmt VisitBlockRealize(const BlockRealizeNode* op, const Stmt& s);
  // Rebuilds a block with mutated regions, init and body (same block when unchanged).
  virtual Block VisitBlock(const Block& block);
};

// Calls `fn` on every expression node of `e` in pre-order.
void VisitExprTree(const Expr& e, const std::function<void(const Expr&)>& fn);
// Calls `fn` on every statement of `s` in pre-order (blocks' init before body).
void VisitStmtTree(const Stmt& s, const std::function<void(const Stmt&)>& fn);
// Calls `fn` on every expression that appears in `s` (top-level ones; use VisitExprTree to go
// inside them): loop-free parts of stores, conditions, iter values, predicates, region bounds.
void VisitStmtExprs(const Stmt& s, const std::function<void(const Expr&)>& fn);

using VarMap = std::unordered_map<const ExprNode*, Expr>;

// Replaces variables (by identity) with expressions.
Expr Substitute(const Expr& e, const VarMap& map);
Stmt Substitute(const Stmt& s, const VarMap& map);

// True when `e` mentions variable `v`.
bool UsesVar(const Expr& e, const Var& v);
// True when `e` reads a buffer (has a kLoad node).
bool HasLoad(const Expr& e);
// True when `e` loads a buffer that `s` stores to.
bool LoadsBufferStoredIn(const Expr& e, const Stmt& s);
// True when `e` mentions any variable (has a kVar node).
bool HasVar(const Expr& e);
// The operands of the `&&` chain `e` (`e` itself when it is not an `&&`), left to right.
std::vector<Expr> Conjuncts(const Expr& e);

}  // namespace tandem::ir
