// Padding past the end of a dynamic axis, and parts placed after one (kernels/dynamic_extent.h).
//
// A window op pads its input with a select whose condition bounds the read by the axis's extent
// at the bound: padded[w] = select(w >= p && w < p + E, x[w - p], pad value). Built at the bound,
// a smaller size would read junk where its padding should be. Where the op allows it
// (PlanDynamicIterators' `padded_reads`), such a read counts as inside the valid part, and the
// applied plan replaces the bound in the condition by the valid length, w < p + V(n), so that
// every position from V(n) on reads as padding, as the op at that size pads. A window whose
// windows all end inside the axis at the bound (a stride 2 convolution over an even length) has
// only the lower bound, w >= p; at an odd size its last window passes the valid length, so the
// applied plan adds w < p + V(n).
//
// A concatenation is a chain of such selects: out[i] = select(i < E, a[i], b[i - E]) places b
// after a. At the sizes n, b starts at V(n), not at E: the same rewrite bounds the first part by
// i < V(n), and the select's other value is shifted along i by V(n) - E, so that it reads
// b[i - V(n)] (and a later part, or a later select of the chain, moves with it). A shifted read
// can pass the end of its buffer at positions past the valid part (junk, which a partial tile
// computes), so it reads only where its index is inside the buffer, and 0 elsewhere.
#pragma once

#include <functional>
#include <vector>

#include "ir/kernel/expr.h"
#include "kernels/dynamic_extent.h"

namespace tandem::kernels {

// Whether one of `guards` (conjuncts of the conditions of the selects whose true value holds the
// read) says `index` < `extent`: a conjunct `index + d < extent + d` or `index + d <= extent - 1
// + d` for a constant d.
bool BoundedByExtent(const std::vector<ir::Expr>& guards, const ir::Expr& index, int64_t extent);

// Whether one of `guards` says `index` >= 0 as `index + d >= d` for a constant d > 0: the read
// of a window op padded at the start of the axis, whose upper bound the lowering left out
// because every window at the bound ends inside the axis.
bool PaddedAtStart(const std::vector<ir::Expr>& guards, const ir::Expr& index);

// The extents of a buffer a kernel reads (nullptr: static, or unknown).
using ExtentsOfBuffer = std::function<const TensorExtents*(const ir::BufferNode*)>;

// `e` with every select whose true value reads a dynamic axis (extents by `extents_of`) at an
// index that a conjunct `u < E + d` of its condition bounds by the axis's extent E at the bound
// (as BoundedByExtent finds) rewritten: that conjunct bounds the index by the valid length
// instead, u < `limit(extent)` + d, and in the select's false value every index and compared
// value that differs from u by an expression without variables moves by limit(extent) - E (the
// parts after the first of a concatenation); each read so moved is guarded by its buffer's
// extent. A select whose condition bounds such a read only from below, by a conjunct
// `u >= d` (PaddedAtStart), gets the conjunct u < `limit(extent)` + d: at the bound every window
// ends inside the axis, at other sizes a strided one may reach past the valid length, where the
// op pads.
ir::Expr BoundPaddingByValidLength(const ir::Expr& e, const ExtentsOfBuffer& extents_of,
                                   const std::function<ir::Expr(const AxisExtent&)>& limit);

}  // namespace tandem::kernels
