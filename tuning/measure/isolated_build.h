// One candidate's build, in this process or with its code generation in a child process:
// LocalBuilder's two ways of building (tuning/measure/builder.h). Internal to the tuning library.
#pragma once

#include <sys/types.h>

#include <functional>

#include "tuning/measure/builder.h"

namespace tandem::tuning {

// backends::Build in this process. Any exception is the output's error ("build failed: ...").
// Waits while an isolated build on another thread forks (see isolated_build.cc).
BuildOutput BuildInProcess(const BuildInput& input);

// Builds `input` with its kernel code generation in a child process that must end within
// `timeout_seconds` (> 0): legalizes in this process, lets the child (which inherits the
// legalized module) compile the kernels that this process's KernelObjectCache lacks, then links
// in this process. A candidate whose kernels are all cached has nothing to compile and forks no
// child, unless `in_child_before_compile` is set: then every candidate forks, and the hook runs
// in the child first. `*forked` (when given) says whether a child was forked. Guarantees: the
// child is always reaped (killed first when it is still running); its crash, non-zero exit or
// timeout is the output's error ("build crashed: signal 11 (SIGSEGV)", "build crashed: LLVM
// ERROR: ...", "build timed out after 2 s"); an error the build throws is the output's error as
// with BuildInProcess; never throws.
BuildOutput BuildIsolated(const BuildInput& input, double timeout_seconds,
                          const std::function<void(const BuildInput&)>& in_child_before_compile,
                          bool* forked = nullptr);

// fork() while no thread of this library is inside an in-process build (LLVM, the kernel object
// cache): the child then finds none of their locks held. The child runs `child_main`, which
// must end the child with _exit (it _exits with status 1 if `child_main` returns). Returns
// fork's result in the parent (-1 with `*fork_errno` set when it failed). For every fork of the
// tuning library whose child runs LLVM (isolated builds, the measurement server).
pid_t ForkOutsideBuilds(const std::function<void()>& child_main, int* fork_errno = nullptr);

}  // namespace tandem::tuning
