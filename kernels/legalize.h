// Legalize: lowers every op call of a module's graph functions into a kernel function (compute
// definition + default schedule) and replaces the call with call_kernel.
//
// Call nodes annotated with the same integer "group" (set by FuseOps) are lowered together into
// one kernel with several blocks (LowerGraphFunction); the group must have a single output, used
// outside it. Identical kernels (equal structural hash and structure) are created once and shared
// by every call, so a model with repeated layers compiles each distinct kernel once. This is the
// step the `Legalize` pass wraps.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "kernels/default_schedule.h"
#include "kernels/dynamic_extent.h"

namespace tandem::kernels {

// Supplies a tuned schedule for a kernel: given the unscheduled kernel (its name is the one
// Legalize gave it), returns the scheduled kernel, or nullopt to fall back to the default
// schedule. Apply-history-best (tuning/search/apply_history_best.h) is one.
using ScheduleProvider =
    std::function<std::optional<ir::KernelFunction>(const ir::KernelFunction& unscheduled)>;

// Lowering for a dynamic build (kernels/dynamic_extent.h): the build's symbols, the extents of
// the graph's dynamic values by value name, and the graph parameter (i64[number of symbols])
// holding the symbols' sizes. A call
// touching a dynamic value becomes a kernel planned on its compute definition, scheduled, with
// the plan applied; it takes that parameter before its output. Ops whose result depends on the
// length of an axis they reduce (layer_norm, pooling, ...; a mean divides by the valid count,
// kernels/dynamic_means.h) reducing a dynamic axis are an Error naming the op.
struct DynamicLowering {
  DynamicRanges ranges;
  std::map<std::string, TensorExtents> values;
  std::string extent_value;
};

struct LegalizeOptions {
  bool apply_default_schedule = true;
  // The default schedules are the GPU ones (ApplyGpuDefaultSchedule with gpu_schedule).
  bool gpu = false;
  DefaultScheduleOptions schedule;
  GpuScheduleOptions gpu_schedule;
  ScheduleProvider schedule_provider;              // consulted first when set
  std::shared_ptr<const DynamicLowering> dynamic;  // set for a dynamic build
};

ir::IRModule Legalize(const ir::IRModule& module, const LegalizeOptions& options = {});

}  // namespace tandem::kernels
