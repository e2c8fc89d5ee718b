// The built-in schedule rules, postprocessors and mutators of the kernel search space, one per
// file under kernels/search/{rules,postprocessors,mutators}/ (search_space.cc registers them by
// the names given here).
#pragma once

#include "kernels/search/search_space.h"

namespace tandem::kernels {

// --- Rules ---
// "auto_inline": inlines pointwise producers that are not outputs (padding, the middle of an
// elementwise chain) into their consumers; otherwise reverse-inlines a pointwise consumer into
// its single pointwise producer.
ScheduleRulePtr MakeAutoInline(const SearchTarget& target);
// "multi_level_tiling": SSRSRS tiling of a reduction block with data reuse, with its output
// accumulated in a "local" cache, or its elementwise epilogue fused under a sampled tile level.
ScheduleRulePtr MakeMultiLevelTiling(const SearchTarget& target);
// "random_compute_location": a sampled compute_at location for a block that is neither
// inlined nor tiled.
ScheduleRulePtr MakeRandomComputeLocation(const SearchTarget& target);
// "parallel_vectorize_unroll": annotates the root block (the last block visited) with the
// largest parallel extent, the largest vector extent and a sampled unroll depth.
ScheduleRulePtr MakeParallelVectorizeUnroll(const SearchTarget& target);
// "add_rfactor": for a reduction with little spatial parallelism and a long reduction, adds
// design spaces where the reduction is split and factored (rfactor) on either part.
ScheduleRulePtr MakeAddRFactor(const SearchTarget& target);
// GPU rules:
// "multi_level_tiling_gpu": SSSRRSRS tiling of a reduction block with data reuse, bound to
// blockIdx.x and threadIdx.x, accumulated in "local" registers; a second design space stages the
// operand tiles in "shared" memory, fetched by all threads of the block.
ScheduleRulePtr MakeMultiLevelTilingGpu(const SearchTarget& target);
// "cross_thread_reduction": for a reduction with long rows and no operand reuse, adds a design
// space where a block's threads compute partials of each row in shared memory (rfactor).
ScheduleRulePtr MakeCrossThreadReduction(const SearchTarget& target);
// "auto_bind": at the root, spreads every nest left without thread binding over blockIdx.x and
// a sampled number of threadIdx.x.
ScheduleRulePtr MakeAutoBind(const SearchTarget& target);
// "auto_unroll": annotates the root block with a sampled unroll depth.
ScheduleRulePtr MakeAutoUnroll(const SearchTarget& target);

// --- Postprocessors ---
// "rewrite_epilogue_fusion": computes each epilogue under the tile level sampled for it.
PostprocessorPtr MakeRewriteEpilogueFusion(const SearchTarget& target);
// "rewrite_reduction_block": decomposes reduction inits out of the reduction loops.
PostprocessorPtr MakeRewriteReductionBlock(const SearchTarget& target);
// "rewrite_parallel_vectorize_unroll": turns the root annotations into parallel, vectorized
// and unrolled loops.
PostprocessorPtr MakeRewriteParallelVectorizeUnroll(const SearchTarget& target);
// "rewrite_panel_order": carries out multi_level_tiling's S0 order decision (the loops that move
// the vector operands first).
PostprocessorPtr MakeRewritePanelOrder(const SearchTarget& target);
// "rewrite_prefetch": prefetches the next weight panel in a parallel loop over tiles that share
// each panel (the default schedules' prefetch distance, for searched programs).
PostprocessorPtr MakeRewritePrefetch(const SearchTarget& target);
// "verify_program": rejects programs the target cannot run well or that are malformed.
PostprocessorPtr MakeVerifyProgram(const SearchTarget& target);
// "verify_gpu_launch": rejects GPU programs whose launches exceed the target's threads per
// block, shared memory per block or registers per thread, or leave work to a single thread.
PostprocessorPtr MakeVerifyGpuLaunch(const SearchTarget& target);

// --- Mutators ---
// "mutate_tile_size": moves a prime factor between two levels of one sample_perfect_tile.
MutatorPtr MakeMutateTileSize(const SearchTarget& target);
// "mutate_parallel": another largest parallel extent.
MutatorPtr MakeMutateParallel(const SearchTarget& target);
// "mutate_unroll": another unroll depth.
MutatorPtr MakeMutateUnroll(const SearchTarget& target);
// "mutate_compute_location": another legal compute location (sample_compute_location) or
// epilogue tile level.
MutatorPtr MakeMutateComputeLocation(const SearchTarget& target);
// "mutate_thread_extent": another sampled number of threads (AutoBind, CrossThreadReduction).
MutatorPtr MakeMutateThreadExtent(const SearchTarget& target);

}  // namespace tandem::kernels
