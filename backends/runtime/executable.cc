#include "backends/runtime/executable.h"
#include "backends/runtime/execution_plan.h"
#include "backends/runtime/thread_pool.h"
#include "backends/target/resolved_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>

#include "ir/aligned_memory.h"
#include "ir/checked_math.h"
#include "ir/error.h"

namespace tandem::backends {

using ir::Error;

namespace {

constexpr int64_t kAlignment = ir::kDataAlignment;

// The compiled function of a call_extern's callee (compiled on its first call site).
ExternalFunction* CompileExternal(const ir::IRModule& module, const ir::Node& node,
                                  const CodegenOptions& codegen,
                                  std::map<std::string, std::shared_ptr<ExternalFunction>>& cache) {
  auto found = cache.find(node.callee);
  if (found != cache.end()) return found->second.get();
  const ir::GraphFunction& subgraph = module.Get(node.callee);
  const ExternalBackend& backend = ExternalBackendRegistry::Global().Get(subgraph.ExternBackend());
  backend.PrepareForTarget(ir::Target{.cpu = codegen.cpu, .features = codegen.features});
  std::string why;
  if (!backend.Available(&why)) {
    throw Error(fmt::format("Build: %{} is placed on {}, which is not available here: {}",
                            node.name, backend.name(), why),
                ir::ErrorLocation{.op = node.op, .node = node.name});
  }
  try {
    std::shared_ptr<ExternalFunction> compiled = backend.Compile(subgraph);
    return cache.emplace(node.callee, std::move(compiled)).first->second.get();
  } catch (const Error& e) {
    throw e.WithNode(node.name);
  }
}

// The kernel functions of a (legalized) module, in name order.
std::vector<ir::KernelFunction> KernelsOf(const ir::IRModule& module) {
  std::vector<ir::KernelFunction> kernels;
  for (const auto& [name, kernel] : module.kernel_functions()) kernels.push_back(*kernel);
  return kernels;
}

}  // namespace

void Executable::RethrowStepError(const Step& step, std::exception_ptr error) {
  RethrowParallelForError(error, step.external ? "call_extern" : "kernel", step.kernel, step.op);
}

BuildOptions BuildOptionsFor(const ir::Target& target, std::string function) {
  CheckHasCodeGenerator(target);
  if (target.kind != "llvm") {
    throw Error(
        fmt::format("Build makes CPU executables, not {} ones: a {} module runs through "
                    "backends::cuda::GpuExecutable (what tandem run uses for that target)",
                    target.kind, target.kind));
  }
  BuildOptions build;
  build.function = std::move(function);
  build.codegen.cpu = target.cpu;
  build.codegen.features = target.features;
  build.codegen.prefer_vector_width = target.vector_bits;
  return build;
}

CodegenOptions CodegenOptionsFor(const ir::IRModule& module, CodegenOptions options) {
  const ir::Attrs& attrs = module.attrs();
  if (attrs.Has(kPreferVectorWidthAttr)) {
    int64_t width = attrs.GetInt(kPreferVectorWidthAttr, 0);
    if (width != 0 && width != 128 && width != 256 && width != 512) {
      throw ir::Error(fmt::format("module attribute {} = {}: expected 0, 128, 256 or 512",
                                  kPreferVectorWidthAttr, width));
    }
    options.prefer_vector_width = static_cast<int>(width);
  }
  if (attrs.Has(kAllowReassociationAttr)) {
    options.allow_reassociation = attrs.GetInt(kAllowReassociationAttr, 0) != 0;
  }
  return options;
}

ir::IRModule LegalizeForBuild(const ir::IRModule& module, const BuildOptions& options) {
  kernels::LegalizeOptions legalize = options.legalize;
  if (legalize.schedule.vector_lanes <= 0 || legalize.schedule.vector_registers <= 0 ||
      legalize.schedule.core == kernels::CpuCoreModel{}) {
    VectorUnit unit = TargetVectorUnit(options.codegen.cpu, options.codegen.features);
    if (legalize.schedule.vector_lanes <= 0) legalize.schedule.vector_lanes = unit.f32_lanes;
    if (legalize.schedule.vector_registers <= 0)
      legalize.schedule.vector_registers = unit.registers;
    if (legalize.schedule.core == kernels::CpuCoreModel{}) {
      legalize.schedule.core = unit.CoreAt(legalize.schedule.vector_lanes);
    }
  }
  ir::IRModule legalized = kernels::Legalize(module, legalize);
  ir::Verify(legalized);
  return legalized;
}

std::vector<KernelObject> CompileKernelObjectsForBuild(const ir::IRModule& legalized,
                                                       const BuildOptions& options) {
  legalized.Get(options.function);  // Build's error when there is no such function
  return CompileKernelObjects(KernelsOf(legalized), CodegenOptionsFor(legalized, options.codegen));
}

bool KernelObjectsCachedForBuild(const ir::IRModule& legalized, const BuildOptions& options) {
  legalized.Get(options.function);
  return KernelObjectsCached(KernelsOf(legalized), CodegenOptionsFor(legalized, options.codegen));
}

std::unique_ptr<Executable> Build(const ir::IRModule& input_module, const BuildOptions& options) {
  return BuildLegalized(LegalizeForBuild(input_module, options), options);
}

std::unique_ptr<Executable> BuildLegalized(ir::IRModule legalized, const BuildOptions& options) {
  // (Legalization keeps the module's attributes, codegen.* among them.)
  ir::IRModule module = std::move(legalized);
  const ir::GraphFunction& fn = module.Get(options.function);

  auto exe = std::unique_ptr<Executable>(new Executable());
  exe->compiled_ = CompileKernels(KernelsOf(module), CodegenOptionsFor(module, options.codegen));

  ExecutionPlan plan = PlanExecution(fn, kAlignment, &module);
  exe->slots_ = std::move(plan.slots);
  exe->output_copies_ = std::move(plan.output_copies);
  exe->input_types_ = std::move(plan.input_types);
  exe->output_types_ = std::move(plan.output_types);
  exe->arena_bytes_ = plan.arena_bytes;
  exe->unplanned_bytes_ = plan.unplanned_bytes;
  for (ExecutionPlan::Call& call : plan.calls) {
    const ir::Node& node = fn.node(call.node);
    Executable::Step step;
    step.kernel = node.callee;
    step.op = node.op;
    if (node.kind == ir::NodeKind::kCallKernel) {
      step.entry = exe->compiled_->Lookup(node.callee);
    } else {
      step.external = CompileExternal(module, node, options.codegen, exe->external_functions_);
    }
    step.args = std::move(call.args);
    exe->steps_.push_back(std::move(step));
  }
  if (exe->arena_bytes_ > 0) {
    exe->arena_ = ir::AllocateAligned(exe->arena_bytes_, "the execution arena");
  }
  exe->pointers_.assign(exe->slots_.size(), nullptr);
  exe->step_seconds_.assign(exe->steps_.size(), 0);
  exe->step_calls_.assign(exe->steps_.size(), 0);
  exe->module_ = std::move(module);
  exe->build_options_.function = options.function;
  exe->build_options_.codegen = options.codegen;
  exe->runs_on_openmp_ =
      std::any_of(exe->external_functions_.begin(), exe->external_functions_.end(),
                  [](const auto& entry) { return entry.second->runs_on_openmp(); });
  return exe;
}

bool Executable::runs_in_forked_process() const {
  return std::all_of(external_functions_.begin(), external_functions_.end(),
                     [](const auto& entry) { return entry.second->runs_in_forked_process(); });
}

std::vector<ir::Tensor> Executable::Run(const std::vector<ir::Tensor>& inputs) {
  std::vector<ir::Tensor> outputs;
  for (const ir::TensorType& t : output_types_) outputs.emplace_back(t);
  RunInto(inputs, outputs);
  return outputs;
}

void Executable::RunInto(const std::vector<ir::Tensor>& inputs,
                         const std::vector<ir::Tensor>& outputs) {
  if (inputs.size() != input_types_.size()) {
    throw Error(fmt::format("the model takes {} inputs but {} were given", input_types_.size(),
                            inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape() != input_types_[i].shape || inputs[i].dtype() != input_types_[i].dtype) {
      throw Error(fmt::format("input {} must be {} but is {}", i, ir::ToString(input_types_[i]),
                              ir::ToString(inputs[i].type())));
    }
  }
  if (outputs.size() != output_types_.size()) {
    throw Error(fmt::format("the model has {} outputs but {} were given", output_types_.size(),
                            outputs.size()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].shape() != output_types_[i].shape ||
        outputs[i].dtype() != output_types_[i].dtype) {
      throw Error(fmt::format("output {} must be {} but is {}", i, ir::ToString(output_types_[i]),
                              ir::ToString(outputs[i].type())));
    }
  }
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    switch (slot.kind) {
      case SlotKind::kInput:
        pointers_[s] = const_cast<void*>(inputs[static_cast<size_t>(slot.index)].raw_data());
        break;
      case SlotKind::kConstant:
        pointers_[s] = const_cast<void*>(slot.constant.raw_data());
        break;
      case SlotKind::kArena:
        pointers_[s] = arena_.get() + slot.index;
        break;
      case SlotKind::kOutput:
        pointers_[s] = const_cast<void*>(outputs[static_cast<size_t>(slot.index)].raw_data());
        break;
    }
  }
  OpenMPTeamScope team(runs_on_openmp_);
  for (size_t st = 0; st < steps_.size(); ++st) {
    const Step& step = steps_[st];
    arguments_.resize(step.args.size());
    for (size_t a = 0; a < step.args.size(); ++a)
      arguments_[a] = pointers_[static_cast<size_t>(step.args[a])];
    auto start =
        profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (step.external != nullptr) {
      step.external->Run(arguments_.data());
    } else {
      step.entry(arguments_.data());
    }
    if (std::exception_ptr error = TakeParallelForError()) RethrowStepError(step, error);
    if (profiling_) {
      step_seconds_[st] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++step_calls_[st];
    }
  }
  for (const OutputCopy& copy : output_copies_) {
    const ir::Tensor& out = outputs[static_cast<size_t>(copy.output)];
    std::memcpy(const_cast<void*>(out.raw_data()), pointers_[static_cast<size_t>(copy.slot)],
                static_cast<size_t>(out.num_bytes()));
  }
}

std::vector<KernelProfile> Executable::Profile() const {
  std::map<std::string, KernelProfile> by_kernel;
  for (size_t st = 0; st < steps_.size(); ++st) {
    KernelProfile& p = by_kernel[steps_[st].kernel];
    p.kernel = steps_[st].kernel;
    p.op = steps_[st].op;
    p.calls += step_calls_[st];
    p.total_seconds += step_seconds_[st];
  }
  std::vector<KernelProfile> out;
  for (auto& [k, p] : by_kernel) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const KernelProfile& a, const KernelProfile& b) {
    return a.total_seconds > b.total_seconds;
  });
  return out;
}

void Executable::ResetProfile() {
  std::fill(step_seconds_.begin(), step_seconds_.end(), 0.0);
  std::fill(step_calls_.begin(), step_calls_.end(), 0);
}

std::string Executable::ProfileTable(const std::map<std::string, double>& flops_per_call) const {
  std::vector<KernelProfile> rows = Profile();
  double total = 0;
  for (const KernelProfile& p : rows) total += p.total_seconds;
  size_t width = 6;
  for (const KernelProfile& p : rows) width = std::max(width, p.kernel.size());
  bool rates = !flops_per_call.empty();
  std::string out = fmt::format("{:<{}} {:>7} {:>12} {:>12} {:>7}{}\n", "kernel", width, "calls",
                                "total ms", "mean us", "share", rates ? "  GFLOP/s" : "");
  for (const KernelProfile& p : rows) {
    double mean = p.calls ? p.total_seconds / static_cast<double>(p.calls) : 0.0;
    std::string rate;
    auto flops = flops_per_call.find(p.kernel);
    if (rates && flops != flops_per_call.end() && flops->second > 0 && mean > 0) {
      rate = fmt::format(" {:>8.1f}", flops->second / mean * 1e-9);
    }
    out += fmt::format("{:<{}} {:>7} {:>12.3f} {:>12.2f} {:>6.1f}%{}\n", p.kernel, width, p.calls,
                       p.total_seconds * 1e3, mean * 1e6,
                       total > 0 ? 100.0 * p.total_seconds / total : 0.0, rate);
  }
  return out;
}

}  // namespace tandem::backends
