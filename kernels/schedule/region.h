// Buffer regions touched under a loop, and loop nests that realize a block over such a region:
// the machinery shared by compute_at / reverse_compute_at (which move a block under a loop and
// compute just what is needed there) and cache_read / cache_write (whose copy stages placed
// inside a loop copy just what the block touches in one iteration).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/kernel/bound.h"
#include "ir/kernel/stmt.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels {

// The part of one buffer axis touched in one iteration of a loop: the indices [min, max]
// (expressions in the loop and the loops around it, clamped to the buffer) lie in
// [min, min + extent), where `extent` is a constant upper bound of their number (at most the
// axis length).
struct AxisRegion {
  ir::Expr min;
  ir::Expr max;
  int64_t extent = 0;
};

// The ranges of the loops enclosing the loop at `loop_path`, and of that loop itself.
ir::VarRanges LoopRangesAt(const StmtPath& loop_path);

// The region of `buffer` read (when `reads`) or written by the blocks under the loop at
// `loop_path`, for one iteration of that loop: a covering box, exact for affine indices and the
// whole axis where an index cannot be bounded. When `only_block` is not empty, only that
// block's accesses count. Throws Error prefixed by `context` when nothing under the loop
// touches the buffer.
std::vector<AxisRegion> RegionUnderLoop(const StmtPath& loop_path, const ir::Buffer& buffer,
                                        bool reads, const std::string& context,
                                        const std::string& only_block = "");

// The predicate of `realize` rewritten over its block's iterators (every sub-expression equal
// to an iterator's bound value becomes the iterator) and the loops in `kept`; undefined when
// some other loop variable remains.
ir::Expr PredicateOverIterators(const ir::BlockRealizeNode* realize, const ir::VarRanges& kept);

// A loop nest realizing `block` with spatial iterator `spatial_iters[d]` ranging over
// `region[d]` (no iterator when it is -1) and its other iterators over their whole domains, under
// the predicate `iterator_predicate` (over the block's iterators) and guards that keep every
// iterator inside both the region and its domain. `outer` are the ranges of the loops around the
// nest.
ir::Stmt RegenerateNest(const ir::Block& block, const std::vector<int>& spatial_iters,
                        const std::vector<AxisRegion>& region, const ir::Expr& iterator_predicate,
                        const ir::VarRanges& outer);

}  // namespace tandem::kernels
