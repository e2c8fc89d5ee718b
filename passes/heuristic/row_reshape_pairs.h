// Row reshape pairs: a reshape that regroups the leading axes of a value while keeping its rows,
// row-wise ops on the regrouped value, and reshapes that restore the leading axes. A linear
// layer exported as `x.view(-1, hidden)`, addmm and a view back (GPT-2's Conv1D, any
// `nn.Linear` applied to flattened rows) takes this form, and so does a whole block run on
// flattened rows (OPT's feed-forward block with its layer norm and residual add):
//
//   %r = reshape(%x : f32[2, 16, 64]) {newshape=[32, 64]}
//   %d = dense(%r, %w) ; %b = add(%d, %bias) ; %y = reshape(%b) {newshape=[2, 16, 192]}
//
// Removing the pair leaves the row-wise ops on the original axes: `dense(%x, %w) : f32[2, 16,
// 192]`. Besides two fewer nodes, the batch and sequence axes stay apart, which a dynamic build
// needs (an axis that is their product changes with two symbols at once).
#pragma once

#include <optional>

#include "ir/graph.h"

namespace tandem::passes {

// Removes every row reshape pair of `function` and returns the result, or nullopt when it holds
// none. The ops between the reshapes form a region: every node reading a
// value of the region (the first reshape's result, or a region op's) is a restoring reshape or
// joins the region. Guarantees, for each region rewritten:
//   - its ops are row-wise: dense and matmul reading the region as their rows with a rank-2
//     weight; elementwise and broadcasting ops without an axis attribute whose operands from
//     outside the region vary along the last axis at most; reductions over the last axis that
//     keep it, and softmax over the last axis (both then name the last axis of the restored
//     rank); so each row of each result depends on the same row of the region's input alone;
//   - nothing else reads a region value, and the function does not return one, so no other
//     node sees the regrouped shapes;
//   - every restoring reshape restores the same leading axes, those of the first reshape's
//     operand, whose remaining axes form the row (they are merged into one);
//   - each restoring reshape is replaced by a value of its exact type, the rewritten ops keep
//     their names, and the function computes the same results.
std::optional<ir::GraphFunction> DropRowReshapePairs(const ir::GraphFunction& function);

}  // namespace tandem::passes
