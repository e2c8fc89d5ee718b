// Hand-written schedules of single-op kernels (matmul, direct conv2d in NCHW and NCHW16c), used
// by tandem_kernel_bench to study what limits generated code. They use the same Schedule
// primitives a tuned schedule would.
#pragma once

#include <string>
#include <vector>

#include "ir/kernel/stmt.h"
#include "kernels/schedule/schedule.h"

namespace tandem::bench {

struct HandWorkload {
  std::string op;              // "gmm", "conv" or "conv16c"
  std::vector<int64_t> shape;  // gmm: M N K; conv: C O H W kernel stride pad
  ir::KernelFunction kernel;   // unscheduled
  std::string description;
  double flops = 0;
};

// `shape` may be empty (the default shape of the op) or partial (gmm: M -> M M M).
HandWorkload MakeHandWorkload(const std::string& op, std::vector<int64_t> shape);

// The hand schedule of the workload's op. `tiles` (empty: defaults):
//   gmm: rows of the register tile, 16-lane vectors of the register tile, row tiles and column
//        tiles per parallel task, inner reduction split, pack b into [N/16, K, 16] panels once
//        per call (1) or not (0);
//   conv/conv16c: output-width register tile, output-channel vectors per tile (conv16c: blocks),
//        pack the padded input (1) or not (0).
kernels::Schedule ApplyHandSchedule(const HandWorkload& workload, std::vector<int64_t> tiles);

}  // namespace tandem::bench
