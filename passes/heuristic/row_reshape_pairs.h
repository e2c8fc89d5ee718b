// Row reshape pairs: a reshape that regroups the leading axes of a value while keeping its last
// axis, row-wise ops on the regrouped value, and a reshape that restores the leading axes. A
// linear layer exported as `x.view(-1, hidden)`, addmm and a view back (GPT-2's Conv1D, any
// `nn.Linear` applied to flattened rows) takes this form:
//
//   %r = reshape(%x : f32[2, 16, 64]) {newshape=[32, 64]}
//   %d = dense(%r, %w) ; %b = add(%d, %bias) ; %y = reshape(%b) {newshape=[2, 16, 192]}
//
// Removing the pair leaves the row-wise ops on the original axes: `dense(%x, %w) : f32[2, 16,
// 192]`. Besides two fewer nodes, the batch and sequence axes stay apart, which a dynamic build
// needs (an axis that is their product changes with two symbols at once).
#pragma once

#include "ir/graph.h"

namespace tandem::passes {

// Removes every row reshape pair of `function` and returns the result; the function is returned
// unchanged when it holds none. Guarantees, for each pair removed:
//   - the ops between the reshapes are row-wise: dense and matmul reading the chain as their
//     left operand with a rank-2 right operand, and elementwise or broadcasting ops without an
//     axis attribute whose other operands vary along the last axis at most (every other extent
//     1), so that each result row depends on the same row of the chain alone;
//   - each value inside the chain has one reader (nothing else sees its regrouped shape), and the
//     first reshape stays in place when something else reads it;
//   - the value replacing the second reshape has its exact type, names of the rewritten ops are
//     kept, and the function computes the same results.
ir::GraphFunction DropRowReshapePairs(const ir::GraphFunction& function);

}  // namespace tandem::passes
