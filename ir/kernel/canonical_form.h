// Internal to the kernel-IR simplifier (ir/kernel/simplify.h): the canonical sum-of-products
// form of integer expressions and the floordiv/floormod rules built on it. Not a public API.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/kernel/bound.h"
#include "ir/kernel/expr.h"

namespace tandem::ir::canonical {

// Thrown when a coefficient or constant would overflow; the simplifier then keeps the
// expression it was working on as it is.
struct Overflow {};

int64_t CheckedAdd(int64_t a, int64_t b);
int64_t CheckedMul(int64_t a, int64_t b);
// Floor division and modulo; b != 0 and not (a == INT64_MIN and b == -1).
int64_t FloorDivide(int64_t a, int64_t b);
int64_t FloorModulo(int64_t a, int64_t b);

// Whether the comparison `kind` of a and b holds (1), fails (0) or is unknown (-1) when a - b
// lies in `difference`.
int CompareByDifference(ExprKind kind, const IntInterval& difference);

// Structural equality: variables and buffers by identity, everything else by value.
bool DeepEqual(const Expr& a, const Expr& b);

// coeff * atoms[0] * atoms[1] * ...; atoms are simplified expressions that are not +, -, * or
// constants (a product of two sums too large to expand is kept as a product of the two sums).
struct Term {
  int64_t coeff = 0;
  std::vector<Expr> atoms;
};

// sum(terms) + constant. No two terms have the same atoms (as multisets), no coefficient is 0;
// terms keep the order in which they first appeared.
struct Sum {
  DataType dtype = DataType::kInt64;
  std::vector<Term> terms;
  int64_t constant = 0;
};

// Types the canonical form applies to: the ring identities it uses hold under wrap-around.
bool IsCanonicalType(DataType dtype);

// Whether two products have the same atoms, as multisets.
bool SameAtoms(const std::vector<Expr>& a, const std::vector<Expr>& b);
void AddTerm(Sum* sum, int64_t coeff, const std::vector<Expr>& atoms);
// sum += other * scale.
void AddScaled(Sum* sum, const Sum& other, int64_t scale);
Sum Multiply(const Sum& a, const Sum& b);
bool SumsEqual(const Sum& a, const Sum& b);

// The sum of a simplified expression of a canonical type (descends +, -, * and constants).
Sum ToSum(const Expr& e);
// The expression of a sum: positive terms first, then subtracted negative terms, then the
// constant. Throws Overflow when a coefficient does not fit the dtype.
Expr FromSum(const Sum& sum);

// Bounds of a sum from the bounds of its atoms.
IntInterval SumBound(const Sum& sum, const VarRanges& ranges);

// The division rules (ir/kernel/division_rules.cc).
// floordiv/floormod (`kind`) of a simplified i64 numerator by a constant divisor c > 1, by:
//   nesting: floordiv(floordiv(x, a) + k, c) = floordiv(x + k*a, a*c), and
//     floormod(floormod(x, a), c) = floormod(x, c) when c divides a;
//   splitting: numerator = q*c + r (the terms whose coefficient c divides go to q; the constant
//     of r is put in [0, c)); floordiv = q + floordiv(r, c), floormod = floormod(r, c);
//   bounds: r within one [m*c, (m+1)*c) gives floordiv(r, c) = m, floormod(r, c) = r - m*c;
//   common factors: r = g*a + s with g dividing c and s in [0, g) gives floordiv(r, c) =
//     floordiv(a, c/g) and floormod(r, c) = floormod(a, c/g)*g + s.
Expr SimplifyDivision(ExprKind kind, const Expr& numerator, int64_t divisor,
                      const VarRanges& ranges);

// Rewrites `k*c*floordiv(x, c) + k*floormod(x, c)` to `k*x` and `k*x - k*c*floordiv(x, c)` to
// `k*floormod(x, c)` inside a sum.
void ApplyDivisionIdentities(Sum* sum, const VarRanges& ranges);

}  // namespace tandem::ir::canonical
