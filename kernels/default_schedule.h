// Default schedules: a reasonable untuned schedule for every kernel, chosen by simple rules
// over the kernel's blocks, so that a build without tuning is already vectorized and parallel.
//
// The rules, applied through the Schedule (so the result carries a trace like a tuned one):
//   1. inline pointwise producers that are not kernel outputs (padding, the middle of an
//      elementwise epilogue chain), except into a reduction that reads each element more than
//      16 times (a convolution's padding, a matmul operand), and except a costly one (exp,
//      erf, ...) that two or more blocks read (a softmax's exponentials): those stay separate
//      stages;
//   2a. a row group (reductions over the trailing axes of the same rows, elementwise stages
//      over those rows, and an elementwise output: softmax, layer norm) whose rows are whole
//      vectors runs row by row: one (parallel) loop over steps of a few rows, under which each
//      reduction is factored into vector partials and each stage computed, so a row is read
//      from L1 by every stage;
//   2. a reduction block whose innermost spatial axis can be vectorized with contiguous,
//      broadcast or small-stride loads gets a MetaSchedule-style register tile: the vector axis
//      tiled by 16-lane multiples (a masked tail when they do not divide it), a "broadcast" axis
//      (along which the vector operands are reused from registers) and a second axis (along
//      which the broadcast operands are reused) tiled so that the tile fits 16 vector
//      accumulators (a convolution may instead tile two broadcast axes, h and w, when that
//      rates better), sizes chosen by a model of loads and fmas per reduction step; loop order
//      [outer spatial] [reduction, smallest load step innermost] [tile] [vector], the
//      accumulators in a "local" cache_write block computed per outer iteration (the code
//      generator keeps them in registers), init decomposed, tile loops unrolled, outer loops
//      fused and parallel (ordered so that consecutive iterations reuse the vector operands),
//      a pointwise epilogue inlined into the write-back, and a matrix operand with long 4 KiB-
//      multiple rows packed into contiguous panels;
//   3. a reduction along a contiguous innermost axis that cannot be tiled that way (row sums,
//      softmax, norms) is split by vector lanes and factored (rfactor) into per-lane partials;
//   4. other reductions get the simple rule: innermost spatial axis vectorized, the one before
//      it tiled by up to 4 and unrolled, init decomposed, outer loops fused and parallel;
//   5. a case split (kernels/case_split.h: a select chain on some of the block's iterators,
//      such as a Winograd transform) gets those iterators' loops unrolled just outside the
//      vectorized innermost loop, the other loops fused and parallel; it is never inlined, and
//      a producer the block reads more than 4 times per element is not inlined into it;
//   6. another spatial block (elementwise, injective) gets its innermost loop vectorized (whole
//      when short) and its other loops fused and parallelized when large enough (or, for a
//      short innermost loop, all loops fused and split by the vector width).
// Each step that turns out illegal for a particular kernel is skipped: the rules never produce
// an invalid program, at worst a slower one.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels {

// What the default schedules know of a CPU core besides its vector width and registers. A field
// of 0 is not known; the register tiles are then planned as for the cores whose measurements
// set the planner's constants (two FMAs of the widest vector per cycle, no cache limit).
struct CpuCoreModel {
  // FMAs of the widest vector the core starts per cycle: 2 on AVX2 cores and Intel's AVX-512
  // server cores, 1 where the core splits its widest vectors into two halves (Zen 4's 512-bit
  // vectors).
  double fma_per_cycle = 0;
  // Ways and bytes of the L1 data cache.
  int l1_data_ways = 0;
  int64_t l1_data_bytes = 0;
  // Ways and bytes of the core's own L2 cache.
  int l2_ways = 0;
  int64_t l2_bytes = 0;

  bool operator==(const CpuCoreModel& other) const = default;
};

// Outputs (elements) from which a kernel runs on parallel threads (DefaultScheduleOptions'
// parallel_min_work by default).
inline constexpr int64_t kDefaultParallelMinWork = 16384;
// Multiply-adds of a reduction from which it runs on parallel threads whatever the size of its
// output (a thread pool dispatch costs a few microseconds; this is about 0.5 ms serial).
inline constexpr int64_t kParallelMinMacs = int64_t{1} << 20;

struct DefaultScheduleOptions {
  // f32 lanes of the widest vector (16 on AVX-512, 8 on AVX2) and vector registers of the ISA
  // (32 on AVX-512, 16 on AVX2); 0: not given (backends::Build resolves them from its code
  // generation target, ApplyDefaultSchedule takes AVX-512's).
  int vector_lanes = 0;
  int vector_registers = 0;
  CpuCoreModel core;
  int64_t parallel_min_work =
      kDefaultParallelMinWork;  // elements below which a kernel runs on one thread
  int num_threads = 0;          // 0: hardware concurrency
  // A dynamic build's kernel (planned at the bounds of its dynamic ranges): by block name, the
  // indices of the block's iterators whose extent is a range's bound. A vector tile along one
  // of them is one native vector wide (the register tile of a reduction, the partials of a row
  // reduction), so that a run far below the bound computes at most one vector of each row
  // past its valid length, where a tile planned for the bound alone could compute four.
  std::map<std::string, std::vector<size_t>> dynamic_iterators;

  // The dynamic iterators of `block` (empty when it has none).
  std::vector<size_t> DynamicIteratorsOf(const std::string& block) const;
  // Whether iterator `iterator` of block `block` is one of dynamic_iterators.
  bool IsDynamic(const std::string& block, size_t iterator) const;
};

// The kernel with its default schedule applied (the returned Schedule holds its trace).
Schedule ApplyDefaultSchedule(const ir::KernelFunction& kernel,
                              const DefaultScheduleOptions& options = {});

struct GpuScheduleOptions {
  int threads_per_block = 256;
};

// The default schedule for a GPU (kernels/default_schedule/gpu_schedule.cc): pointwise producers
// inlined as by ApplyDefaultSchedule; a row-wise group (reductions over rows of at least 32
// feeding one elementwise block over the same rows: softmax, layer norm) runs as one launch with
// a thread block per row, threads across the row, the row statistics combined from "shared"
// partials into "local" copies every thread holds (gpu_row_group_schedule.cc); a matrix product
// (spatial loops, then one reduction) gets thread-block tiles whose operands are staged through
// "shared" memory, each thread a register tile of the block's; another reduction that reuses its
// operands (a convolution) with enough outputs gets a register tile per thread (up to 4 x 4 outputs
// of its last two spatial axes, accumulated in a "local" cache_write block, tile loops unrolled); a
// long reduction with few outputs or long rows (a norm, a global sum) is factored (rfactor) into
// per-thread partials, kept in "shared" memory and combined in two levels (group sums, then
// the whole block) by a thread block per output in the same launch (a full reduction: combined by a
// second launch); every other block has its leading spatial loops fused, split by the threads per
// block and bound to blockIdx.x and threadIdx.x, what is left of the nest (reduction loops) running
// inside each thread. Every block whose nest starts with a spatial loop ends with its loops bound;
// a short full reduction runs on one thread. The result computes what the kernel computes (the
// kernel interpreter's thread simulation checks it, races included).
Schedule ApplyGpuDefaultSchedule(const ir::KernelFunction& kernel,
                                 const GpuScheduleOptions& options = {});

}  // namespace tandem::kernels
