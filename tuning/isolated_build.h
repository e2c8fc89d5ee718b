// One candidate's build, in this process or with its code generation in a child process:
// LocalBuilder's two ways of building (tuning/builder.h). Internal to the tuning library.
#pragma once

#include <functional>

#include "tuning/builder.h"

namespace tandem::tuning {

// backends::Build in this process. Any exception is the output's error ("build failed: ...").
// Waits while an isolated build on another thread forks (see isolated_build.cc).
BuildOutput BuildInProcess(const BuildInput& input);

// Builds `input` with its legalization and kernel code generation in a child process that must
// end within `timeout_seconds` (> 0), then links the kernels it compiled in this process
// (BuildInProcess, which then only links). `in_child_before_compile`, when set, runs in the child
// first. Guarantees: the child is always reaped (killed first when it is still running); its
// crash, non-zero exit or timeout is the output's error ("build crashed: signal 11 (Segmentation
// fault)", "build crashed: LLVM ERROR: ...", "build timed out after 2 s"); an error the build
// throws is the output's error as with BuildInProcess; never throws.
BuildOutput BuildIsolated(const BuildInput& input, double timeout_seconds,
                          const std::function<void(const BuildInput&)>& in_child_before_compile);

}  // namespace tandem::tuning
