// Arithmetic simplification of kernel IR.
//
// Simplify rewrites expressions into a canonical, simpler form that is equal to the input for
// every assignment of the variables within the given ranges. What it does:
//   - folds constants (integer floordiv/floormod round toward negative infinity; a division by
//     zero, or a fold that would overflow i64, is left as it is);
//   - collects integer sums of products (i64 and i32) into coefficient * product-of-atoms terms
//     plus a constant, ordered by first appearance: `(i*4 + j) - j` -> `i*4`;
//   - simplifies floordiv/floormod by positive constants using bounds (the split/fuse index
//     arithmetic of schedules): `floordiv(i0*8 + i1, 8)` -> `i0` when i1 is in [0, 8), and
//     `floordiv(x, c)*c + floormod(x, c)` -> `x`;
//   - folds min/max, comparisons, &&, ||, !, select and cast when bounds or constants decide them;
//   - for floats only folds constants and removes `x*1.0`, `x + 0.0`, `x - 0.0`, `x/1.0` (never
//     `x*0.0`, which is not 0 for NaN or infinities).
// The result keeps the dtype of the input, is deterministic (it never depends on pointer
// values) and is a fixed point: Simplify(Simplify(e)) is structurally Simplify(e).
//
// Variables are never replaced by values, even when their range is a single value: an extent-1
// loop keeps feeding the block iterators it is bound to, and an extent-1 block iterator keeps
// indexing what its block reads and writes (schedule primitives rely on both; removing such a
// loop is a schedule decision). Bounds still use the value: `i == 3` folds to true when i is in
// [3, 3], `floordiv(i, 4)` to 0.
//
// i64 arithmetic is assumed not to overflow (it is index arithmetic); rules that would be wrong
// under wrap-around are applied to i64 only, and narrower types are treated as wrapping.
#pragma once

#include "ir/kernel/bound.h"
#include "ir/kernel/expr.h"
#include "ir/kernel/stmt.h"

namespace tandem::ir {

// Simplifies an expression; the result is equal to `e` for every assignment of the variables
// within `ranges` (variables without a range are unconstrained).
Expr Simplify(const Expr& e, const VarRanges& ranges = {});

// Simplifies every expression of a statement, knowing that loop variables range over
// [0, extent) inside their loops and block iterators over [0, extent) inside their blocks, and
// what the condition of an if implies for a variable compared with a constant. Folds
// IfThenElse with a provable condition (a removed branch becomes an empty Seq). Loops are kept,
// even of extent 1. Unchanged parts stay shared.
Stmt Simplify(const Stmt& s, const VarRanges& ranges = {});

}  // namespace tandem::ir
