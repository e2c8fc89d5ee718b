#include "ir/kernel/canonical_form.h"

#include <algorithm>
#include <bit>

namespace tandem::ir::canonical {
namespace {

// Products of two sums with more term pairs than this stay unexpanded.
constexpr size_t kMaxExpandedPairs = 8;

int64_t CheckedNegate(int64_t a) {
  return CheckedMul(a, -1);
}

void CheckFits(int64_t value, DataType dtype) {
  IntInterval range = DataTypeRange(dtype);
  if (value < range.min || value > range.max) throw Overflow{};
}

// Multiplies the monomial `coeff` * `atoms` by `s`: a single term is merged in, any other sum
// becomes one atom.
void AppendFactor(const Sum& s, int64_t* coeff, std::vector<Expr>* atoms) {
  if (s.terms.size() == 1 && s.constant == 0) {
    *coeff = CheckedMul(*coeff, s.terms[0].coeff);
    atoms->insert(atoms->end(), s.terms[0].atoms.begin(), s.terms[0].atoms.end());
  } else {
    atoms->push_back(FromSum(s));
  }
}

}  // namespace

bool SameAtoms(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  if (a.size() == 1) return DeepEqual(a[0], b[0]);
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

}  // namespace tandem::ir::canonical
