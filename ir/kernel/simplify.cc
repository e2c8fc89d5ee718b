#include "ir/kernel/simplify.h"

#include <optional>
#include <utility>

#include "ir/kernel/canonical_form.h"
#include "ir/kernel/constant_fold.h"
#include "ir/kernel/functor.h"

namespace tandem::ir {
namespace {

using canonical::DeepEqual;
using canonical::Overflow;
using canonical::Sum;

// Passes of the one-pass rewrite before giving up on reaching a fixed point.
constexpr int kMaxPasses = 8;

Expr BoolConst(bool value) {
  return IntImm(value ? 1 : 0, DataType::kBool);
}

// 1 when `e` is a non-zero constant, 0 when it is zero, -1 when it is not a constant.
int KnownTruth(const Expr& e) {
  int64_t v = 0;
  if (!AsConstInt(e, &v)) return -1;
  return v != 0 ? 1 : 0;
}

bool IsFloatConst(const Expr& e, double value) {
  return e->kind == ExprKind::kFloatImm && e->float_value == value;
}

bool IsConst(const Expr& e) {
  return e->kind == ExprKind::kIntImm || e->kind == ExprKind::kFloatImm;
}

// `e` with new operands (the same node when none changed).
Expr WithOperands(const Expr& e, std::vector<Expr> operands) {
  bool same = true;
  for (size_t i = 0; i < operands.size(); ++i) same = same && operands[i].same_as(e->operands[i]);
  if (same) return e;
  ExprNode n = *e;
  n.operands = std::move(operands);
  return Expr(std::make_shared<const ExprNode>(std::move(n)));
}

ExprKind Negated(ExprKind kind) {
  switch (kind) {
    case ExprKind::kEQ:
      return ExprKind::kNE;
    case ExprKind::kNE:
      return ExprKind::kEQ;
    case ExprKind::kLT:
      return ExprKind::kGE;
    case ExprKind::kLE:
      return ExprKind::kGT;
    case ExprKind::kGT:
      return ExprKind::kLE;
    default:
      return ExprKind::kLT;  // kGE
  }
}

// The comparison `b kind' a` that means `a kind b`.
ExprKind Mirrored(ExprKind kind) {
  switch (kind) {
    case ExprKind::kLT:
      return ExprKind::kGT;
    case ExprKind::kLE:
      return ExprKind::kGE;
    case ExprKind::kGT:
      return ExprKind::kLT;
    case ExprKind::kGE:
      return ExprKind::kLE;
    default:
      return kind;
  }
}

class Simplifier : public StmtMutator {
 public:
  explicit Simplifier(const VarRanges& ranges) : ranges_(ranges) {}

  // Rewrites until a fixed point; returns `e` itself when nothing changes.
  Expr VisitExpr(const Expr& e) override {
    if (!e.defined()) return e;
    Expr current = e;
    for (int pass = 0; pass < kMaxPasses; ++pass) {
      Expr next = Rewrite(current);
      if (next.same_as(current) || DeepEqual(next, current)) break;
      current = next;
    }
    return DeepEqual(current, e) ? e : current;
  }

 protected:
  Stmt VisitFor(const ForNode* op, const Stmt& s) override {
    std::vector<Saved> saved;
    if (op->extent > 0) Narrow(op->loop_var, {0, op->extent - 1}, &saved);
    Stmt result = StmtMutator::VisitFor(op, s);
    Restore(&saved);
    return result;
  }

  Block VisitBlock(const Block& block) override {
    std::vector<Saved> saved;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.extent > 0) Narrow(iv.var, {0, iv.extent - 1}, &saved);
    }
    Block result = StmtMutator::VisitBlock(block);
    Restore(&saved);
    return result;
  }

  Stmt VisitIfThenElse(const IfThenElseNode* op, const Stmt& s) override {
    Expr condition = VisitExpr(op->condition);
    if (int truth = KnownTruth(condition); truth >= 0) {
      const Stmt& taken = truth == 1 ? op->then_case : op->else_case;
      return taken ? VisitStmt(taken) : MakeSeq({});
    }
    std::vector<Saved> saved;
    Refine(condition, true, &saved);
    Stmt then_case = VisitStmt(op->then_case);
    Restore(&saved);
    Refine(condition, false, &saved);
    Stmt else_case = VisitStmt(op->else_case);
    Restore(&saved);
    if (condition.same_as(op->condition) && then_case == op->then_case &&
        else_case == op->else_case) {
      return s;
    }
    return MakeIfThenElse(std::move(condition), std::move(then_case), std::move(else_case));
  }

 private:
  struct Saved {
    const ExprNode* var;
    std::optional<IntInterval> range;
  };

  // Intersects the range of `var` with `range` (ignored when that would be empty).
  void Narrow(const Var& var, IntInterval range, std::vector<Saved>* saved) {
    auto it = ranges_.find(var.get());
    std::optional<IntInterval> old;
    if (it != ranges_.end()) old = it->second;
    IntInterval current = old ? *old : DataTypeRange(var->dtype);
    IntInterval narrowed{std::max(current.min, range.min), std::min(current.max, range.max)};
    if (narrowed.min > narrowed.max) return;
    saved->push_back({var.get(), old});
    ranges_[var.get()] = narrowed;
  }

  void Restore(std::vector<Saved>* saved) {
    for (auto it = saved->rbegin(); it != saved->rend(); ++it) {
      if (it->range) {
        ranges_[it->var] = *it->range;
      } else {
        ranges_.erase(it->var);
      }
    }
    saved->clear();
  }

  // Narrows variable ranges by what `condition` == `holds` implies for comparisons of an
  // integer variable with a constant (through && when it holds, || when it fails, and !).
  void Refine(const Expr& condition, bool holds, std::vector<Saved>* saved) {
    ExprKind kind = condition->kind;
    if ((kind == ExprKind::kAnd && holds) || (kind == ExprKind::kOr && !holds)) {
      Refine(condition->operands[0], holds, saved);
      Refine(condition->operands[1], holds, saved);
      return;
    }
    if (kind == ExprKind::kNot) return Refine(condition->operands[0], !holds, saved);
    if (!IsComparison(kind)) return;
    Expr var = condition->operands[0];
    int64_t c = 0;
    if (!AsConstInt(condition->operands[1], &c)) {
      if (!AsConstInt(condition->operands[0], &c)) return;
      var = condition->operands[1];
      kind = Mirrored(kind);
    }
    if (var->kind != ExprKind::kVar || IsFloat(var->dtype)) return;
    if (!holds) kind = Negated(kind);
    if (c == IntInterval::kNegInf || c == IntInterval::kPosInf) return;
    switch (kind) {
      case ExprKind::kEQ:
        return Narrow(var, {c, c}, saved);
      case ExprKind::kLT:
        return Narrow(var, {IntInterval::kNegInf, c - 1}, saved);
      case ExprKind::kLE:
        return Narrow(var, {IntInterval::kNegInf, c}, saved);
      case ExprKind::kGT:
        return Narrow(var, {c + 1, IntInterval::kPosInf}, saved);
      case ExprKind::kGE:
        return Narrow(var, {c, IntInterval::kPosInf}, saved);
      default:
        return;
    }
  }

  IntInterval Bound(const Expr& e) const { return ConstIntBound(e, ranges_); }

  // Bounds of a - b for i64 operands, from their canonical difference (so common terms cancel).
  std::optional<IntInterval> DifferenceBound(const Expr& a, const Expr& b) const {
    if (a->dtype != DataType::kInt64) return std::nullopt;
    try {
      Sum d = canonical::ToSum(a);
      canonical::AddScaled(&d, canonical::ToSum(b), -1);
      canonical::ApplyDivisionIdentities(&d, ranges_);
      return canonical::SumBound(d, ranges_);
    } catch (const Overflow&) {
      return std::nullopt;
    }
  }

  // One bottom-up pass.
  Expr Rewrite(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
      case ExprKind::kVar:  // never replaced, even when its range is a single value
        return e;
      case ExprKind::kSelect:
        return RewriteSelect(e);
      case ExprKind::kCast: {
        Expr value = Rewrite(e->operands[0]);
        if (Expr folded = FoldCast(value, e->dtype); folded.defined()) return folded;
        return WithOperands(e, {value});
      }
      case ExprKind::kNot:
        return RewriteNot(e, Rewrite(e->operands[0]));
      case ExprKind::kLoad:
      case ExprKind::kCall: {
        std::vector<Expr> operands;
        for (const Expr& o : e->operands) operands.push_back(Rewrite(o));
        return WithOperands(e, std::move(operands));
      }
      case ExprKind::kAdd:
      case ExprKind::kSub:
      case ExprKind::kMul:
        if (canonical::IsCanonicalType(e->dtype)) return RewriteSum(e);
        break;
      default:
        break;
    }
    Expr a = Rewrite(e->operands[0]);
    Expr b = Rewrite(e->operands[1]);
    if (IsConst(a) && IsConst(b)) {
      if (Expr folded = FoldBinary(e->kind, a, b, e->dtype); folded.defined()) return folded;
    }
    switch (e->kind) {
      case ExprKind::kAdd:
      case ExprKind::kSub:
      case ExprKind::kMul:
      case ExprKind::kDiv:
        return RewriteArithmetic(e, a, b);
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
        return RewriteDivision(e, a, b);
      case ExprKind::kMin:
      case ExprKind::kMax:
        return RewriteMinMax(e, a, b);
      case ExprKind::kAnd:
      case ExprKind::kOr:
        return RewriteLogic(e, a, b);
      default:
        return RewriteComparison(e, a, b);
    }
  }

  // A tree of +, -, * of a canonical type, collected into one canonical sum at once.
  Expr RewriteSum(const Expr& e) {
    try {
      Sum sum = Collect(e);
      canonical::ApplyDivisionIdentities(&sum, ranges_);
      return canonical::FromSum(sum);
    } catch (const Overflow&) {
      // Keep this node; its operands may still simplify on their own.
      Expr a = Rewrite(e->operands[0]);
      Expr b = Rewrite(e->operands[1]);
      if (Expr folded = FoldBinary(e->kind, a, b, e->dtype); folded.defined()) return folded;
      return WithOperands(e, {a, b});
    }
  }

  Sum Collect(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kAdd:
      case ExprKind::kSub: {
        Sum sum = Collect(e->operands[0]);
        canonical::AddScaled(&sum, Collect(e->operands[1]), e->kind == ExprKind::kAdd ? 1 : -1);
        return sum;
      }
      case ExprKind::kMul: {
        // Factors are whole sums: apply the identities before expanding the product.
        Sum a = Collect(e->operands[0]), b = Collect(e->operands[1]);
        canonical::ApplyDivisionIdentities(&a, ranges_);
        canonical::ApplyDivisionIdentities(&b, ranges_);
        return canonical::Multiply(a, b);
      }
      default:
        return canonical::ToSum(Rewrite(e));
    }
  }

  Expr RewriteArithmetic(const Expr& e, const Expr& a, const Expr& b) {
    ExprKind kind = e->kind;
    DataType t = e->dtype;
    if (IsFloat(t)) {
      if (kind == ExprKind::kMul && IsFloatConst(b, 1.0)) return a;
      if (kind == ExprKind::kMul && IsFloatConst(a, 1.0)) return b;
      if ((kind == ExprKind::kAdd || kind == ExprKind::kSub) && IsFloatConst(b, 0.0)) return a;
      if (kind == ExprKind::kDiv && IsFloatConst(b, 1.0)) return a;
      return WithOperands(e, {a, b});
    }
    if (kind == ExprKind::kDiv || t == DataType::kBool) return WithOperands(e, {a, b});
    // Narrow integer types (canonical ones go through RewriteSum): only identities that hold
    // under wrap-around.
    if ((kind == ExprKind::kAdd || kind == ExprKind::kSub) && b->is_const_int(0)) return a;
    if (kind == ExprKind::kAdd && a->is_const_int(0)) return b;
    if (kind == ExprKind::kMul && b->is_const_int(1)) return a;
    if (kind == ExprKind::kMul && a->is_const_int(1)) return b;
    if (kind == ExprKind::kMul && (a->is_const_int(0) || b->is_const_int(0))) return IntImm(0, t);
    if (kind == ExprKind::kSub && DeepEqual(a, b)) return IntImm(0, t);
    return WithOperands(e, {a, b});
  }

  Expr RewriteDivision(const Expr& e, const Expr& a, const Expr& b) {
    DataType t = e->dtype;
    bool is_div = e->kind == ExprKind::kFloorDiv;
    int64_t c = 0;
    if (IsFloat(t) || t == DataType::kBool || !AsConstInt(b, &c) || c <= 0) {
      return WithOperands(e, {a, b});
    }
    if (c == 1) return is_div ? a : IntImm(0, t);
    if (t == DataType::kInt64) {
      try {
        return canonical::SimplifyDivision(e->kind, a, c, ranges_);
      } catch (const Overflow&) {
        return WithOperands(e, {a, b});
      }
    }
    IntInterval bound = Bound(a);
    if (bound.min >= 0 && bound.max < c) return is_div ? IntImm(0, t) : a;
    int64_t inner = 0;
    if (!is_div && a->kind == ExprKind::kFloorMod && AsConstInt(a->operands[1], &inner) &&
        inner > 0 && inner % c == 0) {
      return WithOperands(e, {a->operands[0], b});
    }
    return WithOperands(e, {a, b});
  }

  Expr RewriteMinMax(const Expr& e, const Expr& a, const Expr& b) {
    if (DeepEqual(a, b)) return a;
    if (IsFloat(e->dtype)) return WithOperands(e, {a, b});
    bool is_min = e->kind == ExprKind::kMin;
    IntInterval ba = Bound(a), bb = Bound(b);
    bool a_le_b = ba.has_upper() && bb.has_lower() && ba.max <= bb.min;
    bool b_le_a = bb.has_upper() && ba.has_lower() && bb.max <= ba.min;
    if (!a_le_b && !b_le_a) {
      if (std::optional<IntInterval> d = DifferenceBound(a, b)) {
        a_le_b = d->max <= 0;
        b_le_a = d->min >= 0;
      }
    }
    if (a_le_b) return is_min ? a : b;
    if (b_le_a) return is_min ? b : a;
    return WithOperands(e, {a, b});
  }

  Expr RewriteComparison(const Expr& e, const Expr& a, const Expr& b) {
    if (IsFloat(a->dtype)) return WithOperands(e, {a, b});
    ExprKind kind = e->kind;
    if (DeepEqual(a, b)) {
      return BoolConst(kind == ExprKind::kEQ || kind == ExprKind::kLE || kind == ExprKind::kGE);
    }
    int truth = -1;
    if (std::optional<IntInterval> d = DifferenceBound(a, b)) {
      truth = canonical::CompareByDifference(kind, *d);
    }
    if (truth < 0) truth = canonical::CompareByDifference(kind, IntervalSub(Bound(a), Bound(b)));
    if (truth >= 0) return BoolConst(truth == 1);
    return WithOperands(e, {a, b});
  }

  Expr RewriteLogic(const Expr& e, const Expr& a, const Expr& b) {
    bool is_and = e->kind == ExprKind::kAnd;
    int ta = KnownTruth(a), tb = KnownTruth(b);
    // The absorbing constant decides; the neutral one leaves the other (when it is a bool).
    int absorbing = is_and ? 0 : 1;
    if (ta == absorbing || tb == absorbing) return BoolConst(absorbing == 1);
    if (ta >= 0 && tb >= 0) return BoolConst(is_and);
    if (ta >= 0 && b->dtype == DataType::kBool) return b;
    if (tb >= 0 && a->dtype == DataType::kBool) return a;
    if (DeepEqual(a, b) && a->dtype == DataType::kBool) return a;
    return WithOperands(e, {a, b});
  }

  Expr RewriteNot(const Expr& e, const Expr& a) {
    if (int truth = KnownTruth(a); truth >= 0) return BoolConst(truth == 0);
    if (a->kind == ExprKind::kNot && a->operands[0]->dtype == DataType::kBool) {
      return a->operands[0];
    }
    if (IsComparison(a->kind) && !IsFloat(a->operands[0]->dtype)) {
      return Binary(Negated(a->kind), a->operands[0], a->operands[1]);
    }
    return WithOperands(e, {a});
  }

  Expr RewriteSelect(const Expr& e) {
    Expr condition = Rewrite(e->operands[0]);
    if (int truth = KnownTruth(condition); truth >= 0) {
      return Rewrite(e->operands[truth == 1 ? 1 : 2]);
    }
    Expr a = Rewrite(e->operands[1]);
    Expr b = Rewrite(e->operands[2]);
    if (DeepEqual(a, b)) return a;
    return WithOperands(e, {condition, a, b});
  }

  VarRanges ranges_;
};

}  // namespace

Expr Simplify(const Expr& e, const VarRanges& ranges) {
  Simplifier simplifier(ranges);
  return simplifier.VisitExpr(e);
}

Stmt Simplify(const Stmt& s, const VarRanges& ranges) {
  Simplifier simplifier(ranges);
  return simplifier.VisitStmt(s);
}

}  // namespace tandem::ir
