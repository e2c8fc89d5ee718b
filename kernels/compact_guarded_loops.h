// Compacted guarded loops: a fused loop that runs its body only where some of its digits are
// below run-time bounds, numbered over those iterations alone.
//
// A schedule fuses loops into one (`for f in 352 parallel`: the heads, row tiles and column
// tiles of an attention product); the fused loops come back as digits of f,
// floormod(floordiv(f, D), e). In a dynamic kernel (kernels/dynamic_extent.h) the iterations
// whose row or column tile lies past the valid length do nothing, so GuardLoops guards the body
// with `floormod(f, 22) * 6 < n && floormod(floordiv(f, 22), 8) * 16 < n`. When a guarded
// digit is not the outermost, no shorter trip count expresses that: a run at 16 tokens would
// evaluate the guard in all 352 iterations to run 6 of them. The CPU code generator runs such
// a loop over a compacted numbering g of the active iterations instead: count of them, and f
// recomposed once per iteration from g's digits (divided out of g at the start of a chunk, then
// advanced by one), so the body (which keeps using f) is unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/kernel/stmt.h"

namespace tandem::kernels {

// A loop `for f in E { if (c_1 && c_2 && ...) S }` run as `for g in [0, count) { f = original;
// if (others) S }`.
struct CompactedLoop {
  // One place of g's mixed radix, lowest first: `radix` values (uniform in the loop), each worth
  // `stride` in f.
  struct Place {
    ir::Expr radix;
    int64_t stride = 1;
  };
  std::vector<Place> places;  // lowest first; count is the product of their radices
  ir::Var active;             // g
  ir::Expr count;             // the number of active iterations, in [0, E]; uniform in the loop
  ir::Expr original;          // f as a function of g, increasing: the g-th active iteration
  ir::Stmt body;  // S under the conditions that bound no digit (S alone when there are none)
};

// The compacted form of `loop`, when it has one:
//   - the loop's body is made of ifs without else (the conditions split at &&) around S;
//   - at least one condition is `a * digit + b < limit`, with a > 0 a constant, b and limit not
//     depending on f and loading nothing that S stores to, for a digit
//     floormod(floordiv(f, D), e) of f (floordiv(f, D) for the outermost, f itself, or
//     floormod(f, e)) that is not the outermost: a bound on the outermost digit alone is a
//     prefix, a trip count;
//   - the bounded digits nest (each D_i * e_i divides D_{i+1}, the outermost D * e divides E).
// The compacted loop visits exactly the iterations the guarded one runs S in, in the same
// order. std::nullopt otherwise.
std::optional<CompactedLoop> CompactGuardedLoop(const ir::ForNode& loop);

}  // namespace tandem::kernels
