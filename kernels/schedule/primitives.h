// Schedule primitives as pure functions on kernel functions.
//
// Each primitive takes a kernel function and returns the transformed one, or throws an Error
// that names the primitive, the block or loop and the violated precondition. Because kernel
// functions are values, a failed primitive leaves its input unchanged by construction. The
// Schedule class (schedule.h) wraps these with random-variable handles and trace recording;
// they are separate so that each primitive can be tested on IR directly.
//
// Loops are named by their loop variable, blocks by their unique name.
#pragma once

#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/kernel/stmt.h"

namespace tandem::kernels::primitive {

// Splits `loop` (extent n) into nested loops with the given extents, outermost first. At most
// one factor may be -1 (inferred as ceil(n / product of the others)). When the product exceeds
// n, the blocks under the loop get the predicate `fused index < n`. Returns the new loop vars.
ir::KernelFunction Split(const ir::KernelFunction& function, const ir::Var& loop,
                         const std::vector<int64_t>& factors, std::vector<ir::Var>* new_loops);

// Fuses perfectly nested loops (outermost first, each the only statement in its parent's body)
// into one loop.
ir::KernelFunction Fuse(const ir::KernelFunction& function, const std::vector<ir::Var>& loops,
                        ir::Var* fused);

// Reorders loops that lie on one perfectly nested chain; the given loops take the positions
// they jointly occupy, in the given order; other loops of the chain stay where they are.
ir::KernelFunction Reorder(const ir::KernelFunction& function, const std::vector<ir::Var>& order);

// Marks a loop parallel / vectorized / unrolled / serial. Parallel and vectorized loops must not
// be bound to a reduction iterator of any block beneath them (that would race); a vectorized
// loop must not contain a parallel loop.
ir::KernelFunction SetLoopKind(const ir::KernelFunction& function, const ir::Var& loop,
                               ir::ForKind kind);

ir::KernelFunction AnnotateLoop(const ir::KernelFunction& function, const ir::Var& loop,
                                const std::string& key, const ir::AttrValue& value);
ir::KernelFunction AnnotateBlock(const ir::KernelFunction& function, const std::string& block,
                                 const std::string& key, const ir::AttrValue& value);

// --- Block-level primitives (cache_read_write.cc, compute_at.cc, compute_inline.cc,
// rfactor.cc, decompose_reduction.cc, transform_layout.cc) ---

// Adds a block that copies the buffer read by `block` (its read region `read_index`) into a new
// buffer of `scope`, placed right before the first block that reads it; `block` then reads the
// copy. Returns the new block's name in `new_block`.
ir::KernelFunction CacheRead(const ir::KernelFunction& function, const std::string& block,
                             int read_index, const std::string& scope, std::string* new_block);
// `block` writes a new buffer of `scope` instead of its write region `write_index`; a new block
// placed right after it copies the result to the original buffer.
ir::KernelFunction CacheWrite(const ir::KernelFunction& function, const std::string& block,
                              int write_index, const std::string& scope, std::string* new_block);
// The buffer `block` writes (its write region `write_index`), allocated inside the kernel, in
// storage `scope` instead ("local", "shared" or "global"), for every block that touches it.
ir::KernelFunction SetScope(const ir::KernelFunction& function, const std::string& block,
                            int write_index, const std::string& scope);
// Moves producer `block` under `loop` (a loop of its consumers), computing just the region the
// consumers under that loop need.
ir::KernelFunction ComputeAt(const ir::KernelFunction& function, const std::string& block,
                             const ir::Var& loop);
// Moves consumer `block` under `loop` (a loop of its producer), consuming the region the
// producer computed under that loop.
ir::KernelFunction ReverseComputeAt(const ir::KernelFunction& function, const std::string& block,
                                    const ir::Var& loop);
// Inlines an elementwise/injective producer into its consumers and removes it.
ir::KernelFunction ComputeInline(const ir::KernelFunction& function, const std::string& block);
// Inlines a consumer that reads its single producer pointwise into that producer.
ir::KernelFunction ReverseComputeInline(const ir::KernelFunction& function,
                                        const std::string& block);
// Factorizes the reduction over `loop`: a new block computes partial results with the loop's
// iterations as a spatial axis (at position `factor_axis` of the partial buffer), and the
// original block reduces the partials. Returns the partial block's name.
ir::KernelFunction RFactor(const ir::KernelFunction& function, const ir::Var& loop, int factor_axis,
                           std::string* rf_block);
// Moves the init statement of reduction `block` into its own block placed before `loop`.
ir::KernelFunction DecomposeReduction(const ir::KernelFunction& function, const std::string& block,
                                      const ir::Var& loop, std::string* init_block);
// Changes the layout of a buffer (read or write region `buffer_index` of `block`) allocated in
// the kernel: `src_layout` names the current axes by position with capital letters ("AB"),
// `dst_layout` is the new layout in the same notation as ir/layout.h ("BA", "AB16b").
ir::KernelFunction TransformLayout(const ir::KernelFunction& function, const std::string& block,
                                   int buffer_index, bool is_write, const std::string& src_layout,
                                   const std::string& dst_layout);

// The loops under which `block` may legally be computed (compute_at locations), outermost
// first; used by sample_compute_location.
std::vector<ir::Var> ComputeAtLocations(const ir::KernelFunction& function,
                                        const std::string& block);

}  // namespace tandem::kernels::primitive
