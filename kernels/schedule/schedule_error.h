// The error of a schedule primitive refusing a transformation that would be illegal for the
// program at hand (a loop split by factors that do not cover it, a block that cannot be
// inlined, a loop that cannot be vectorized). Schedule rules try steps that may be illegal for
// a particular kernel and skip them on this error (TrySteps, kernels/schedule/schedule.h);
// any other ir::Error a step throws (a stale handle, a malformed request, an internal bug)
// is not "this step does not apply here" and propagates.
#pragma once

#include "ir/error.h"

namespace tandem::kernels {

// A schedule primitive's refusal of an illegal transformation; an ir::Error like any other to
// code that does not ask.
class ScheduleError : public ir::Error {
 public:
  using ir::Error::Error;
};

}  // namespace tandem::kernels
