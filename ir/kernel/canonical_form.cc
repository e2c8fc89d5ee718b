#include "ir/kernel/canonical_form.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <numeric>

namespace tandem::ir::canonical {
namespace {

// Products of two sums with more term pairs than this stay unexpanded.
constexpr size_t kMaxExpandedPairs = 8;

bool SameAtoms(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  std::vector<bool> used(b.size(), false);
  for (const Expr& x : a) {
    bool found = false;
    for (size_t j = 0; j < b.size() && !found; ++j) {
      if (!used[j] && DeepEqual(x, b[j])) used[j] = found = true;
    }
    if (!found) return false;
  }
  return true;
}

int64_t CheckedNegate(int64_t a) {
  return CheckedMul(a, -1);
}

void CheckFits(int64_t value, DataType dtype) {
  IntInterval range = DataTypeRange(dtype);
  if (value < range.min || value > range.max) throw Overflow{};
}

// Multiplies `coeff`/`atoms` by the sum `s`, which must be a single term or kept whole.
void AppendFactor(const Sum& s, int64_t* coeff, std::vector<Expr>* atoms) {
  if (s.terms.size() == 1 && s.constant == 0) {
    *coeff = CheckedMul(*coeff, s.terms[0].coeff);
    atoms->insert(atoms->end(), s.terms[0].atoms.begin(), s.terms[0].atoms.end());
  } else {
    atoms->push_back(FromSum(s));
  }
}

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
        s->terms.erase(s->terms.begin() + std::max(i, j));
        s->terms.erase(s->terms.begin() + std::min(i, j));
        AddScaled(s, x, k);
        return true;
      }
    } else if (int64_t d = DivisorOf(*atom, ExprKind::kFloorDiv); d != 0 && k % d == 0) {
      // m*x - m*d*floordiv(x, d) -> m*floormod(x, d)
      int64_t m = -(k / d);
      Sum x = ToSum((*atom)->operands[0]);
      if (x.terms.empty()) continue;
      Sum without_x = *s;
      without_x.terms.erase(without_x.terms.begin() + i);
      AddScaled(&without_x, x, -m);
      if (without_x.terms.size() + x.terms.size() + 1 != s->terms.size()) continue;
      Expr mod = s->dtype == DataType::kInt64 ? DivideSum(ExprKind::kFloorMod, x, d, ranges)
                                              : FloorMod((*atom)->operands[0], IntImm(d, s->dtype));
      AddScaled(&without_x, ToSum(mod), m);
      *s = std::move(without_x);
      return true;
    }
  }
  return false;
}

}  // namespace

int CompareByDifference(ExprKind kind, const IntInterval& d) {
  switch (kind) {
    case ExprKind::kEQ:
      if (d.min == 0 && d.max == 0) return 1;
      return d.min > 0 || d.max < 0 ? 0 : -1;
    case ExprKind::kNE:
      if (d.min == 0 && d.max == 0) return 0;
      return d.min > 0 || d.max < 0 ? 1 : -1;
    case ExprKind::kLT:
      return d.max < 0 ? 1 : d.min >= 0 ? 0 : -1;
    case ExprKind::kLE:
      return d.max <= 0 ? 1 : d.min > 0 ? 0 : -1;
    case ExprKind::kGT:
      return d.min > 0 ? 1 : d.max <= 0 ? 0 : -1;
    case ExprKind::kGE:
      return d.min >= 0 ? 1 : d.max < 0 ? 0 : -1;
    default:
      return -1;
  }
}

int64_t CheckedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw Overflow{};
  return r;
}

int64_t CheckedMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw Overflow{};
  return r;
}

int64_t FloorDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModulo(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

bool DeepEqual(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  const ExprNode& x = *a;
  const ExprNode& y = *b;
  if (x.kind != y.kind || x.dtype != y.dtype || x.operands.size() != y.operands.size()) {
    return false;
  }
  switch (x.kind) {
    case ExprKind::kIntImm:
      return x.int_value == y.int_value;
    case ExprKind::kFloatImm:
      return std::bit_cast<uint64_t>(x.float_value) == std::bit_cast<uint64_t>(y.float_value);
    case ExprKind::kVar:
      return false;  // variables are equal only to themselves
    case ExprKind::kCall:
      if (x.name != y.name) return false;
      break;
    case ExprKind::kLoad:
      if (x.buffer != y.buffer) return false;
      break;
    default:
      break;
  }
  for (size_t i = 0; i < x.operands.size(); ++i) {
    if (!DeepEqual(x.operands[i], y.operands[i])) return false;
  }
  return true;
}

bool IsCanonicalType(DataType dtype) {
  return dtype == DataType::kInt64 || dtype == DataType::kInt32;
}

void AddTerm(Sum* sum, int64_t coeff, const std::vector<Expr>& atoms) {
  if (coeff == 0) return;
  for (auto it = sum->terms.begin(); it != sum->terms.end(); ++it) {
    if (!SameAtoms(it->atoms, atoms)) continue;
    it->coeff = CheckedAdd(it->coeff, coeff);
    if (it->coeff == 0) sum->terms.erase(it);
    return;
  }
  sum->terms.push_back(Term{coeff, atoms});
}

void AddScaled(Sum* sum, const Sum& other, int64_t scale) {
  for (const Term& t : other.terms) AddTerm(sum, CheckedMul(t.coeff, scale), t.atoms);
  sum->constant = CheckedAdd(sum->constant, CheckedMul(other.constant, scale));
}

Sum Multiply(const Sum& a, const Sum& b) {
  Sum r{a.dtype, {}, 0};
  if (a.terms.empty() || b.terms.empty()) {
    const Sum& scaled = a.terms.empty() ? b : a;
    AddScaled(&r, scaled, a.terms.empty() ? a.constant : b.constant);
    return r;
  }
  if (a.terms.size() * b.terms.size() > kMaxExpandedPairs) {
    int64_t coeff = 1;
    std::vector<Expr> atoms;
    AppendFactor(a, &coeff, &atoms);
    AppendFactor(b, &coeff, &atoms);
    AddTerm(&r, coeff, atoms);
    return r;
  }
  for (const Term& x : a.terms) {
    for (const Term& y : b.terms) {
      std::vector<Expr> atoms = x.atoms;
      atoms.insert(atoms.end(), y.atoms.begin(), y.atoms.end());
      AddTerm(&r, CheckedMul(x.coeff, y.coeff), atoms);
    }
  }
  for (const Term& x : a.terms) AddTerm(&r, CheckedMul(x.coeff, b.constant), x.atoms);
  for (const Term& y : b.terms) AddTerm(&r, CheckedMul(y.coeff, a.constant), y.atoms);
  r.constant = CheckedMul(a.constant, b.constant);
  return r;
}

bool SumsEqual(const Sum& a, const Sum& b) {
  Sum difference = a;
  AddScaled(&difference, b, -1);
  return difference.terms.empty() && difference.constant == 0;
}

Sum ToSum(const Expr& e) {
  Sum s{e->dtype, {}, 0};
  switch (e->kind) {
    case ExprKind::kIntImm:
      s.constant = e->int_value;
      break;
    case ExprKind::kAdd:
      s = ToSum(e->operands[0]);
      AddScaled(&s, ToSum(e->operands[1]), 1);
      break;
    case ExprKind::kSub:
      s = ToSum(e->operands[0]);
      AddScaled(&s, ToSum(e->operands[1]), -1);
      break;
    case ExprKind::kMul:
      s = Multiply(ToSum(e->operands[0]), ToSum(e->operands[1]));
      break;
    default:
      s.terms.push_back(Term{1, {e}});
      break;
  }
  return s;
}

Expr FromSum(const Sum& sum) {
  DataType dtype = sum.dtype;
  CheckFits(sum.constant, dtype);
  auto product = [&](const Term& t, int64_t coeff) {
    CheckFits(coeff, dtype);
    Expr p = t.atoms[0];
    for (size_t i = 1; i < t.atoms.size(); ++i) p = p * t.atoms[i];
    return coeff == 1 ? p : p * IntImm(coeff, dtype);
  };
  Expr result;
  for (const Term& t : sum.terms) {
    if (t.coeff > 0) result = result.defined() ? result + product(t, t.coeff) : product(t, t.coeff);
  }
  bool constant_used = false;
  for (const Term& t : sum.terms) {
    if (t.coeff > 0) continue;
    if (!result.defined() && sum.constant > 0) {
      result = IntImm(sum.constant, dtype);
      constant_used = true;
    }
    result = result.defined() ? result - product(t, CheckedNegate(t.coeff)) : product(t, t.coeff);
  }
  if (!result.defined()) return IntImm(sum.constant, dtype);
  if (!constant_used && sum.constant > 0) result = result + IntImm(sum.constant, dtype);
  if (!constant_used && sum.constant < 0) {
    int64_t magnitude = CheckedNegate(sum.constant);
    CheckFits(magnitude, dtype);
    result = result - IntImm(magnitude, dtype);
  }
  return result;
}

IntInterval SumBound(const Sum& sum, const VarRanges& ranges) {
  IntInterval result = IntInterval::Single(sum.constant);
  for (const Term& t : sum.terms) {
    IntInterval term = IntInterval::Single(t.coeff);
    for (const Expr& atom : t.atoms) term = IntervalMul(term, ConstIntBound(atom, ranges));
    result = IntervalAdd(result, term);
  }
  IntInterval range = DataTypeRange(sum.dtype);
  if (result.min < range.min || result.max > range.max) return range;
  return result;
}

Expr SimplifyDivision(ExprKind kind, const Expr& numerator, int64_t divisor,
                      const VarRanges& ranges) {
  return DivideSum(kind, ToSum(numerator), divisor, ranges);
}

void ApplyDivisionIdentities(Sum* sum, const VarRanges& ranges) {
  for (int round = 0; round < 8 && ApplyOneIdentity(sum, ranges); ++round) {
  }
}

}  // namespace tandem::ir::canonical
