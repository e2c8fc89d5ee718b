#include "ir/kernel/canonical_form.h"

#include <algorithm>
#include <numeric>

// The floordiv/floormod rules of the canonical form (see canonical_form.h).
namespace tandem::ir::canonical {
namespace {

// The divisor when `e` is floordiv/floormod (`kind`) by a positive constant, else 0.
int64_t DivisorOf(const Expr& e, ExprKind kind) {
  int64_t c = 0;
  if (e->kind != kind || !AsConstInt(e->operands[1], &c) || c <= 0) return 0;
  return c;
}

// The single atom of a term with exactly one atom, else null.
const Expr* SingleAtom(const Term& t) {
  return t.atoms.size() == 1 ? &t.atoms[0] : nullptr;
}

Expr DivideSum(ExprKind kind, const Sum& s, int64_t c, const VarRanges& ranges);

// Rule 1 of DivideSum: floordiv(floordiv(x, a) + k, c) -> floordiv(x + k*a, a*c), and
// floormod(m*floormod(x, a) + ..., c) -> floormod(m*x + ..., c) when c divides a.
bool TryNested(ExprKind kind, const Sum& s, int64_t c, const VarRanges& ranges, Expr* out) {
  if (kind == ExprKind::kFloorDiv) {
    if (s.terms.size() != 1 || s.terms[0].coeff != 1 || !SingleAtom(s.terms[0])) return false;
    const Expr& inner = *SingleAtom(s.terms[0]);
    int64_t a = DivisorOf(inner, ExprKind::kFloorDiv);
    if (a == 0) return false;
    Sum x = ToSum(inner->operands[0]);
    x.constant = CheckedAdd(x.constant, CheckedMul(s.constant, a));
    *out = DivideSum(kind, x, CheckedMul(a, c), ranges);
    return true;
  }
  Sum replaced{s.dtype, {}, s.constant};
  bool changed = false;
  for (const Term& t : s.terms) {
    const Expr* atom = SingleAtom(t);
    int64_t a = atom ? DivisorOf(*atom, ExprKind::kFloorMod) : 0;
    if (a != 0 && a % c == 0) {
      AddScaled(&replaced, ToSum((*atom)->operands[0]), t.coeff);
      changed = true;
    } else {
      AddTerm(&replaced, t.coeff, t.atoms);
    }
  }
  if (!changed) return false;
  *out = DivideSum(kind, replaced, c, ranges);
  return true;
}

// Rule 3 of DivideSum: with rest = g*A + r and r in [0, g) for a g dividing c,
// floordiv(rest, c) = floordiv(A, c/g) and floormod(rest, c) = floormod(A, c/g)*g + r.
bool TryCommonFactor(ExprKind kind, const Sum& rest, int64_t c, const VarRanges& ranges, Sum* out) {
  std::vector<int64_t> factors;
  for (const Term& t : rest.terms) {
    if (t.coeff == IntInterval::kNegInf) continue;
    int64_t g = std::gcd(t.coeff, c);
    if (g > 1 && std::find(factors.begin(), factors.end(), g) == factors.end()) {
      factors.push_back(g);
    }
  }
  std::sort(factors.begin(), factors.end(), std::greater<>());
  for (int64_t g : factors) {
    Sum scaled{rest.dtype, {}, rest.constant / g};
    Sum small{rest.dtype, {}, rest.constant % g};
    for (const Term& t : rest.terms) {
      if (t.coeff % g == 0) {
        AddTerm(&scaled, t.coeff / g, t.atoms);
      } else {
        AddTerm(&small, t.coeff, t.atoms);
      }
    }
    IntInterval b = SumBound(small, ranges);
    if (b.min < 0 || b.max >= g) continue;
    Sum inner = ToSum(DivideSum(kind, scaled, c / g, ranges));
    if (kind == ExprKind::kFloorDiv) {
      AddScaled(out, inner, 1);
    } else {
      AddScaled(out, inner, g);
      AddScaled(out, small, 1);
    }
    return true;
  }
  return false;
}

// floordiv/floormod of the sum `s` (i64) by c > 0.
Expr DivideSum(ExprKind kind, const Sum& s, int64_t c, const VarRanges& ranges) {
  bool is_div = kind == ExprKind::kFloorDiv;
  if (c == 1) return is_div ? FromSum(s) : IntImm(0, s.dtype);
  Expr nested;
  if (TryNested(kind, s, c, ranges, &nested)) return nested;
  // Rule 2: s = quotient*c + rest, with the constant of rest in [0, c).
  Sum quotient{s.dtype, {}, FloorDivide(s.constant, c)};
  Sum rest{s.dtype, {}, FloorModulo(s.constant, c)};
  for (const Term& t : s.terms) {
    if (t.coeff % c == 0) {
      AddTerm(&quotient, t.coeff / c, t.atoms);
    } else {
      AddTerm(&rest, t.coeff, t.atoms);
    }
  }
  IntInterval b = SumBound(rest, ranges);
  if (b.has_lower() && b.has_upper()) {
    int64_t block = FloorDivide(b.min, c);
    if (block == FloorDivide(b.max, c)) {
      if (is_div) {
        quotient.constant = CheckedAdd(quotient.constant, block);
        return FromSum(quotient);
      }
      rest.constant = CheckedAdd(rest.constant, CheckedMul(-block, c));
      return FromSum(rest);
    }
  }
  Sum result = is_div ? quotient : Sum{s.dtype, {}, 0};
  if (!TryCommonFactor(kind, rest, c, ranges, &result)) {
    AddTerm(&result, 1, {Binary(kind, FromSum(rest), IntImm(c, s.dtype))});
  }
  return FromSum(result);
}

// `s` without the terms at `removed`, with `scale * insert` put where the first of them was
// (so terms keep their order of first appearance).
Sum ReplaceTerms(const Sum& s, const std::vector<size_t>& removed, const Sum& insert,
                 int64_t scale) {
  size_t first = *std::min_element(removed.begin(), removed.end());
  Sum result{s.dtype, {}, CheckedAdd(s.constant, CheckedMul(insert.constant, scale))};
  for (size_t i = 0; i < s.terms.size(); ++i) {
    if (i == first) {
      for (const Term& t : insert.terms) AddTerm(&result, CheckedMul(t.coeff, scale), t.atoms);
    }
    if (std::find(removed.begin(), removed.end(), i) == removed.end()) {
      AddTerm(&result, s.terms[i].coeff, s.terms[i].atoms);
    }
  }
  return result;
}

// The index of the term of `s` with `atoms` and coefficient `coeff`, or -1.
int64_t FindTerm(const Sum& s, const std::vector<Expr>& atoms, int64_t coeff) {
  for (size_t i = 0; i < s.terms.size(); ++i) {
    if (s.terms[i].coeff == coeff && SameAtoms(s.terms[i].atoms, atoms)) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// One application of an identity of ApplyDivisionIdentities; false when none applies.
bool ApplyOneIdentity(Sum* s, const VarRanges& ranges) {
  for (size_t i = 0; i < s->terms.size(); ++i) {
    const Expr* atom = SingleAtom(s->terms[i]);
    if (!atom) continue;
    int64_t k = s->terms[i].coeff;
    if (int64_t c = DivisorOf(*atom, ExprKind::kFloorMod)) {
      // k*c*floordiv(x, c) + k*floormod(x, c) -> k*x
      Sum mod_numerator = ToSum((*atom)->operands[0]);
      for (size_t j = 0; j < s->terms.size(); ++j) {
        const Expr* other = SingleAtom(s->terms[j]);
        if (!other || DivisorOf(*other, ExprKind::kFloorDiv) != c) continue;
        int64_t expected = 0;
        if (__builtin_mul_overflow(k, c, &expected) || s->terms[j].coeff != expected) continue;
        Sum x = ToSum((*other)->operands[0]);
        if (!SumsEqual(x, mod_numerator)) continue;
        *s = ReplaceTerms(*s, {i, j}, x, k);
        return true;
      }
    } else if (int64_t d = DivisorOf(*atom, ExprKind::kFloorDiv); d != 0 && k % d == 0) {
      // m*x - m*d*floordiv(x, d) -> m*floormod(x, d), when every term of m*x is in the sum.
      int64_t m = -(k / d);
      Sum x = ToSum((*atom)->operands[0]);
      if (x.terms.empty()) continue;
      std::vector<size_t> removed = {i};
      for (const Term& t : x.terms) {
        int64_t found = FindTerm(*s, t.atoms, CheckedMul(t.coeff, m));
        if (found < 0) break;
        removed.push_back(static_cast<size_t>(found));
      }
      if (removed.size() != x.terms.size() + 1) continue;
      Expr mod = s->dtype == DataType::kInt64 ? DivideSum(ExprKind::kFloorMod, x, d, ranges)
                                              : FloorMod((*atom)->operands[0], IntImm(d, s->dtype));
      Sum replaced = ReplaceTerms(*s, removed, ToSum(mod), m);
      replaced.constant = CheckedAdd(replaced.constant, CheckedMul(x.constant, -m));
      *s = std::move(replaced);
      return true;
    }
  }
  return false;
}

}  // namespace

Expr SimplifyDivision(ExprKind kind, const Expr& numerator, int64_t divisor,
                      const VarRanges& ranges) {
  return DivideSum(kind, ToSum(numerator), divisor, ranges);
}

void ApplyDivisionIdentities(Sum* sum, const VarRanges& ranges) {
  for (int round = 0; round < 8 && ApplyOneIdentity(sum, ranges); ++round) {
  }
}

}  // namespace tandem::ir::canonical
