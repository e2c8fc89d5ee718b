// Legalize: lowers every op call of a module's graph functions into a kernel function (compute
// definition + default schedule) and replaces the call with call_kernel.
//
// Identical kernels (equal structural hash and structure) are created once and shared by every
// call, so a model with repeated layers compiles each distinct kernel once. This is the step the
// `Legalize` pass wraps.
#pragma once

#include "ir/graph.h"
#include "kernels/default_schedule.h"

namespace tandem::kernels {

struct LegalizeOptions {
  bool apply_default_schedule = true;
  DefaultScheduleOptions schedule;
};

ir::IRModule Legalize(const ir::IRModule& module, const LegalizeOptions& options = {});

}  // namespace tandem::kernels
