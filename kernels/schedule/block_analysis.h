// Block analysis shared by the default schedules (kernels/default_schedule.h) and the kernel
// search space (kernels/search/): what kind of block a block is, how much work it does, how it
// sits in its loop nest and which blocks it feeds. Read-only questions about a kernel function;
// none of them changes a schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels {

// The block `name` of `function` (its realize), or nullptr.
const ir::BlockRealizeNode* FindRealize(const ir::KernelFunction& function,
                                        const std::string& name);
// True when the block a handle names still exists in the schedule's function.
bool BlockExists(const Schedule& schedule, const BlockRV& block);

// True when the block has a reduction iterator.
bool IsReduction(const ir::Block& block);
// How many of the block's iterators are of `kind`.
size_t CountIterators(const ir::Block& block, ir::IterKind kind);
// Product of the extents of the spatial (or reduction) iterators.
int64_t SpatialExtent(const ir::Block& block);
int64_t ReductionExtent(const ir::Block& block);

// True when `block` sits in its own loop nest directly under the root block: one loop per
// iterator, in iterator order, each bound as that iterator's value, and no other statement
// inside the nest (what compute definitions produce and tiling expects).
bool IsPristineNest(const ir::KernelFunction& function, const std::string& block);

// The realize of the block a handle names when it is an untouched reduction: it exists, is not
// the root, has a reduction iterator and an init statement, and sits in a pristine nest
// (IsPristineNest). nullptr otherwise. What the reduction-tiling schedule rules start from.
const ir::BlockRealizeNode* PristineReduction(const Schedule& schedule, const BlockRV& block);

// True when `block` writes a parameter (an output) of the kernel.
bool WritesOutput(const ir::KernelFunction& function, const ir::Block& block);

// Names of the other blocks that read what `block` writes, in pre-order.
std::vector<std::string> ConsumersOf(const ir::KernelFunction& function, const ir::Block& block);

// True when `reader` reads a buffer that `writer` writes.
bool ReadsAnyOf(const ir::Block& reader, const ir::Block& writer);
// How many loads of `writer`'s outputs the value of `reader` holds.
int64_t LoadsOf(const ir::Block& reader, const ir::Block& writer);

// True when some buffer the block reads (other than what it writes) is indexed without one of
// its spatial iterators of extent > 1, so that its elements are reused across that iterator:
// what makes multi-level tiling pay off (matmul, convolution; not pooling or row reductions).
bool HasDataReuse(const ir::Block& block);

}  // namespace tandem::kernels
