// What the schedule rules, postprocessors and mutators of the kernel search space share: the
// annotation keys through which rules hand decisions to postprocessors, trace helpers, and a
// helper that runs a schedule step and undoes it when it turns out illegal. Block analysis is in
// kernels/schedule/block_analysis.h.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"
#include "ir/trace.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels::search {

// Root block annotations (ParallelVectorizeUnroll -> RewriteParallelVectorizeUnroll):
inline constexpr char kParallelKey[] = "tandem.parallel";    // largest parallel extent (int)
inline constexpr char kVectorizeKey[] = "tandem.vectorize";  // largest vector extent (int)
inline constexpr char kUnrollKey[] = "tandem.unroll";        // unroll depth (int)
// Block annotation of a multi-level tiled block: its tiling structure ("SSRSRS").
inline constexpr char kTilingKey[] = "tandem.tiling";
// Loop annotation on the last loop of tile level n (1: after S0, 2: after S1) of a tiled block.
inline constexpr char kTileLevelKey[] = "tandem.tile_level";
// Block annotation of an epilogue: the tile level of its producer it is computed under
// (MultiLevelTiling -> RewriteEpilogueFusion).
inline constexpr char kFuseLevelKey[] = "tandem.fuse_level";
// Block annotation of a multi-level tiled block: 1 when the S0 loops that move its vector
// operands go first, 0 for iterator order (MultiLevelTiling -> RewritePanelOrder).
inline constexpr char kPanelsOuterKey[] = "tandem.panels_outer";
// Block annotation of a GPU rule that spread the block over a sampled number of threads (AutoBind,
// CrossThreadReduction): that number, so that MutateThreadExtent finds its decision.
inline constexpr char kThreadExtentKey[] = "tandem.thread_extent";

using kernels::TrySteps;  // kernels/schedule/schedule.h

// The buffers `fn` stores into.
std::set<const ir::BufferNode*> WrittenBuffers(const ir::KernelFunction& fn);

// Per iterator of `block`: whether it moves a vector operand, a load of a parameter of `fn` that
// `fn` never writes (weights, or an input read as vectors) whose index varies along the vector
// axis, the last spatial iterator longer than 1 (the one multi-level tiling vectorizes). All
// false when the block has no such iterator.
std::vector<bool> MovesVectorOperands(const ir::KernelFunction& fn, const ir::Block& block);

// The index of the "enter_postproc" instruction, or the trace's size when there is none.
size_t PostprocessingStart(const ir::Trace& trace);
// The trace without its postprocessing part.
ir::Trace DesignPart(const ir::Trace& trace);

// The instruction that defines handle `name` (index into the trace), if any.
std::optional<size_t> DefiningInstruction(const ir::Trace& trace, const std::string& name);
// Indices of the sample_categorical instructions whose value feeds an annotation with `key`
// (before the postprocessing part).
std::vector<size_t> CategoricalsAnnotating(const ir::Trace& trace, const std::string& key);

// The trace with the decision of sample_categorical instruction `index` changed to another
// candidate drawn uniformly; nullopt when it has a single candidate.
std::optional<ir::Trace> OtherCategory(const ir::Trace& trace, size_t index, RandomState& random);
// OtherCategory of one of `candidates` (instruction indices) drawn uniformly; nullopt when none
// can change.
std::optional<ir::Trace> MutateOneCategorical(const ir::Trace& trace,
                                              const std::vector<size_t>& candidates,
                                              RandomState& random);

// True when a vector of `extent` lanes is one the target does well: a multiple of 4 (of the
// lane count when it is smaller) no longer than `max_extent`.
bool GoodVectorExtent(int64_t extent, int64_t max_extent, int vector_lanes);

// The statements of the root block's body (the nests; on a GPU, the launches).
std::vector<ir::Stmt> TopLevelStatements(const ir::KernelFunction& function);
// Names of the blocks under `stmt`, in pre-order.
std::vector<std::string> BlocksUnder(const ir::Stmt& stmt);
// True when some loop under `stmt` is bound to a GPU block or thread index.
bool HasThreadBinding(const ir::Stmt& stmt);
// The thread counts a GPU rule samples from for a loop of `extent` iterations: the powers of two
// from the warp size up to the target's threads per block that are at most `extent` (`extent`
// itself when it is below a warp), and, when `divisors_only`, only those dividing `extent`.
std::vector<int64_t> ThreadCountCandidates(int64_t extent, int64_t warp_size, int64_t max_threads,
                                           bool divisors_only);

}  // namespace tandem::kernels::search
