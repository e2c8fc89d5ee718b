// Target: what a module is compiled for. Passes, code generation and the tuning database all
// read it; a tuning record is only reused for an equal target descriptor.
#pragma once

#include <string>
#include <vector>

namespace tandem::ir {

struct Target {
  std::string kind = "llvm";  // "llvm" (x86-64 CPU) or "cuda"
  std::string cpu = "host";   // LLVM CPU name; "host" resolves to the machine's CPU
  std::string features;       // extra LLVM subtarget features ("+avx512f,...")
  int num_threads = 0;        // 0: every hardware thread
  int vector_bits = 0;        // preferred vector width; 0: the target's default
  // cuda only: the GPU architecture code is generated for (one of CudaArchitectures()); empty:
  // the oldest supported one, whose code runs on every supported GPU.
  std::string arch;

  bool operator==(const Target& other) const = default;
};

// The GPU architectures the cuda target generates code for ("sm_80", "sm_90"), oldest first.
const std::vector<std::string>& CudaArchitectures();

// "llvm -cpu=host -threads=2", "cuda -arch=sm_90" (fields at their default are left out).
std::string ToString(const Target& target);
// Parses the form ToString prints; unknown keys, options of the other kind and an unknown -arch
// (the Error names the supported ones) are Errors.
Target ParseTarget(const std::string& text);

}  // namespace tandem::ir
