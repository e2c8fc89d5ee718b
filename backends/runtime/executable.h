// Build and Executable: a module compiled to machine code plus a static execution plan.
//
// Build legalizes the module's graph function (op calls become kernels with default
// schedules unless they already are call_kernel nodes), compiles every kernel through LLVM into
// one JIT module, compiles every call_extern's subgraph with its backend (once per callee, with
// weights packed then), and plans execution: a list of kernel calls with their argument slots,
// where every intermediate tensor lives at a fixed offset of one arena whose regions are reused
// once their tensor is dead (liveness over the call order, best-fit by size). Running allocates
// nothing but the returned outputs (RunInto allocates nothing at all).
#pragma once

#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/external/external_backend.h"
#include "backends/llvm/codegen.h"
#include "backends/runtime/execution_plan.h"
#include "ir/graph.h"
#include "ir/target.h"
#include "ir/tensor.h"
#include "kernels/legalize.h"

namespace tandem::backends {

struct BuildOptions {
  std::string function = "main";
  CodegenOptions codegen;
  kernels::LegalizeOptions legalize;
};

// Build options generating code for `target` (its CPU, features and preferred vector width), as
// the tuning builder does, so that what `tandem run` and `tandem compile --emit` build matches
// what tuning measured for that target.
BuildOptions BuildOptionsFor(const ir::Target& target, std::string function = "main");

// Time spent in one kernel over the runs made with profiling on.
struct KernelProfile {
  std::string kernel;
  std::string op;
  int64_t calls = 0;
  double total_seconds = 0;
};

class Executable {
 public:
  // Inputs in parameter order; shapes and dtypes are checked (Error naming the input).
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);
  // Writes the outputs into `outputs` (one tensor per output, of the right type). An exception
  // thrown in a parallel loop of a step (see tandem_parallel_for) is rethrown once that step has
  // returned, as an Error naming the kernel and op; the outputs are then undefined.
  void RunInto(const std::vector<ir::Tensor>& inputs, const std::vector<ir::Tensor>& outputs);

  void set_profiling(bool on) { profiling_ = on; }
  // Per-kernel totals since the last ResetProfile, heaviest first.
  std::vector<KernelProfile> Profile() const;
  void ResetProfile();
  // A text table of Profile(): kernel, calls, total and mean time, share; with
  // `flops_per_call` (floating-point operations of one call, by kernel name), also the GFLOP/s
  // of the kernels it names.
  std::string ProfileTable(const std::map<std::string, double>& flops_per_call = {}) const;

  const ir::IRModule& module() const { return module_; }  // the legalized module
  // The options it was built with, but for legalization (which module() has had): what
  // BuildLegalized(module(), build_options()) rebuilds it from, in another process (tuning's
  // measurement server). The legalize options (a schedule provider) are left at their defaults.
  const BuildOptions& build_options() const { return build_options_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  // Bytes the intermediates would need without reuse (for reporting the planner's savings).
  int64_t unplanned_bytes() const { return unplanned_bytes_; }
  size_t num_kernel_calls() const { return steps_.size(); }
  // The external functions called (by callee name), for reports.
  const std::map<std::string, std::shared_ptr<ExternalFunction>>& external_functions() const {
    return external_functions_;
  }
  const std::vector<ir::TensorType>& input_types() const { return input_types_; }
  const std::vector<ir::TensorType>& output_types() const { return output_types_; }
  // Whether a forked child can run this executable: every external function can.
  bool runs_in_forked_process() const;
  // Whether its parallel loops run on OpenMP's team: when some external function does.
  bool runs_on_openmp() const { return runs_on_openmp_; }

 private:
  friend std::unique_ptr<Executable> BuildLegalized(ir::IRModule legalized,
                                                    const BuildOptions& options);

  using SlotKind = ExecutionPlan::SlotKind;
  using Slot = ExecutionPlan::Slot;
  struct Step {
    CompiledModule::KernelEntry entry = nullptr;
    ExternalFunction* external = nullptr;  // set for call_extern (entry is null then)
    std::string kernel;
    std::string op;
    std::vector<int> args;  // slot per kernel parameter
  };
  // Throws `error`, which a parallel loop of `step` left pending, as an Error naming the step.
  [[noreturn]] static void RethrowStepError(const Step& step, std::exception_ptr error);
  using OutputCopy = ExecutionPlan::OutputCopy;

  ir::IRModule module_;
  BuildOptions build_options_;
  std::unique_ptr<CompiledModule> compiled_;
  std::map<std::string, std::shared_ptr<ExternalFunction>> external_functions_;
  bool runs_on_openmp_ = false;
  std::vector<Slot> slots_;
  std::vector<Step> steps_;
  std::vector<OutputCopy> output_copies_;
  std::vector<ir::TensorType> input_types_;
  std::vector<ir::TensorType> output_types_;
  std::shared_ptr<uint8_t> arena_;
  int64_t arena_bytes_ = 0;
  int64_t unplanned_bytes_ = 0;
  std::vector<void*> pointers_;   // per slot, refreshed each run
  std::vector<void*> arguments_;  // scratch for one kernel call
  bool profiling_ = false;
  std::vector<double> step_seconds_;
  std::vector<int64_t> step_calls_;
};

// Module attributes that override code generation options for that module (set by the
// TuneCodegenFlags pass, so a tuned module builds the way it was measured):
//   codegen.prefer_vector_width: 0, 128, 256 or 512;  codegen.allow_reassociation: 0 or 1.
inline constexpr const char* kPreferVectorWidthAttr = "codegen.prefer_vector_width";
inline constexpr const char* kAllowReassociationAttr = "codegen.allow_reassociation";
// `options` with the module's codegen.* attributes applied (Error on a bad value).
CodegenOptions CodegenOptionsFor(const ir::IRModule& module, CodegenOptions options);

// The module Build compiles: `module` legalized (every graph op lowered to a scheduled kernel)
// for the vector unit of the target in `options.codegen`, and verified.
ir::IRModule LegalizeForBuild(const ir::IRModule& module, const BuildOptions& options = {});

std::unique_ptr<Executable> Build(const ir::IRModule& module, const BuildOptions& options = {});
// Build's second half, for a module LegalizeForBuild(module, options) returned: Build(module,
// options) is BuildLegalized(LegalizeForBuild(module, options), options). For a caller that
// needs the legalized module before building (tuning's LocalBuilder), so that it legalizes once.
std::unique_ptr<Executable> BuildLegalized(ir::IRModule legalized,
                                           const BuildOptions& options = {});

// The kernel objects BuildLegalized(legalized, options) links: the module's kernels through
// CompileKernelObjects (kept in KernelObjectCache::Global()). What building does before linking
// that can take long or crash in LLVM, for running it in another process (tuning's LocalBuilder);
// once the objects are in this process's cache, BuildLegalized only links. Errors as Build's.
std::vector<KernelObject> CompileKernelObjectsForBuild(const ir::IRModule& legalized,
                                                       const BuildOptions& options = {});
// Whether every object CompileKernelObjectsForBuild(legalized, options) gives is already in
// KernelObjectCache::Global(), so that BuildLegalized would compile nothing (unless the cache
// drops one before, past its byte budget). Errors as Build's.
bool KernelObjectsCachedForBuild(const ir::IRModule& legalized, const BuildOptions& options = {});

}  // namespace tandem::backends
