// The runner: measures built candidates, isolated from the tuning process.
//
// ProcessRunner measures in worker processes: it forks a worker for a batch of candidates
// after they are built (the worker inherits the compiled code and the inputs, so nothing is
// serialized), the worker runs each candidate (warm-up, repeats, checking the outputs against
// the expected ones) and reports each result through a pipe. A worker that dies (a crash in
// generated code) or stops reporting for longer than the timeout (a hang) is killed and that
// candidate is recorded as failed with the reason; a new worker takes the rest of the batch.
// The tuning process itself never runs candidate code, but for one case below. Executables that
// cannot run in a forked process (GPU contexts; Executable::runs_in_forked_process) never go to a
// worker: they go to a measurement server, a process the runner forks when it is constructed (see
// tuning/measure/measure_server.h), which rebuilds each such candidate from its module in a fresh
// process and measures it there, with the same crash and timeout guarantees. That holds when the
// tuning process had not initialized CUDA when the server was forked
// (backends::CudaStateOfThisProcess): a GPU candidate then always runs in a process that
// initialized CUDA itself. Otherwise (an earlier build or availability check of a GPU backend in
// the same program, before the runner was constructed), no process forked from this one can use
// CUDA, so GPU candidates are measured in this process, which built them, without isolation
// (with a note on stderr, once per process).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backends/runtime/executable.h"
#include "ir/tensor.h"
#include "tuning/measure/measure.h"

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

class MeasureServer;

// Measures in forked worker processes and the measurement server (see the file comment). Construct
// it before this process first uses CUDA (to measure GPU candidates isolated), on a thread that
// outlives it (the server is killed when the thread that forked it ends; the next candidate for it
// then starts another). While it lives, the server is a child process of this one.
class ProcessRunner : public Runner {
 public:
  struct Options {
    // Which executables the measurement server measures (rebuilt from their module and build
    // options) instead of a forked worker. Empty: none but those that cannot run in a forked
    // process, which never go to a worker whatever this says.
    // (Tests send CPU executables there; candidates that must run in a forked worker, such as one
    // that only exists in this process's memory, must not be chosen.)
    std::function<bool(const backends::Executable&)> measure_in_server;
  };

  ProcessRunner();
  explicit ProcessRunner(Options options);
  ~ProcessRunner() override;
  std::vector<MeasureResult> Run(const std::vector<RunInput>& inputs,
                                 const MeasureOptions& options) override;

 private:
  Options options_;
  std::unique_ptr<MeasureServer> server_;
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
