// Interior tiles without bounds checks (see VersionInteriorTiles in codegen.h).
//
// A padded operand read inline (a convolution whose pad was inlined) is a load under a select:
// `select(h + kh >= 1 && h + kh < 57 && ..., data[...], 0)`. Inside the body of a parallel loop
// (one tile of the output) those conditions are checked once per vector and tap, although for
// almost every tile they hold everywhere. This step gives such a body two versions: where a
// condition that depends only on the tile's position says every check in the tile passes, a
// copy with those selects replaced by their loads runs; elsewhere the body as it was. A kernel
// scheduled for one thread has no parallel loop: there the tile is the body of an outermost loop.
//
// Tiles on an edge of the map get versions of their own (edge versions): where the checks that
// fail depend on one position atom (the w-tile index of a fused loop) at one of a few values,
// that atom is pinned to the value, so each check becomes a constant per unrolled copy that
// LLVM folds, and the checks on the other atoms, which hold there, are dropped. Corners get
// the atom that fails most often pinned with the other checks kept (a check on a row, the same
// for every column of the tile, costs little at run time; one on a column, different for each
// unrolled copy, costs a lot), and after them a copy where that atom's checks all hold.
//
// A check that depends on the tile's own loops alone (the column check of a map one tile
// spans) is not decided by any position: it stays in every version.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
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

  // The condition index of a conjunct that holds everywhere, and of one that no tile position
  // decides (it fails somewhere in every tile: a check on the tile's own loops alone, such as
  // the column check of a map that one tile spans, which each unrolled copy makes a constant).
  static constexpr int kAlways = -1;
  static constexpr int kPerElement = -2;
  // One conjunct of a checked select: `difference >= 0`, which holds throughout the tile when
  // tile condition `condition` does (or kAlways, kPerElement).
  struct Conjunct {
    ir::canonical::Sum difference;
    int condition = -1;
  };
  // A tile condition `coeff * atom + constant >= 0` in one position atom, when it is one.
  struct SingleAtom {
    std::string key;  // the atom, printed
    Expr atom;
    int64_t coeff = 0;
    int64_t constant = 0;
  };

  const std::unordered_set<const ir::ExprNode*>& selects() const { return selects_; }
  const std::vector<Expr>& tile_conditions() const { return tile_conditions_; }
  const std::vector<std::optional<SingleAtom>>& single_atoms() const { return single_atoms_; }
  const std::vector<Conjunct>& conjuncts(const ir::ExprNode* select) const {
    return conjuncts_.at(select);
  }

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
      std::vector<std::pair<Expr, ir::canonical::Sum>> conditions;
      for (const Expr& conjunct : ir::Conjuncts(ir::Substitute(e->operands[0], bindings))) {
        ir::canonical::Sum difference;
        std::optional<Expr> condition = TileCondition(conjunct, &difference);
        if (!condition) return;
        conditions.emplace_back(*condition, std::move(difference));
      }
      selects_.insert(e.get());
      std::vector<Conjunct>& facts = conjuncts_[e.get()];
      for (auto& [condition, difference] : conditions) {
        facts.push_back({std::move(difference), AddCondition(std::move(condition))});
      }
    });
  }

  // The condition on the tile's position under which `conjunct` holds throughout the tile;
  // `difference` receives the conjunct as a canonical `difference >= 0`.
  std::optional<Expr> TileCondition(const Expr& conjunct, ir::canonical::Sum* difference_sum) {
    if (!ir::IsComparison(conjunct->kind) || conjunct->operands.size() != 2) return std::nullopt;
    const Expr& a = conjunct->operands[0];
    const Expr& b = conjunct->operands[1];
    if (a->dtype != ir::DataType::kInt64 || b->dtype != ir::DataType::kInt64) return std::nullopt;
    Expr difference;  // the conjunct is `difference >= 0`
    switch (conjunct->kind) {
      case ExprKind::kLT:
        difference = b - a - 1;
        break;
      case ExprKind::kLE:
        difference = b - a;
        break;
      case ExprKind::kGT:
        difference = a - b - 1;
        break;
      case ExprKind::kGE:
        difference = a - b;
        break;
      default:
        return std::nullopt;
    }
    ir::canonical::Sum sum = ir::canonical::ToSum(ir::Simplify(difference));
    *difference_sum = sum;
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
    Expr condition = ir::Simplify(ir::canonical::FromSum(position) >= ir::IntImm(-smallest));
    std::optional<SingleAtom> atom;
    if (position.terms.size() == 1 && position.terms[0].atoms.size() == 1) {
      const ir::canonical::Term& term = position.terms[0];
      atom = SingleAtom{ir::PrintExpr(term.atoms[0]), term.atoms[0], term.coeff,
                        position.constant + smallest};
    }
    single_atom_of_[ir::PrintExpr(condition)] = atom;
    return condition;
  }

  // The index of the tile condition, or kAlways, kPerElement when it is a constant.
  int AddCondition(Expr condition) {
    int64_t value = 0;
    if (ir::AsConstInt(condition, &value)) return value != 0 ? kAlways : kPerElement;
    std::string text = ir::PrintExpr(condition);
    auto [it, added] = seen_.emplace(text, static_cast<int>(tile_conditions_.size()));
    if (added) {
      tile_conditions_.push_back(std::move(condition));
      single_atoms_.push_back(single_atom_of_[text]);
    }
    return it->second;
  }

  std::unordered_map<const ir::ExprNode*, int64_t> inner_;  // tile loop variable -> extent
  std::unordered_set<const ir::ExprNode*> selects_;
  std::unordered_map<const ir::ExprNode*, std::vector<Conjunct>> conjuncts_;
  std::vector<Expr> tile_conditions_;
  std::vector<std::optional<SingleAtom>> single_atoms_;              // per tile condition
  std::map<std::string, int> seen_;                                  // tile condition text -> index
  std::map<std::string, std::optional<SingleAtom>> single_atom_of_;  // by condition text
};

// `difference >= 0` as a simplified condition.
Expr NonNegative(const ir::canonical::Sum& difference) {
  return ir::Simplify(ir::canonical::FromSum(difference) >= ir::IntImm(0));
}

// The tile body with each checked select's conjuncts rewritten by `rewrite`: the check to keep
// for a conjunct, or nothing to drop it. A select left with no conjunct is its load.
class RewriteChecks : public ir::StmtMutator {
 public:
  using Rewrite = std::function<std::optional<Expr>(const TileAnalysis::Conjunct&)>;
  RewriteChecks(const TileAnalysis& analysis, Rewrite rewrite)
      : analysis_(analysis), rewrite_(std::move(rewrite)) {}

  Expr VisitExpr(const Expr& e) override {
    if (!analysis_.selects().count(e.get())) return VisitChildren(e);
    Expr kept;
    for (const TileAnalysis::Conjunct& conjunct : analysis_.conjuncts(e.get())) {
      std::optional<Expr> check = rewrite_(conjunct);
      if (check) kept = kept.defined() ? (kept && *check) : *check;
    }
    Expr load = VisitExpr(e->operands[1]);
    if (!kept.defined()) return load;
    return ir::Select(kept, load, VisitExpr(e->operands[2]));
  }

 private:
  const TileAnalysis& analysis_;
  Rewrite rewrite_;
};

// The tile body where every tile condition holds: only the checks no position decides stay.
Stmt DropChecks(const TileAnalysis& analysis, const Stmt& body) {
  return RewriteChecks(analysis,
                       [](const TileAnalysis::Conjunct& conjunct) {
                         return conjunct.condition == TileAnalysis::kPerElement
                                    ? std::optional<Expr>(NonNegative(conjunct.difference))
                                    : std::nullopt;
                       })
      .VisitStmt(body);
}

// The tile body of an edge version of position atom `key`. With a `value`, the atom is that
// value: its conjuncts are rewritten with the value (their other terms are the tile's unrolled
// loop variables, so each copy's check is a constant for LLVM). Without one, every condition
// on the atom holds and its conjuncts go. The conjuncts on other atoms go too when
// `others_hold`, else they stay as they are; those no position decides always stay.
Stmt PinChecks(const TileAnalysis& analysis, const std::string& key, std::optional<int64_t> value,
               bool others_hold, const Stmt& body) {
  auto rewrite = [&](const TileAnalysis::Conjunct& conjunct) -> std::optional<Expr> {
    if (conjunct.condition == TileAnalysis::kAlways) return std::nullopt;
    if (conjunct.condition == TileAnalysis::kPerElement) return NonNegative(conjunct.difference);
    const auto& atom = analysis.single_atoms()[static_cast<size_t>(conjunct.condition)];
    if (!atom || atom->key != key) {
      if (others_hold) return std::nullopt;
      return NonNegative(conjunct.difference);
    }
    if (!value) return std::nullopt;
    ir::canonical::Sum pinned;
    pinned.dtype = conjunct.difference.dtype;
    pinned.constant = conjunct.difference.constant;
    for (const ir::canonical::Term& term : conjunct.difference.terms) {
      if (term.atoms.size() == 1 && ir::PrintExpr(term.atoms[0]) == key) {
        pinned.constant += term.coeff * *value;
      } else {
        ir::canonical::AddTerm(&pinned, term.coeff, term.atoms);
      }
    }
    return NonNegative(pinned);
  };
  return RewriteChecks(analysis, rewrite).VisitStmt(body);
}

// Most versions per position atom of each kind (pinned with the other conditions holding,
// pinned with the other checks kept).
constexpr int64_t kMaxEdgeVersions = 4;

// The versions of a tile after the interior, tried in order: (guard, body) pairs, the last one
// possibly without a guard (it then replaces the fully checked body).
struct EdgeVersionList {
  std::vector<std::pair<Expr, Stmt>> versions;
  bool interior_reachable = true;  // false when some atom fails on every tile
};

// The edge versions of a tile. Steps:
//   1. per position atom of the single-atom tile conditions: its range (from the tile loop's)
//      and the values at which one of its conditions fails;
//   2. the atoms by the share of tiles their versions would take (their failing values' share
//      times the other atoms' passing shares), largest first: each gets its versions while they
//      fit kMaxEdgeVersions and some tile would take them (none would where another atom never
//      passes: a 5x5 window on a 14-wide map whose column tiles all touch the border);
//   3. per failing value: the guard `atom == value && every other condition`, the body
//      PinChecks with the other conditions holding;
//   4. corners: for the atom that fails on the most tiles, per failing value the guard
//      `atom == value` and the body pinned with the other checks kept; after them every
//      condition on that atom holds, so the checked body drops its conjuncts.
EdgeVersionList EdgeVersions(const TileAnalysis& analysis, const ir::ForNode* tile,
                             const Stmt& body) {
  struct AtomValues {
    const TileAnalysis::SingleAtom* atom;
    std::vector<int64_t> failing;
    double passing_share = 1;  // of the atom's values (1 when its range is unknown)
  };
  const std::vector<Expr>& conditions = analysis.tile_conditions();
  const auto& single_atoms = analysis.single_atoms();
  ir::VarRanges ranges = {{tile->loop_var.get(), {0, tile->extent - 1}}};
  // 1. Ranges and failing values.
  std::vector<AtomValues> atoms;
  for (const auto& atom : single_atoms) {
    if (!atom || std::any_of(atoms.begin(), atoms.end(),
                             [&](const AtomValues& a) { return a.atom->key == atom->key; })) {
      continue;
    }
    AtomValues values{&*atom, {}, 1.0};
    ir::IntInterval range = ir::ConstIntBound(atom->atom, ranges);
    if (range.has_lower() && range.has_upper() && range.max - range.min <= 1 << 16) {
      for (int64_t v = range.min; v <= range.max; ++v) {
        bool fails = false;
        for (const auto& other : single_atoms) {
          fails =
              fails || (other && other->key == atom->key && other->coeff * v + other->constant < 0);
        }
        if (fails) values.failing.push_back(v);
      }
      auto count = static_cast<double>(range.max - range.min + 1);
      values.passing_share = 1 - static_cast<double>(values.failing.size()) / count;
    }
    atoms.push_back(std::move(values));
  }
  // 2. The order.
  auto share = [&](const AtomValues& pinned) {
    double taken = 1 - pinned.passing_share;
    for (const AtomValues& other : atoms) {
      if (&other != &pinned) taken *= other.passing_share;
    }
    return taken;
  };
  std::vector<const AtomValues*> order;
  for (const AtomValues& a : atoms) order.push_back(&a);
  std::stable_sort(order.begin(), order.end(),
                   [&](const AtomValues* a, const AtomValues* b) { return share(*a) > share(*b); });
  EdgeVersionList list;
  std::vector<std::pair<Expr, Stmt>>& versions = list.versions;
  for (const AtomValues& a : atoms) {
    if (a.passing_share <= 0) list.interior_reachable = false;
  }
  for (const AtomValues* candidate : order) {
    const AtomValues& pinned = *candidate;
    if (pinned.failing.empty() || share(pinned) <= 0 ||
        static_cast<int64_t>(versions.size() + pinned.failing.size()) > kMaxEdgeVersions) {
      continue;
    }
    // 3. The versions.
    Expr others;
    for (size_t d = 0; d < conditions.size(); ++d) {
      if (single_atoms[d] && single_atoms[d]->key == pinned.atom->key) continue;
      others = others.defined() ? (others && conditions[d]) : conditions[d];
    }
    for (int64_t v : pinned.failing) {
      Expr guard = pinned.atom->atom == ir::IntImm(v);
      if (others.defined()) guard = guard && others;
      versions.emplace_back(guard, PinChecks(analysis, pinned.atom->key, v, true, body));
    }
  }
  // 4. Corners.
  const AtomValues* corner = nullptr;
  for (const AtomValues& a : atoms) {
    if (!a.failing.empty() && static_cast<int64_t>(a.failing.size()) <= kMaxEdgeVersions &&
        (!corner || a.passing_share < corner->passing_share)) {
      corner = &a;
    }
  }
  bool other_conditions = false;
  for (const auto& atom : single_atoms) {
    other_conditions = other_conditions || !atom || (corner && atom->key != corner->atom->key);
  }
  if (corner && other_conditions) {
    for (int64_t v : corner->failing) {
      versions.emplace_back(corner->atom->atom == ir::IntImm(v),
                            PinChecks(analysis, corner->atom->key, v, false, body));
    }
    if (corner->passing_share > 0) {
      versions.emplace_back(Expr(),
                            PinChecks(analysis, corner->atom->key, std::nullopt, false, body));
    } else {
      versions.back().first = Expr();  // every tile has one of the failing values
    }
  }
  return list;
}

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
    Stmt interior = DropChecks(analysis, op->body);
    auto n = std::make_shared<ir::ForNode>(*op);
    n->body = interior;  // every check holds in every tile
    if (analysis.tile_conditions().empty()) return n;
    Expr all = analysis.tile_conditions()[0];
    for (size_t c = 1; c < analysis.tile_conditions().size(); ++c) {
      all = all && analysis.tile_conditions()[c];
    }
    // The edge versions, then the checked body.
    Stmt rest = op->body;
    EdgeVersionList list = EdgeVersions(analysis, op, op->body);
    std::vector<std::pair<Expr, Stmt>>& edges = list.versions;
    if (!edges.empty() && !edges.back().first.defined()) {
      rest = edges.back().second;
      edges.pop_back();
    }
    for (auto it = edges.rbegin(); it != edges.rend(); ++it) {
      rest = ir::MakeIfThenElse(it->first, it->second, rest);
    }
    n->body = list.interior_reachable ? ir::MakeIfThenElse(all, interior, rest) : rest;
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
