// Default schedules: a reasonable untuned schedule for every kernel, chosen by simple rules
// over the kernel's blocks, so that a build without tuning is already vectorized and parallel.
//
// The rules, applied through the Schedule (so the result carries a trace like a tuned one):
//   1. inline pointwise producers that are not kernel outputs (padding, the middle of an
//      elementwise epilogue chain);
//   2. a reduction block (conv, matmul, pooling) gets its innermost spatial axis split by a
//      vector width and vectorized, a second spatial axis register-tiled and unrolled, the
//      reduction loops moved between the outer and the register tile, its init decomposed, its
//      outer spatial loops fused and parallelized; a pointwise epilogue that reads it is moved
//      under its outer loop;
//   3. a spatial block (elementwise, injective) gets its loops fused, split by a vector width,
//      vectorized and parallelized when large enough.
// Each step that turns out illegal for a particular kernel is skipped: the rules never produce
// an invalid program, at worst a slower one.
#pragma once

#include "ir/kernel/stmt.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels {

struct DefaultScheduleOptions {
  int vector_lanes = 16;          // f32 lanes of the widest vector (16 on AVX-512)
  int64_t parallel_min_work = 16384;  // elements below which a kernel runs on one thread
  int num_threads = 0;            // 0: hardware concurrency
};

// The kernel with its default schedule applied (the returned Schedule holds its trace).
Schedule ApplyDefaultSchedule(const ir::KernelFunction& kernel,
                              const DefaultScheduleOptions& options = {});

}  // namespace tandem::kernels
