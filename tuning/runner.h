// The runner: measures built candidates, isolated from the tuning process.
//
// ProcessRunner measures in worker processes: it forks a worker for a batch of candidates
// after they are built (the worker inherits the compiled code and the inputs, so nothing is
// serialized), the worker runs each candidate (warm-up, repeats, checking the outputs against
// the expected ones) and reports each result through a pipe. A worker that dies (a crash in
// generated code) or stops reporting for longer than the timeout (a hang) is killed and that
// candidate is recorded as failed with the reason; a new worker takes the rest of the batch.
// The tuning process itself never runs candidate code, except executables that cannot run in a
// forked process (GPU contexts; Executable::runs_in_forked_process), which it measures itself.
#pragma once

#include <memory>
#include <vector>

#include "backends/runtime/executable.h"
#include "ir/tensor.h"
#include "tuning/measure.h"

namespace tandem::tuning {

struct RunInput {
  std::shared_ptr<backends::Executable> executable;
  std::vector<ir::Tensor> inputs;    // in parameter order
  std::vector<ir::Tensor> expected;  // outputs to compare with; empty: no check
};

class Runner {
 public:
  virtual ~Runner() = default;
  // One result per input, in order. Never throws for a candidate's failure.
  virtual std::vector<MeasureResult> Run(const std::vector<RunInput>& inputs,
                                         const MeasureOptions& options) = 0;
};

// Measures in forked worker processes (see the file comment).
class ProcessRunner : public Runner {
 public:
  std::vector<MeasureResult> Run(const std::vector<RunInput>& inputs,
                                 const MeasureOptions& options) override;
};

// Measures in this process (no isolation: a crashing candidate ends the process). For
// debugging and for platforms without fork.
class InProcessRunner : public Runner {
 public:
  std::vector<MeasureResult> Run(const std::vector<RunInput>& inputs,
                                 const MeasureOptions& options) override;
};

// Runs one candidate in the calling process: warm-up, repeats of at least
// options.min_repeat_seconds, the check against `input.expected`. Shared by both runners.
MeasureResult MeasureHere(const RunInput& input, const MeasureOptions& options);

}  // namespace tandem::tuning
