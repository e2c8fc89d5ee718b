// The builder: compiles candidate modules into executables, several at a time.
//
// Shared by every tuning pass through the tuning session. A failure to build one candidate (an
// ir::Error or any exception from legalization or code generation, and with LocalBuilder's
// isolation a crash or a hang of its code generation) is that candidate's BuildOutput::error;
// the other candidates are unaffected.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/runtime/executable.h"
#include "ir/graph.h"

namespace tandem::tuning {

struct BuildInput {
  ir::IRModule module;
  backends::BuildOptions options;
};

struct BuildOutput {
  std::shared_ptr<backends::Executable> executable;  // null when the build failed
  std::string error;                                 // why it failed ("" on success)
  double seconds = 0;                                // wall time of this build
  bool ok() const { return executable != nullptr; }
};

class Builder {
 public:
  virtual ~Builder() = default;
  // One output per input, in order.
  virtual std::vector<BuildOutput> Build(const std::vector<BuildInput>& inputs) = 0;
};

// Builds several candidates at a time, on threads of this process. By default each build is
// isolated: its LLVM code generation (where a build can crash or hang) runs in a child process
// under a timeout, and only legalization, the linking of the compiled kernels and the
// compilation of call_extern subgraphs by their backends run in this process. A candidate whose
// kernels are all in this process's KernelObjectCache has nothing to compile and is built
// without a child. A child that crashes, exits with an error or exceeds the timeout is killed and
// reaped, and that candidate's error says what happened ("build crashed: signal 11 (SIGSEGV)",
// "build timed out after 60 s"); the other candidates are unaffected. See
// tuning/measure/isolated_build.h.
// Outputs are in input order whatever order the builds finish in.
class LocalBuilder : public Builder {
 public:
  struct Options {
    // Builds at a time (0: one per core).
    int num_workers = 0;
    // Whether code generation runs in a child process; false: everything in this process (a
    // crash ends it, a hang blocks it), for platforms without fork and for debugging.
    bool isolate = true;
    // Wall-clock seconds one isolated candidate may spend in its child process (> 0).
    double timeout_seconds = 60;
    // Fault injection for tests: runs in the child process of an isolated build, before it
    // compiles the candidate (e.g. raise(SIGSEGV) for some candidates, or sleep forever); when
    // set, every candidate gets a child, cached or not. Only with `isolate` (an ir::Error
    // otherwise).
    std::function<void(const BuildInput&)> in_child_before_compile;
  };

  LocalBuilder() : LocalBuilder(Options{}) {}
  // Isolated builds on `num_workers` threads (0: one per core), the default timeout.
  explicit LocalBuilder(int num_workers) : LocalBuilder(Options{.num_workers = num_workers}) {}
  // ir::Error on bad options (a negative number of workers, a timeout that is not > 0).
  explicit LocalBuilder(Options options);
  std::vector<BuildOutput> Build(const std::vector<BuildInput>& inputs) override;

  // Child processes this builder has forked (isolated candidates with something to compile).
  int64_t child_processes() const { return child_processes_.load(); }

 private:
  Options options_;
  std::atomic<int64_t> child_processes_{0};
};

}  // namespace tandem::tuning
