// Internal to the kernel-IR simplifier (ir/kernel/simplify.h): folding of operations on
// constants. Not a public API.
#pragma once

#include "ir/kernel/expr.h"

namespace tandem::ir {

// The constant value of the binary operation `kind` on the constants `a` and `b` (IntImm or
// FloatImm) with result type `dtype`, or an undefined Expr when it must stay as it is: integer
// division by zero, i64 overflow, bool arithmetic, anything on f16, float division by zero,
// min/max of NaN. Narrower integer types wrap like generated code; f32 is computed in f32.
// Integer kDiv truncates toward zero; float floordiv is floor(a / b) and floormod
// a - floor(a / b) * b (the semantics of the reference interpreter and the LLVM backend).
Expr FoldBinary(ExprKind kind, const Expr& a, const Expr& b, DataType dtype);

// The constant `value` converted to `dtype`, or an undefined Expr when `value` is not a constant
// or the conversion is not folded (to or from f16, float to integer out of range or NaN). Float
// to integer truncates toward zero.
Expr FoldCast(const Expr& value, DataType dtype);

}  // namespace tandem::ir
