// The CUDA driver API as Tandem's GPU code uses it: device 0, device memory, PTX modules, kernel
// launches and event timing.
//
// No link-time dependency on the driver: libcuda.so.1 is opened with dlopen on first use (once
// per process, thread-safe) and its entry points are looked up by their exported names (the
// `_v2` ones where the driver has them). This file compiles and links on machines without the
// CUDA toolkit or a GPU; there, CudaAvailable() is false and every call that needs the device
// throws.
//
// Everything runs on device 0 in its primary context (cuDevicePrimaryCtxRetain, retained once
// and kept for the life of the process), which each entry point makes current on the calling
// thread, so the types here may be used from any thread (a CudaModule's bookkeeping is locked,
// but work launched from several threads interleaves on its one stream). Every failure is a
// tandem::ir::Error whose message says what failed and, for a driver call, the driver's error name
// and string (e.g. "cuMemAlloc_v2 (1024 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)").
//
// Initializing the driver (the first call of any function here, CudaUnavailableReason and
// CudaAvailable included, on a machine with libcuda.so.1) makes the process unfit to fork
// children that use the GPU: CUDA does not work in a forked child of a process that called
// cuInit. Run GPU work in the process itself, or fork before the first call (or exec after).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tandem::backends::cuda {

// Empty when this process can use a CUDA device; otherwise why not, starting "no CUDA device: "
// (libcuda.so.1 cannot be opened or lacks an entry point, cuInit or a device query failed, or
// "no device found"). The first call loads and initializes the driver; the answer never changes
// afterwards.
std::string CudaUnavailableReason();
bool CudaAvailable();

// The driver counts as initialized for CudaStateOfThisProcess (backends/external/
// external_backend.h) once the first of these calls asked it; in a process forked after its
// parent initialized CUDA they report CUDA unavailable without calling the driver.

// What Tandem needs to know about device 0 to generate and launch code for it.
struct DeviceInfo {
  std::string name;  // e.g. "NVIDIA H200"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;
  int max_threads_per_block = 0;
  // The opt-in maximum of shared memory per block (static + dynamic): what a kernel may use after
  // raising its CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (CudaModule::Launch does that).
  int64_t max_shared_memory_per_block = 0;
  int max_registers_per_block = 0;
  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor (13000 for CUDA 13.0)
  int64_t total_memory_bytes = 0;

  // The PTX/SASS architecture name of the compute capability, e.g. "sm_90".
  std::string arch() const;
};

// Device 0. Throws Error "no CUDA device: ..." when CudaAvailable() is false.
const DeviceInfo& Device();

// An allocation of device memory on device 0 (cuMemAlloc_v2; at least 256-byte aligned), freed
// when destroyed. A zero-byte buffer allocates nothing and has pointer() 0. Movable (the source
// is left empty), not copyable. Copies are synchronous with respect to the host and ordered after
// earlier work of every CudaModule stream (those streams synchronize with the legacy default
// stream the copies run on), so CopyToHost after Launch sees the kernel's results; a kernel's
// fault may therefore surface as an Error of a copy.
class DeviceBuffer {
 public:
  // Throws Error when CUDA is unavailable or the allocation fails.
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // The device address (a CUdeviceptr), what kernels receive as a pointer argument.
  uint64_t pointer() const { return pointer_; }
  size_t bytes() const { return bytes_; }

  // Copy `bytes` bytes between host memory and this buffer at byte `offset`. A range outside the
  // buffer is an Error (nothing is copied).
  void CopyFromHost(const void* data, size_t bytes, size_t offset = 0);
  void CopyToHost(void* data, size_t bytes, size_t offset = 0) const;
  // Sets every byte to 0.
  void Zero();

 private:
  void CheckRange(const char* what, size_t bytes, size_t offset) const;
  uint64_t pointer_ = 0;
  size_t bytes_ = 0;
};

// Grid and block extents of a launch (x, y, z) and its dynamic shared memory in bytes.
struct LaunchDims {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t dynamic_shared_bytes = 0;
};

// A stream of device 0 (cuStreamCreate with default flags: it synchronizes with the legacy
// default stream that DeviceBuffer's copies use), destroyed after waiting for it. An executable
// runs all its kernels and library calls on one, in order, and waits once.
class CudaStream {
 public:
  // Throws Error when CUDA is unavailable.
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  // The CUstream, which is also a cudaStream_t for the CUDA runtime and its libraries.
  void* handle() const { return stream_; }
  // Waits for the work on the stream. A fault is an Error saying what ran last (`last_work`).
  void Synchronize(const std::string& last_work) const;

 private:
  void* stream_ = nullptr;
};

// A PTX module loaded (JIT-compiled by the driver) on device 0, with its own stream
// (cuStreamCreate with default flags: it synchronizes with the legacy default stream). Unloaded
// (stream destroyed) when destroyed, after waiting for its stream; errors on the way out are
// ignored.
class CudaModule {
 public:
  // JIT-compiles `ptx` (the text of a PTX module). Throws Error when CUDA is unavailable or the
  // driver rejects the module; the message then includes the JIT error log.
  static std::unique_ptr<CudaModule> Load(const std::string& ptx);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // Whether the module has an entry (`.entry name`) called `name`.
  bool HasKernel(const std::string& name) const;
  // The module's entries, sorted by name.
  std::vector<std::string> KernelNames() const;

  // Launches kernel `name` with one device pointer argument per entry of `pointers` (each passed
  // as a .param .u64), asynchronously on this module's stream. Checked before the launch, each an
  // Error: the kernel exists (the message names the kernels the module has), the number of
  // pointers equals the number of its .param declarations, every grid and block extent is at
  // least 1 and within the device's limits, the block's thread count is at most the device's
  // (and the kernel's) maximum, and the dynamic shared memory is within the device's opt-in
  // maximum. A kernel that faults while running is reported by a later Synchronize, copy or
  // timing, not here. `stream` (a CudaStream's handle) runs the launch on that stream instead.
  void Launch(const std::string& name, const LaunchDims& dims,
              const std::vector<uint64_t>& pointers, void* stream = nullptr) const;

  // Waits for all work launched on this module's stream. A kernel fault (e.g. an illegal
  // address) is an Error naming the last kernel launched; after such a fault the device's context
  // is unusable for the rest of the process (the message says so), every later call fails.
  void Synchronize() const;

  // Times `run` (which launches work on this module's stream) with CUDA events: the milliseconds
  // between an event recorded on the stream before and one recorded after `run`, waiting for the
  // latter. An exception of `run` propagates (the events are released).
  double TimeMilliseconds(const std::function<void()>& run) const;

  // Registers per thread of kernel `name` (CU_FUNC_ATTRIBUTE_NUM_REGS). Error for an unknown
  // name.
  int Registers(const std::string& name) const;

 private:
  struct Kernel {
    void* function = nullptr;  // CUfunction
    int parameter_count = 0;
    int max_threads_per_block = 0;     // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    int64_t dynamic_shared_limit = 0;  // current CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  };
  CudaModule() = default;
  Kernel& Find(const std::string& name) const;

  void* module_ = nullptr;  // CUmodule
  void* stream_ = nullptr;  // CUstream
  mutable std::mutex mutex_;
  mutable std::map<std::string, Kernel> kernels_;
  mutable std::string last_launched_;
};

}  // namespace tandem::backends::cuda
