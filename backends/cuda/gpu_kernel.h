// A kernel function compiled for a GPU (backends/llvm/nvptx_codegen.h), loaded on the CUDA
// device and run on host tensors: the GPU counterpart of CompiledModule::Run, for tests, the
// kernel benchmarks and measurement.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_driver.h"
#include "backends/llvm/nvptx_codegen.h"
#include "ir/tensor.h"

namespace tandem::backends::cuda {

// The device architecture code for this process's CUDA device should be generated for: the
// newest of ir::CudaArchitectures() the device runs ("sm_90" on a Hopper, "sm_80" on an Ampere).
// Error "no CUDA device: ..." without a device, or when the device is older than sm_80.
std::string DeviceArchitecture();

class GpuKernel {
 public:
  // Loads the program's PTX and allocates its scratch buffers (parameter buffers are allocated
  // by the first Run). Error "no CUDA device: ..." without a device; the driver's JIT log when it
  // rejects the PTX.
  explicit GpuKernel(GpuProgram program);

  // Zero-fills the scratch buffers and enqueues every launch on the module's stream (or on
  // `stream`, a CudaStream's handle) with `params` as the device pointers of the parameters
  // (inputs, then outputs; the caller keeps them alive until the stream is synchronized).
  void Launch(const std::vector<uint64_t>& params, void* stream = nullptr);
  void Synchronize() const { module_->Synchronize(); }
  const CudaModule& module() const { return *module_; }

  // Copies `inputs` (one per input parameter, in order; shapes and dtypes checked) to the device,
  // zero-fills the outputs and scratch buffers as the interpreter would, runs every launch in
  // order and returns the outputs.
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);

  // Milliseconds per run of the launches alone (operands already on the device), the median of
  // `repeat` timed runs after one warm-up, timed with CUDA events.
  double TimeMilliseconds(const std::vector<ir::Tensor>& inputs, int repeat = 10);

  const GpuProgram& program() const { return program_; }

 private:
  void Upload(const std::vector<ir::Tensor>& inputs);
  void LaunchAll(const std::vector<uint64_t>& pointers, void* stream = nullptr);

  GpuProgram program_;
  std::unique_ptr<CudaModule> module_;
  std::vector<DeviceBuffer> params_;   // Run's parameter buffers
  std::vector<DeviceBuffer> scratch_;  // the program's scratch buffers
  std::vector<uint64_t> pointers_;     // parameters, then scratch buffers
};

}  // namespace tandem::backends::cuda
