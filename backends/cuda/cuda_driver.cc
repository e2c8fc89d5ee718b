#include "backends/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <type_traits>
#include <utility>

#include "backends/external/external_backend.h"
#include "ir/error.h"

namespace tandem::backends::cuda {
namespace {

using ir::Error;

// The driver API's ABI, declared here so that this file needs no CUDA header: CUresult and the
// enums are ints, CUdevice is an int, CUdeviceptr an unsigned long long, handles are pointers to
// opaque structs.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

// Enum values copied from CUDA 13's cuda.h (the driver ABI's values; they never change).
constexpr int kDevAttrMaxThreadsPerBlock = 1;       // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
constexpr int kDevAttrMaxBlockDimX = 2;             // ..._MAX_BLOCK_DIM_X (Y = 3, Z = 4)
constexpr int kDevAttrMaxGridDimX = 5;              // ..._MAX_GRID_DIM_X (Y = 6, Z = 7)
constexpr int kDevAttrMaxRegistersPerBlock = 12;    // ..._MAX_REGISTERS_PER_BLOCK
constexpr int kDevAttrMultiprocessorCount = 16;     // ..._MULTIPROCESSOR_COUNT
constexpr int kDevAttrComputeCapabilityMajor = 75;  // ..._COMPUTE_CAPABILITY_MAJOR
constexpr int kDevAttrComputeCapabilityMinor = 76;  // ..._COMPUTE_CAPABILITY_MINOR
constexpr int kDevAttrMaxSharedMemoryPerBlockOptin = 97;  // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kFuncAttrMaxThreadsPerBlock = 0;            // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
constexpr int kFuncAttrNumRegs = 4;                       // CU_FUNC_ATTRIBUTE_NUM_REGS
constexpr int kFuncAttrMaxDynamicSharedSize = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int kJitErrorLogBuffer = 5;             // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSizeBytes = 6;    // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
constexpr unsigned kStreamDefault = 0;            // CU_STREAM_DEFAULT
constexpr unsigned kEventDefault = 0;             // CU_EVENT_DEFAULT
constexpr CUresult kErrorNotFound = 500;          // CUDA_ERROR_NOT_FOUND

// Errors after which the context is unusable (CUDA_ERROR_ILLEGAL_ADDRESS = 700,
// LAUNCH_TIMEOUT = 702, HARDWARE_STACK_ERROR = 714 ... LAUNCH_FAILED = 719).
bool IsStickyError(CUresult r) {
  return r == 700 || r == 702 || (r >= 714 && r <= 719);
}

// The loaded driver: its entry points, device 0, its primary context and description. Built once
// (magic static) and never destroyed: the driver may be torn down before other static objects.
struct Driver {
  std::string unavailable;  // empty when usable, else "no CUDA device: ..."
  CUdevice device = 0;
  CUcontext context = nullptr;
  DeviceInfo info;
  int64_t max_block[3] = {0, 0, 0};
  int64_t max_grid[3] = {0, 0, 0};

#define TANDEM_CUDA_ENTRY_POINTS(X)                                                            \
  X(cuGetErrorName, CUresult (*)(CUresult, const char**))                                      \
  X(cuGetErrorString, CUresult (*)(CUresult, const char**))                                    \
  X(cuInit, CUresult (*)(unsigned))                                                            \
  X(cuDriverGetVersion, CUresult (*)(int*))                                                    \
  X(cuDeviceGetCount, CUresult (*)(int*))                                                      \
  X(cuDeviceGet, CUresult (*)(CUdevice*, int))                                                 \
  X(cuDeviceGetName, CUresult (*)(char*, int, CUdevice))                                       \
  X(cuDeviceGetAttribute, CUresult (*)(int*, int, CUdevice))                                   \
  X(cuDeviceTotalMem_v2, CUresult (*)(size_t*, CUdevice))                                      \
  X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext*, CUdevice))                              \
  X(cuCtxSetCurrent, CUresult (*)(CUcontext))                                                  \
  X(cuCtxSynchronize, CUresult (*)())                                                          \
  X(cuMemAlloc_v2, CUresult (*)(CUdeviceptr*, size_t))                                         \
  X(cuMemFree_v2, CUresult (*)(CUdeviceptr))                                                   \
  X(cuMemcpyHtoD_v2, CUresult (*)(CUdeviceptr, const void*, size_t))                           \
  X(cuMemcpyDtoH_v2, CUresult (*)(void*, CUdeviceptr, size_t))                                 \
  X(cuMemsetD8_v2, CUresult (*)(CUdeviceptr, unsigned char, size_t))                           \
  X(cuModuleLoadDataEx, CUresult (*)(CUmodule*, const void*, unsigned, int*, void**))          \
  X(cuModuleGetFunction, CUresult (*)(CUfunction*, CUmodule, const char*))                     \
  X(cuModuleUnload, CUresult (*)(CUmodule))                                                    \
  X(cuFuncGetAttribute, CUresult (*)(int*, int, CUfunction))                                   \
  X(cuFuncSetAttribute, CUresult (*)(CUfunction, int, int))                                    \
  X(cuLaunchKernel, CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, \
                                 unsigned, unsigned, CUstream, void**, void**))                \
  X(cuStreamCreate, CUresult (*)(CUstream*, unsigned))                                         \
  X(cuStreamSynchronize, CUresult (*)(CUstream))                                               \
  X(cuStreamDestroy_v2, CUresult (*)(CUstream))                                                \
  X(cuEventCreate, CUresult (*)(CUevent*, unsigned))                                           \
  X(cuEventRecord, CUresult (*)(CUevent, CUstream))                                            \
  X(cuEventSynchronize, CUresult (*)(CUevent))                                                 \
  X(cuEventElapsedTime_v2, CUresult (*)(float*, CUevent, CUevent))                             \
  X(cuEventDestroy_v2, CUresult (*)(CUevent))
#define TANDEM_CUDA_DECLARE(name, type) std::type_identity_t<type> name = nullptr;
  TANDEM_CUDA_ENTRY_POINTS(TANDEM_CUDA_DECLARE)
#undef TANDEM_CUDA_DECLARE

  // "CUDA_ERROR_X (its description)".
  std::string Describe(CUresult r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName(r, &name) != 0 || name == nullptr) return fmt::format("CUresult {}", r);
    if (cuGetErrorString(r, &text) != 0 || text == nullptr) return name;
    return fmt::format("{} ({})", name, text);
  }
  // Throws "`what` failed: CUDA_ERROR_X (...)" when r is not CUDA_SUCCESS.
  void Check(CUresult r, const std::string& what) const {
    if (r != 0) throw Error(fmt::format("{} failed: {}", what, Describe(r)));
  }
};

// Fills `d`; returns the reason it is unusable ("" when usable).
std::string Open(Driver& d) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return why != nullptr ? why : "cannot open libcuda.so.1";
  }
#define TANDEM_CUDA_RESOLVE(name, type)                   \
  d.name = reinterpret_cast<type>(dlsym(library, #name)); \
  if (d.name == nullptr) return "libcuda.so.1 has no entry point " #name " (driver too old)";
  TANDEM_CUDA_ENTRY_POINTS(TANDEM_CUDA_RESOLVE)
#undef TANDEM_CUDA_RESOLVE
  // A process forked after its parent initialized CUDA must not use it (tuning/measure forks).
  std::string refused;
  if (!MayInitializeCuda(&refused)) return refused;
  try {
    d.Check(d.cuInit(0), "cuInit");
    int count = 0;
    d.Check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) return "no device found";
    d.Check(d.cuDeviceGet(&d.device, 0), "cuDeviceGet(0)");
    d.Check(d.cuDevicePrimaryCtxRetain(&d.context, d.device), "cuDevicePrimaryCtxRetain");
    DeviceInfo& info = d.info;
    char name[256] = {};
    d.Check(d.cuDeviceGetName(name, sizeof(name) - 1, d.device), "cuDeviceGetName");
    info.name = name;
    auto attribute = [&](int attr, const char* what) {
      int value = 0;
      d.Check(d.cuDeviceGetAttribute(&value, attr, d.device),
              fmt::format("cuDeviceGetAttribute({})", what));
      return value;
    };
    info.compute_capability_major = attribute(kDevAttrComputeCapabilityMajor, "cc major");
    info.compute_capability_minor = attribute(kDevAttrComputeCapabilityMinor, "cc minor");
    info.multiprocessor_count = attribute(kDevAttrMultiprocessorCount, "multiprocessors");
    info.max_threads_per_block = attribute(kDevAttrMaxThreadsPerBlock, "max threads/block");
    info.max_shared_memory_per_block =
        attribute(kDevAttrMaxSharedMemoryPerBlockOptin, "max shared memory/block (opt-in)");
    info.max_registers_per_block = attribute(kDevAttrMaxRegistersPerBlock, "max registers/block");
    for (int i = 0; i < 3; ++i) {
      d.max_block[i] = attribute(kDevAttrMaxBlockDimX + i, "max block dim");
      d.max_grid[i] = attribute(kDevAttrMaxGridDimX + i, "max grid dim");
    }
    d.Check(d.cuDriverGetVersion(&info.driver_version), "cuDriverGetVersion");
    size_t total = 0;
    d.Check(d.cuDeviceTotalMem_v2(&total, d.device), "cuDeviceTotalMem_v2");
    info.total_memory_bytes = static_cast<int64_t>(total);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

const Driver& Loaded() {
  static const Driver* driver = [] {
    auto* d = new Driver;
    std::string why = Open(*d);
    if (!why.empty()) d->unavailable = "no CUDA device: " + why;
    return d;
  }();
  return *driver;
}

// The driver with device 0's primary context current on this thread; Error when unavailable.
const Driver& Current() {
  const Driver& d = Loaded();
  if (!d.unavailable.empty()) throw Error(d.unavailable);
  d.Check(d.cuCtxSetCurrent(d.context), "cuCtxSetCurrent (device 0's primary context)");
  return d;
}

// The kernels `.entry name(...)` of a PTX module and the number of their .param declarations.
std::map<std::string, int> ParseEntries(const std::string& ptx) {
  std::string text;  // without comments
  for (size_t i = 0; i < ptx.size(); ++i) {
    if (ptx.compare(i, 2, "//") == 0) {
      i = ptx.find('\n', i);
      if (i == std::string::npos) break;
    } else if (ptx.compare(i, 2, "/*") == 0) {
      i = ptx.find("*/", i + 2);
      if (i == std::string::npos) break;
      ++i;
      text += ' ';
      continue;
    }
    text += ptx[i];
  }
  std::map<std::string, int> entries;
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  for (size_t at = text.find(".entry"); at != std::string::npos; at = text.find(".entry", at + 1)) {
    size_t i = at + 6;
    if ((at > 0 && !space(text[at - 1])) || i >= text.size() || !space(text[i])) continue;
    while (i < text.size() && space(text[i])) ++i;
    size_t begin = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) != 0 ||
                               text[i] == '_' || text[i] == '$' || text[i] == '.')) {
      ++i;
    }
    std::string name = text.substr(begin, i - begin);
    while (i < text.size() && space(text[i])) ++i;
    int params = 0;
    if (i < text.size() && text[i] == '(') {
      size_t close = text.find(')', i);
      for (size_t p = text.find(".param", i); p < close; p = text.find(".param", p + 1)) ++params;
    }
    if (!name.empty()) entries[name] = params;
  }
  return entries;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

}  // namespace

std::string CudaUnavailableReason() {
  return Loaded().unavailable;
}

bool CudaAvailable() {
  return Loaded().unavailable.empty();
}

std::string DeviceInfo::arch() const {
  return fmt::format("sm_{}{}", compute_capability_major, compute_capability_minor);
}

const DeviceInfo& Device() {
  const Driver& d = Loaded();
  if (!d.unavailable.empty()) throw Error(d.unavailable);
  return d.info;
}

DeviceBuffer::DeviceBuffer(size_t bytes) {
  const Driver& d = Current();
  if (bytes == 0) return;
  CUdeviceptr pointer = 0;
  d.Check(d.cuMemAlloc_v2(&pointer, bytes), fmt::format("cuMemAlloc_v2 ({} bytes)", bytes));
  pointer_ = pointer;
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ == 0) return;
  const Driver& d = Loaded();
  // Errors are ignored: a destructor cannot report them (the driver may be shutting down, or the
  // context be unusable after a kernel fault).
  d.cuCtxSetCurrent(d.context);
  d.cuMemFree_v2(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : pointer_(std::exchange(other.pointer_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    pointer_ = std::exchange(other.pointer_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::CheckRange(const char* what, size_t bytes, size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset) {
    throw Error(fmt::format("DeviceBuffer::{}: {} bytes at offset {} exceed the buffer's {} bytes",
                            what, bytes, offset, bytes_));
  }
}

void DeviceBuffer::CopyFromHost(const void* data, size_t bytes, size_t offset) {
  CheckRange("CopyFromHost", bytes, offset);
  if (bytes == 0) return;
  const Driver& d = Current();
  d.Check(d.cuMemcpyHtoD_v2(pointer_ + offset, data, bytes),
          fmt::format("cuMemcpyHtoD_v2 ({} bytes)", bytes));
}

void DeviceBuffer::CopyToHost(void* data, size_t bytes, size_t offset) const {
  CheckRange("CopyToHost", bytes, offset);
  if (bytes == 0) return;
  const Driver& d = Current();
  d.Check(d.cuMemcpyDtoH_v2(data, pointer_ + offset, bytes),
          fmt::format("cuMemcpyDtoH_v2 ({} bytes)", bytes));
}

void DeviceBuffer::Zero() {
  if (bytes_ == 0) return;
  const Driver& d = Current();
  d.Check(d.cuMemsetD8_v2(pointer_, 0, bytes_), fmt::format("cuMemsetD8_v2 ({} bytes)", bytes_));
}

std::unique_ptr<CudaModule> CudaModule::Load(const std::string& ptx) {
  const Driver& d = Current();
  std::unique_ptr<CudaModule> module(new CudaModule);
  std::string log(16384, '\0');
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
  void* values[] = {log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(log.size() - 1))};
  CUmodule handle = nullptr;
  CUresult r = d.cuModuleLoadDataEx(&handle, ptx.c_str(), 2, options, values);
  if (r != 0) {
    log.resize(log.find('\0'));
    throw Error(fmt::format("cuModuleLoadDataEx (JIT-compiling PTX for {}) failed: {}\n{}",
                            d.info.arch(), d.Describe(r), log.empty() ? "(no JIT log)" : log));
  }
  module->module_ = handle;
  CUstream stream = nullptr;
  d.Check(d.cuStreamCreate(&stream, kStreamDefault), "cuStreamCreate");
  module->stream_ = stream;
  for (const auto& [name, params] : ParseEntries(ptx)) {
    CUfunction function = nullptr;
    r = d.cuModuleGetFunction(&function, handle, name.c_str());
    if (r == kErrorNotFound) continue;
    d.Check(r, fmt::format("cuModuleGetFunction('{}')", name));
    Kernel& kernel = module->kernels_[name];
    kernel.function = function;
    kernel.parameter_count = params;
    int value = 0;
    d.Check(d.cuFuncGetAttribute(&value, kFuncAttrMaxThreadsPerBlock, function),
            fmt::format("cuFuncGetAttribute('{}', MAX_THREADS_PER_BLOCK)", name));
    kernel.max_threads_per_block = value;
    d.Check(d.cuFuncGetAttribute(&value, kFuncAttrMaxDynamicSharedSize, function),
            fmt::format("cuFuncGetAttribute('{}', MAX_DYNAMIC_SHARED_SIZE_BYTES)", name));
    kernel.dynamic_shared_limit = value;
  }
  return module;
}

CudaModule::~CudaModule() {
  const Driver& d = Loaded();
  d.cuCtxSetCurrent(d.context);  // errors ignored: see ~DeviceBuffer
  if (stream_ != nullptr) {
    d.cuStreamSynchronize(static_cast<CUstream>(stream_));
    d.cuStreamDestroy_v2(static_cast<CUstream>(stream_));
  }
  if (module_ != nullptr) d.cuModuleUnload(static_cast<CUmodule>(module_));
}

bool CudaModule::HasKernel(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return kernels_.count(name) != 0;
}

std::vector<std::string> CudaModule::KernelNames() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, kernel] : kernels_) names.push_back(name);
  return names;
}

CudaModule::Kernel& CudaModule::Find(const std::string& name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    std::vector<std::string> names;
    for (const auto& [known, kernel] : kernels_) names.push_back(known);
    throw Error(fmt::format("CUDA module has no kernel '{}'; its kernels: {}", name, Join(names)));
  }
  return it->second;
}

CudaStream::CudaStream() {
  const Driver& d = Current();
  CUstream stream = nullptr;
  d.Check(d.cuStreamCreate(&stream, kStreamDefault), "cuStreamCreate");
  stream_ = stream;
}

CudaStream::~CudaStream() {
  const Driver& d = Loaded();
  d.cuCtxSetCurrent(d.context);  // errors ignored: see ~DeviceBuffer
  d.cuStreamSynchronize(static_cast<CUstream>(stream_));
  d.cuStreamDestroy_v2(static_cast<CUstream>(stream_));
}

void CudaStream::Synchronize(const std::string& last_work) const {
  const Driver& d = Current();
  CUresult r = d.cuStreamSynchronize(static_cast<CUstream>(stream_));
  if (r == 0) return;
  throw Error(fmt::format(
      "cuStreamSynchronize failed after {} (the last work enqueued on the stream): {}{}", last_work,
      d.Describe(r),
      IsStickyError(r) ? "; the CUDA context is unusable for the rest of this process" : ""));
}

void CudaModule::Launch(const std::string& name, const LaunchDims& dims,
                        const std::vector<uint64_t>& pointers, void* stream) const {
  const Driver& d = Current();
  std::lock_guard lock(mutex_);
  Kernel& kernel = Find(name);
  auto fail = [&](const std::string& why) {
    throw Error(fmt::format("cannot launch kernel '{}': {}", name, why));
  };
  if (static_cast<int>(pointers.size()) != kernel.parameter_count) {
    fail(fmt::format("it has {} parameters, {} pointers given", kernel.parameter_count,
                     pointers.size()));
  }
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    const char axis = "xyz"[i];
    if (dims.grid[i] < 1 || dims.grid[i] > d.max_grid[i]) {
      fail(fmt::format("grid.{} = {} is outside [1, {}]", axis, dims.grid[i], d.max_grid[i]));
    }
    if (dims.block[i] < 1 || dims.block[i] > d.max_block[i]) {
      fail(fmt::format("block.{} = {} is outside [1, {}]", axis, dims.block[i], d.max_block[i]));
    }
    threads *= dims.block[i];
  }
  const int64_t max_threads = std::min(d.info.max_threads_per_block, kernel.max_threads_per_block);
  if (threads > max_threads) {
    fail(fmt::format("{} threads per block exceed its maximum of {} (device: {})", threads,
                     max_threads, d.info.max_threads_per_block));
  }
  if (dims.dynamic_shared_bytes < 0 ||
      dims.dynamic_shared_bytes > d.info.max_shared_memory_per_block) {
    fail(fmt::format("{} bytes of dynamic shared memory are outside [0, {}]",
                     dims.dynamic_shared_bytes, d.info.max_shared_memory_per_block));
  }
  auto* function = static_cast<CUfunction>(kernel.function);
  if (dims.dynamic_shared_bytes > kernel.dynamic_shared_limit) {
    d.Check(d.cuFuncSetAttribute(function, kFuncAttrMaxDynamicSharedSize,
                                 static_cast<int>(dims.dynamic_shared_bytes)),
            fmt::format("cuFuncSetAttribute('{}', MAX_DYNAMIC_SHARED_SIZE_BYTES, {})", name,
                        dims.dynamic_shared_bytes));
    kernel.dynamic_shared_limit = dims.dynamic_shared_bytes;
  }
  std::vector<uint64_t> values = pointers;
  std::vector<void*> arguments;
  for (uint64_t& value : values) arguments.push_back(&value);
  auto u = [](int64_t v) { return static_cast<unsigned>(v); };
  d.Check(d.cuLaunchKernel(function, u(dims.grid[0]), u(dims.grid[1]), u(dims.grid[2]),
                           u(dims.block[0]), u(dims.block[1]), u(dims.block[2]),
                           u(dims.dynamic_shared_bytes),
                           static_cast<CUstream>(stream != nullptr ? stream : stream_),
                           arguments.empty() ? nullptr : arguments.data(), nullptr),
          fmt::format("cuLaunchKernel('{}', grid {}x{}x{}, block {}x{}x{}, {} shared bytes)", name,
                      dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0], dims.block[1],
                      dims.block[2], dims.dynamic_shared_bytes));
  last_launched_ = name;
}

void CudaModule::Synchronize() const {
  const Driver& d = Current();
  CUresult r = d.cuStreamSynchronize(static_cast<CUstream>(stream_));
  if (r == 0) return;
  std::string last;
  {
    std::lock_guard lock(mutex_);
    last = last_launched_.empty() ? "none" : "'" + last_launched_ + "'";
  }
  throw Error(fmt::format(
      "cuStreamSynchronize failed after kernel {} (the last launched on this stream): {}{}", last,
      d.Describe(r),
      IsStickyError(r) ? "; the CUDA context is unusable for the rest of this process" : ""));
}

double CudaModule::TimeMilliseconds(const std::function<void()>& run) const {
  const Driver& d = Current();
  CUevent events[2] = {nullptr, nullptr};
  struct Release {
    const Driver& d;
    CUevent* events;
    ~Release() {
      for (int i = 0; i < 2; ++i) {
        if (events[i] != nullptr) d.cuEventDestroy_v2(events[i]);
      }
    }
  } release{d, events};
  for (CUevent& event : events) d.Check(d.cuEventCreate(&event, kEventDefault), "cuEventCreate");
  auto* stream = static_cast<CUstream>(stream_);
  d.Check(d.cuEventRecord(events[0], stream), "cuEventRecord (start)");
  run();
  Current();  // `run` may have switched this thread's context
  d.Check(d.cuEventRecord(events[1], stream), "cuEventRecord (stop)");
  CUresult r = d.cuEventSynchronize(events[1]);
  if (r != 0) Synchronize();  // names the kernel when one faulted
  d.Check(r, "cuEventSynchronize");
  float milliseconds = 0;
  d.Check(d.cuEventElapsedTime_v2(&milliseconds, events[0], events[1]), "cuEventElapsedTime_v2");
  return milliseconds;
}

int CudaModule::Registers(const std::string& name) const {
  const Driver& d = Current();
  std::lock_guard lock(mutex_);
  int registers = 0;
  d.Check(d.cuFuncGetAttribute(&registers, kFuncAttrNumRegs,
                               static_cast<CUfunction>(Find(name).function)),
          fmt::format("cuFuncGetAttribute('{}', NUM_REGS)", name));
  return registers;
}

#undef TANDEM_CUDA_ENTRY_POINTS

}  // namespace tandem::backends::cuda
