// Interior tiles without bounds checks (see VersionInteriorTiles in codegen.h).
//
// A padded operand read inline (a convolution whose pad was inlined) is a load under a select:
// `select(h + kh >= 1 && h + kh < 57 && ..., data[...], 0)`. Inside the body of a parallel loop
// (one tile of the output) those conditions are checked once per vector and tap, although for
// almost every tile they hold everywhere. This step gives such a body two versions: where a
// condition that depends only on the tile's position says every check in the tile passes, a
// copy with those selects replaced by their loads runs; elsewhere the body as it was. A kernel
// scheduled for one thread has no parallel loop: there the tile is the body of an outermost loop.
#include <algorithm>
#include <set>
#include <unordered_set>

#include "backends/llvm/codegen.h"
#include "ir/kernel/bound.h"
#include "ir/kernel/canonical_form.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/simplify.h"

namespace tandem::backends {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

namespace {

// The loops inside one tile body, and the selects found in it.
class TileAnalysis {
 public:
  // Steps:
  //   1. walk the body: loop variables with their ranges, block iterators with the loop
  //      expressions they are bound to;
  //   2. for each select with a load in its true arm, each conjunct of its condition as
  //      `difference >= 0`, the difference a canonical sum of the block's loop expressions;
  //   3. a conjunct holds for the whole tile when its minimum over the tile's loops is >= 0:
  //      the terms in one tile loop variable contribute their smallest value, the others (which
  //      depend only on the tile's position) stay as they are; a conjunct with any other use of
  //      a tile loop variable, or a select with such a conjunct, is left alone.
  explicit TileAnalysis(const Stmt& body) { Walk(body, {}); }

  const std::unordered_set<const ir::ExprNode*>& selects() const { return selects_; }
  const std::vector<Expr>& tile_conditions() const { return tile_conditions_; }

 private:
  void Walk(const Stmt& s, const ir::VarMap& bindings) {
    if (!s) return;
    if (const ir::ForNode* loop = ir::As<ir::ForNode>(s)) {
      inner_[loop->loop_var.get()] = loop->extent;
      Walk(loop->body, bindings);
    } else if (const ir::SeqNode* seq = ir::As<ir::SeqNode>(s)) {
      for (const Stmt& child : seq->stmts) Walk(child, bindings);
    } else if (const ir::IfThenElseNode* branch = ir::As<ir::IfThenElseNode>(s)) {
      Walk(branch->then_case, bindings);
      Walk(branch->else_case, bindings);
    } else if (const ir::StoreNode* store = ir::As<ir::StoreNode>(s)) {
      FindSelects(store->value, bindings);
    } else if (const ir::BlockRealizeNode* realize = ir::As<ir::BlockRealizeNode>(s)) {
      ir::VarMap inner_bindings = bindings;
      const ir::Block& block = realize->block;
      for (size_t v = 0; v < block->iter_vars.size() && v < realize->iter_values.size(); ++v) {
        inner_bindings[block->iter_vars[v].var.get()] =
            ir::Substitute(realize->iter_values[v], bindings);
      }
      Walk(block->init, inner_bindings);
      Walk(block->body, inner_bindings);
    }
  }

  void FindSelects(const Expr& value, const ir::VarMap& bindings) {
    ir::VisitExprTree(value, [&](const Expr& e) {
      if (e->kind != ExprKind::kSelect || !ir::HasLoad(e->operands[1])) return;
      std::vector<Expr> conditions;
      for (const Expr& conjunct : ir::Conjuncts(ir::Substitute(e->operands[0], bindings))) {
        std::optional<Expr> condition = TileCondition(conjunct);
        if (!condition) return;
        conditions.push_back(*condition);
      }
      selects_.insert(e.get());
      for (Expr& condition : conditions) AddCondition(std::move(condition));
    });
  }

  // The condition on the tile's position under which `conjunct` holds throughout the tile.
  std::optional<Expr> TileCondition(const Expr& conjunct) const {
    if (!ir::IsComparison(conjunct->kind) || conjunct->operands.size() != 2) return std::nullopt;
    const Expr& a = conjunct->operands[0];
    const Expr& b = conjunct->operands[1];
    if (a->dtype != ir::DataType::kInt64 || b->dtype != ir::DataType::kInt64) return std::nullopt;
    Expr difference;  // the conjunct is `difference >= 0`
    switch (conjunct->kind) {
      case ExprKind::kLT: difference = b - a - 1; break;
      case ExprKind::kLE: difference = b - a; break;
      case ExprKind::kGT: difference = a - b - 1; break;
      case ExprKind::kGE: difference = a - b; break;
      default: return std::nullopt;
    }
    ir::canonical::Sum sum = ir::canonical::ToSum(ir::Simplify(difference));
    ir::canonical::Sum position;
    position.dtype = sum.dtype;
    position.constant = sum.constant;
    int64_t smallest = 0;  // the tile loops' smallest contribution
    for (const ir::canonical::Term& term : sum.terms) {
      bool uses_tile_loop = false;
      for (const Expr& atom : term.atoms) {
        ir::VisitExprTree(atom, [&](const Expr& x) {
          uses_tile_loop = uses_tile_loop || (x->kind == ExprKind::kVar && inner_.count(x.get()));
        });
      }
      if (!uses_tile_loop) {
        ir::canonical::AddTerm(&position, term.coeff, term.atoms);
        continue;
      }
      if (term.atoms.size() != 1 || term.atoms[0]->kind != ExprKind::kVar) return std::nullopt;
      int64_t last = inner_.at(term.atoms[0].get()) - 1;
      smallest += term.coeff < 0 ? term.coeff * last : 0;
    }
    return ir::Simplify(ir::canonical::FromSum(position) >= ir::IntImm(-smallest));
  }

  void AddCondition(Expr condition) {
    int64_t value = 0;
    if (ir::AsConstInt(condition, &value) && value != 0) return;  // always true
    std::string text = ir::PrintExpr(condition);
    if (seen_.insert(text).second) tile_conditions_.push_back(std::move(condition));
  }

  std::unordered_map<const ir::ExprNode*, int64_t> inner_;  // tile loop variable -> extent
  std::unordered_set<const ir::ExprNode*> selects_;
  std::vector<Expr> tile_conditions_;
  std::set<std::string> seen_;
};

// The tile body with the given selects replaced by their true arms.
class DropChecks : public ir::StmtMutator {
 public:
  explicit DropChecks(const std::unordered_set<const ir::ExprNode*>& selects)
      : selects_(selects) {}

  Expr VisitExpr(const Expr& e) override {
    if (selects_.count(e.get())) return VisitExpr(e->operands[1]);
    return VisitChildren(e);
  }

 private:
  const std::unordered_set<const ir::ExprNode*>& selects_;
};

bool HasParallelLoop(const Stmt& s) {
  bool found = false;
  ir::VisitStmtTree(s, [&](const Stmt& t) {
    const ir::ForNode* loop = ir::As<ir::ForNode>(t);
    found = found || (loop && loop->for_kind == ir::ForKind::kParallel);
  });
  return found;
}

// Tiles are the bodies of parallel loops, and of the outermost loops of a kernel without
// parallel loops under them (a kernel scheduled for one thread).
class Versioner : public ir::StmtMutator {
 protected:
  Stmt VisitFor(const ir::ForNode* op, const Stmt& s) override {
    bool tile = op->for_kind == ir::ForKind::kParallel ||
                (depth_ == 0 && op->for_kind == ir::ForKind::kSerial && !HasParallelLoop(op->body));
    if (!tile) {
      ++depth_;
      Stmt out = StmtMutator::VisitFor(op, s);
      --depth_;
      return out;
    }
    TileAnalysis analysis(op->body);
    if (analysis.selects().empty()) return s;
    Stmt interior = DropChecks(analysis.selects()).VisitStmt(op->body);
    auto n = std::make_shared<ir::ForNode>(*op);
    n->body = interior;  // every check holds in every tile
    if (analysis.tile_conditions().empty()) return n;
    Expr all = analysis.tile_conditions()[0];
    for (size_t c = 1; c < analysis.tile_conditions().size(); ++c) {
      all = all && analysis.tile_conditions()[c];
    }
    n->body = ir::MakeIfThenElse(all, interior, op->body);
    return n;
  }

 private:
  int depth_ = 0;  // loops around the statement being visited
};

}  // namespace

ir::KernelFunction VersionInteriorTiles(const ir::KernelFunction& kernel) {
  ir::KernelFunction out = kernel;
  out.body = Versioner().VisitStmt(kernel.body);
  return out;
}

}  // namespace tandem::backends
