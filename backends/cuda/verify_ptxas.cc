#include "backends/cuda/verify_ptxas.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"

namespace tandem::backends::cuda {

namespace {

class VerifyPtxas : public kernels::Postprocessor {
 public:
  explicit VerifyPtxas(const kernels::SearchTarget& target) : target_(target) {}

  std::string name() const override { return "verify_ptxas"; }

  // Steps: 1. PTX for the target's architecture; 2. ptxas's report; 3. the limits.
  bool Apply(kernels::Schedule& schedule) const override {
    if (PtxasPath().empty()) return true;
    try {
      GpuProgram program = CompileGpuKernel(
          schedule.function(), {target_.gpu_arch.empty() ? "sm_80" : target_.gpu_arch, 3});
      PtxasReport report = AssemblePtx(program.ptx, program.arch);
      return PtxasLimitViolation(report, program, target_).empty();
    } catch (const ir::Error&) {
      return false;
    }
  }

 private:
  kernels::SearchTarget target_;
};

}  // namespace

std::string PtxasLimitViolation(const PtxasReport& report, const GpuProgram& program,
                                const kernels::SearchTarget& target) {
  if (!report.accepted) return "ptxas rejects the PTX";
  if (report.spill_bytes > 0) return fmt::format("{} bytes of spills", report.spill_bytes);
  if (report.max_registers > target.max_registers_per_thread) {
    return fmt::format("{} registers per thread (at most {})", report.max_registers,
                       target.max_registers_per_thread);
  }
  int64_t threads = 1;
  for (const GpuLaunchSpec& launch : program.launches) {
    threads = std::max(threads, launch.block[0] * launch.block[1] * launch.block[2]);
  }
  if (report.max_registers * threads > target.registers_per_block) {
    return fmt::format("{} registers for {} threads per block (at most {})", report.max_registers,
                       threads, target.registers_per_block);
  }
  if (report.shared_bytes > target.max_shared_memory_per_block) {
    return fmt::format("{} bytes of shared memory per block (at most {})", report.shared_bytes,
                       target.max_shared_memory_per_block);
  }
  return "";
}

void RegisterVerifyPtxas() {
  kernels::RegisterPostprocessor("verify_ptxas", [](const kernels::SearchTarget& target) {
    return std::make_shared<const VerifyPtxas>(target);
  });
}

}  // namespace tandem::backends::cuda
