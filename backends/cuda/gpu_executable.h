// A legalized module whose kernels carry GPU schedules (default_heuristic@cuda), built for the
// CUDA device: its kernels compiled to PTX and loaded, one device arena planned like the CPU
// executable's (backends/runtime/execution_plan.h), constants uploaded once; a run copies the
// inputs in, enqueues the kernels and the library calls (subgraphs placed on an external backend
// that runs on the device, cuBLAS) in order on one stream, waits once and copies the outputs out.
// Nothing crosses between host and device inside a run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/external/external_backend.h"
#include "backends/runtime/execution_plan.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::backends::cuda {

class GpuExecutable {
 public:
  // Builds `function` of `legalized` for `arch` (empty: DeviceArchitecture()). Error "no CUDA
  // device: ..." without a device, and an Error naming the node of a call placed on an external
  // backend that does not run on the device (oneDNN) or of an op call left.
  static std::unique_ptr<GpuExecutable> Build(const ir::IRModule& legalized,
                                              const std::string& arch = "",
                                              const std::string& function = "main");

  // Inputs in parameter order (shapes and dtypes checked); returns the outputs.
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);

  int64_t arena_bytes() const { return plan_.arena_bytes; }
  size_t num_kernel_calls() const { return plan_.calls.size(); }

 private:
  GpuExecutable() = default;

  ExecutionPlan plan_;
  std::vector<std::string> callees_;  // per call
  std::vector<std::string> ops_;      // per call, for errors
  std::map<std::string, std::unique_ptr<GpuKernel>> kernels_;
  std::map<std::string, std::unique_ptr<ExternalFunction>> externals_;
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<DeviceBuffer> arena_;
  std::map<int, DeviceBuffer> slot_buffers_;  // inputs, outputs and constants, by slot
  std::vector<uint64_t> slot_pointers_;
};

}  // namespace tandem::backends::cuda
