// NVPTX code generation: a kernel function whose loops are bound to GPU thread indices
// (blockIdx.x/y/z, threadIdx.x/y/z; kernels/default_schedule.h ApplyGpuDefaultSchedule) becomes
// PTX for one NVIDIA architecture, through LLVM's NVPTX back end.
//
// A kernel function turns into one launch per statement of its root block, in order (a
// statement is typically one block's loop nest: a softmax is three launches). Each launch is a
// PTX entry `void <kernel>_<k>(ptr p0, ..., ptr pN)` taking the kernel's parameters followed by
// its scratch buffers (the buffers its root block allocates, which the launches pass between
// each other through device memory). A launch's grid and block extents are the largest extents
// of the loops bound to each index in that statement; a loop whose extent is below its index's
// launch extent runs only where the index is below its extent. A statement without bound loops
// runs on one thread.
//
// Generated code computes what backends::RunKernelReference computes (up to floating-point
// rounding: a*b+c may be fused, exp/log/pow/erf/tanh of f64 and exp/log/pow of f32 come from
// the toolkit's libdevice, erf/tanh/sigmoid of f32 use the same approximations as the CPU code),
// with the differences documented for CPU code (backends/llvm/codegen.h) and these: parallel and
// vectorized loops run as serial loops inside each thread; a "local" buffer lives in the
// thread's own memory (at most 64 KiB); a block may allocate no other buffer (Error).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"

namespace tandem::backends {

// Error naming the supported architectures (ir::CudaArchitectures) when `arch` is not one of
// them.
void CheckCudaArchitecture(const std::string& arch);

// One launch of a GPU program: its PTX entry, grid and block extents (x, y, z), and the kernel
// function it was generated from (the statement as the body of a root block; parameters: the
// kernel's, then the scratch buffers).
struct GpuLaunchSpec {
  std::string entry;
  std::array<int64_t, 3> grid{1, 1, 1};
  std::array<int64_t, 3> block{1, 1, 1};
  ir::KernelFunction function;
};

// A kernel function compiled for a GPU: PTX text holding one entry per launch.
struct GpuProgram {
  std::string name;
  std::string arch;
  std::vector<ir::Buffer> params;  // the kernel's parameters (inputs, then outputs)
  int num_outputs = 1;
  std::vector<ir::Buffer> scratch;  // device buffers the launches share (zero-filled once)
  std::vector<GpuLaunchSpec> launches;
  std::string ptx;
};

struct GpuCodegenOptions {
  std::string arch = "sm_80";  // one of ir::CudaArchitectures()
  int opt_level = 3;           // 0..3
};

// The launches of `kernel` without code (for tests and the kernel interpreter's view of a
// launch). Error when the kernel's body is not a root block, or a launch would have more than
// 1024 threads per block.
std::vector<GpuLaunchSpec> SplitGpuLaunches(const ir::KernelFunction& kernel);

// Compiles `kernel` to PTX for options.arch. Errors (unsupported construct, an unknown
// architecture, libdevice missing when a math function needs it) name the kernel.
GpuProgram CompileGpuKernel(const ir::KernelFunction& kernel,
                            const GpuCodegenOptions& options = {});

}  // namespace tandem::backends
