// Integer bound analysis of kernel IR expressions.
//
// ConstIntBound gives a conservative inclusive interval for an integer (or bool) expression
// given the ranges of its variables: every value the expression takes for an assignment of the
// variables within their ranges lies in the interval. Loads, calls, float values and variables
// without a known range are bounded only by their data type. Interval arithmetic is exact in
// 128 bits and saturates to "unbounded", so it never overflows.
//
// Integer arithmetic on i64 is assumed not to overflow (it is index arithmetic); narrower
// integer types wrap, and their bounds are the type's full range whenever a wrap is possible.
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>

#include "ir/kernel/expr.h"

namespace tandem::ir {

// An inclusive integer interval [min, max]. The int64 limits stand for "unbounded" on that side.
struct IntInterval {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

  int64_t min = kNegInf;
  int64_t max = kPosInf;

  static IntInterval Everything() { return {}; }
  static IntInterval Single(int64_t value) { return {value, value}; }

  bool has_lower() const { return min != kNegInf; }
  bool has_upper() const { return max != kPosInf; }
  // A single known value.
  bool is_const() const { return min == max && has_lower() && has_upper(); }
  bool contains(int64_t value) const { return min <= value && value <= max; }
  bool operator==(const IntInterval& other) const = default;
};

// Known ranges of variables, keyed by the identity of the Var (its ExprNode*).
using VarRanges = std::unordered_map<const ExprNode*, IntInterval>;

// Interval arithmetic (results saturate to unbounded). Division and modulo use floor semantics;
// a divisor interval that contains 0 gives Everything.
IntInterval IntervalAdd(const IntInterval& a, const IntInterval& b);
IntInterval IntervalSub(const IntInterval& a, const IntInterval& b);
IntInterval IntervalMul(const IntInterval& a, const IntInterval& b);
IntInterval IntervalFloorDiv(const IntInterval& a, const IntInterval& b);
IntInterval IntervalFloorMod(const IntInterval& a, const IntInterval& b);
// The smallest interval holding both.
IntInterval IntervalUnion(const IntInterval& a, const IntInterval& b);

// The values an integer type can hold (bool: [0, 1]; i64 and floats: Everything).
IntInterval DataTypeRange(DataType dtype);

// Conservative bounds of an integer or bool expression (see the file comment).
IntInterval ConstIntBound(const Expr& e, const VarRanges& ranges);

// True when `condition` (a bool, or an integer read as "non-zero") holds for every assignment of
// the variables within `ranges`. False means "could not prove", not "is false".
bool CanProve(const Expr& condition, const VarRanges& ranges);

}  // namespace tandem::ir
