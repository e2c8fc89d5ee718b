// External backends: vendor libraries (oneDNN, cuBLAS) that run whole subgraphs of a model.
//
// A backend declares the subgraphs it takes as patterns (pattern.h), compiles a matched subgraph
// (a graph function marked with ir::kExternBackendAttr, called by a call_extern node) into an
// ExternalFunction once at build time, with its own layouts and weights packed then, and is called
// by the executor with the buffers of the call's operands and results. The reference meaning of a
// placed subgraph is its graph function, so every placement is checked against the interpreter.
//
// Backends register themselves in ExternalBackendRegistry::Global() under stable names; a backend
// compiled into this build may still be unavailable on this machine (no GPU for cuBLAS), which
// Available() says with a reason, so callers can skip it instead of failing.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/external/pattern.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/target.h"

namespace tandem::backends {

// A subgraph compiled by a backend. Run may be called many times, from one thread at a time.
class ExternalFunction {
 public:
  virtual ~ExternalFunction() = default;
  // `arguments`: the operand buffers in parameter order, then the result buffers. Buffers are in
  // the layouts the graph function's types name.
  virtual void Run(void* const* arguments) = 0;
  // What runs, for reports: the library's implementations and the reorders it needs per call.
  virtual std::string Describe() const = 0;
  // Layout conversions of activations done on every call (weights are packed once, at build).
  virtual int64_t reorders_per_call() const { return 0; }
  // Whether a process forked after this function was compiled can run it. False for functions
  // that hold a GPU context: CUDA cannot be used in a child forked from a process that
  // initialized it, so the process runner rebuilds and measures such executables in its
  // measurement server (tuning/measure/measure_server.h), whose processes never shared this one's
  // CUDA.
  virtual bool runs_in_forked_process() const { return true; }
  // Whether RunOnCudaDevice works: the function computes on the CUDA device from device memory,
  // so a GPU executable calls it between its own kernels without copies.
  virtual bool runs_on_cuda_device() const { return false; }
  // Enqueues the computation on `stream` (a CUstream, i.e. a cudaStream_t) of device 0's primary
  // context and returns without waiting. `device_arguments`: the device addresses of the operand
  // buffers in parameter order, then of the results, in the layouts the graph function's types
  // name. Only called when runs_on_cuda_device(); the default throws ir::Error.
  virtual void RunOnCudaDevice(const uint64_t* /*device_arguments*/, void* /*stream*/) {
    throw ir::Error(Describe() + " does not run on a CUDA device");
  }
  // Whether it runs its parallel work on OpenMP's team: an executable that calls such a function
  // runs its own kernels' loops there too (backends/runtime/thread_pool.h, OpenMPTeamScope).
  virtual bool runs_on_openmp() const { return false; }
};

class ExternalBackend {
 public:
  virtual ~ExternalBackend() = default;
  virtual std::string name() const = 0;
  // The version of the library behind the backend ("2.6.3"), known without initializing it (no
  // device is touched); part of every tuning record's key (tuning::TargetDescriptor), since
  // another version may run other code. "" for a backend with no library of its own.
  virtual std::string version() const { return ""; }
  // Fixes the settings of the backend's library that follow the target and that the library
  // holds once per process (oneDNN's instruction set), before its first use. Builds and tuning
  // sessions call it for their target before Available or Compile. Throws ir::Error when the
  // process already fixed them for a target this one cannot share. The default does nothing.
  virtual void PrepareForTarget(const ir::Target& target) const {}
  // Whether the backend can run on this machine; when not, `why` says what is missing.
  virtual bool Available(std::string* why = nullptr) const = 0;
  virtual const std::vector<Pattern>& patterns() const = 0;
  // Compiles `subgraph` (one of this backend's pattern matches, as a graph function whose
  // constants are the weights). Throws ir::Error naming what it cannot do.
  virtual std::unique_ptr<ExternalFunction> Compile(const ir::GraphFunction& subgraph) const = 0;
};

class ExternalBackendRegistry {
 public:
  // The registry with every backend compiled into this build.
  static ExternalBackendRegistry& Global();

  void Register(std::shared_ptr<const ExternalBackend> backend);
  // Null when there is no such backend.
  const ExternalBackend* Find(const std::string& name) const;
  // Throws ir::Error listing the known backends.
  const ExternalBackend& Get(const std::string& name) const;
  std::vector<std::string> Names() const;  // sorted
  // The backends whose Available() holds.
  std::vector<const ExternalBackend*> AvailableBackends() const;

 private:
  std::map<std::string, std::shared_ptr<const ExternalBackend>> backends_;
};

// Whether and where this process's CUDA was initialized, for the code that forks (tuning/measure):
// CUDA cannot be used in a process forked after its parent initialized it (its calls fail with
// "initialization error" or hang), and a process cannot tell that from CUDA itself without calling
// it. Every backend that uses CUDA calls MayInitializeCuda before its first CUDA call in a process.
enum class CudaState {
  kUntouched,            // no CUDA call yet in this process nor in the one it was forked from
  kInitializedHere,      // this process initialized CUDA (or is about to): it may use it
  kInheritedFromParent,  // forked from a process that had initialized CUDA: it must not use it
};
CudaState CudaStateOfThisProcess();
// Before a CUDA call: true when this process may use CUDA (it then counts as kInitializedHere from
// now on, in this process and in every process forked from it later); false, with `why` saying
// so, when it was forked from a process that had initialized CUDA. Thread-safe.
bool MayInitializeCuda(std::string* why = nullptr);

// Every match of every pattern of `backend` in `function`.
std::vector<PatternMatch> FindMatches(const ir::GraphFunction& function,
                                      const ExternalBackend& backend);

}  // namespace tandem::backends
