// The x86 instruction-set extensions an exported model may require of its host, and whether
// this host has them (CPUID, through the compiler's __builtin_cpu_supports). The exporter
// records which of these its target enables; the runtime refuses an artifact that needs one the
// host lacks, so that it never runs an instruction the CPU does not have.
#pragma once

#include <string>
#include <vector>

namespace tandem::backends {

// The extensions the runtime can check, in LLVM's (and GCC's) names: avx2, fma, avx512f ...
const std::vector<std::string>& CheckableCpuFeatures();

// Whether this CPU has `feature` (false for a name CheckableCpuFeatures does not list).
bool HostHasCpuFeature(const std::string& feature);

}  // namespace tandem::backends
