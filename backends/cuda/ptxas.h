// The CUDA toolkit's PTX assembler, run on generated PTX: whether the toolkit accepts it for an
// architecture, and what the kernels use (registers, spills, shared memory). Code generation
// never needs it; tests and `tandem compile --emit ptx` do.
#pragma once

#include <string>

namespace tandem::backends::cuda {

// The ptxas this build found with the CUDA toolkit; empty when it found none.
std::string PtxasPath();

// What ptxas said about a PTX module.
struct PtxasReport {
  bool accepted = false;
  std::string log;           // ptxas's output (errors, or its -v resource report)
  int max_registers = 0;     // the most registers one entry uses
  int64_t spill_bytes = 0;   // spill stores plus spill loads, summed over the entries
  int64_t shared_bytes = 0;  // the most static shared memory one entry uses
};

// Assembles `ptx` for `arch` ("sm_90") with `ptxas -v`. Error when this build has no ptxas or it
// cannot be run; a module ptxas rejects is a report with accepted == false and its log.
PtxasReport AssemblePtx(const std::string& ptx, const std::string& arch);

}  // namespace tandem::backends::cuda
