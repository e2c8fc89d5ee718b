#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "backends/target/resolved_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>

#include "ir/checked_math.h"
#include "ir/error.h"

namespace tandem::backends {

using ir::Error;

namespace {

constexpr int64_t kAlignment = 64;

int64_t AlignUp(int64_t n) {
  return ir::CheckedAdd(n, kAlignment - 1, "Build: the aligned arena size") / kAlignment *
         kAlignment;
}

// An interval of the arena used by one tensor during [first, last] steps.
struct Lifetime {
  int slot;
  int64_t bytes;
  int first;
  int last;
  int64_t offset = -1;
};

// Best-fit placement: tensors in order of decreasing size, each at the lowest offset where it
// overlaps no already-placed tensor whose lifetime intersects its own.
int64_t PlanArena(std::vector<Lifetime>& lifetimes) {
  std::vector<Lifetime*> order;
  for (Lifetime& l : lifetimes) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(),
                   [](const Lifetime* a, const Lifetime* b) { return a->bytes > b->bytes; });
  std::vector<Lifetime*> placed;
  int64_t total = 0;
  for (Lifetime* l : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Lifetime* p : placed) {
      if (p->first <= l->last && l->first <= p->last)
        busy.emplace_back(p->offset, p->offset + p->bytes);  // checked when p was placed
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (l->bytes <= begin - offset) break;
      offset = std::max(offset, end);
    }
    l->offset = offset;
    total = std::max(total, ir::CheckedAdd(offset, l->bytes, "Build: the arena offset"));
    placed.push_back(l);
  }
  return total;
}

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
  std::string what = step.external ? "call_extern" : "kernel";
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    throw Error(
        fmt::format("{} '{}' failed in a parallel loop: {}", what, step.kernel, e.message()),
        e.where())
        .WithOp(step.op);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{} '{}' failed in a parallel loop: {}", what, step.kernel, e.what()),
                ir::ErrorLocation{.op = step.op});
  } catch (...) {
    throw Error(fmt::format("{} '{}' failed in a parallel loop (an exception that is not a "
                            "std::exception)",
                            what, step.kernel),
                ir::ErrorLocation{.op = step.op});
  }
}

BuildOptions BuildOptionsFor(const ir::Target& target, std::string function) {
  CheckHasCodeGenerator(target);
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
  if (legalize.schedule.vector_lanes <= 0 || legalize.schedule.vector_registers <= 0) {
    VectorUnit unit = TargetVectorUnit(options.codegen.cpu, options.codegen.features);
    if (legalize.schedule.vector_lanes <= 0) legalize.schedule.vector_lanes = unit.f32_lanes;
    if (legalize.schedule.vector_registers <= 0)
      legalize.schedule.vector_registers = unit.registers;
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

  // Slots for every tensor value; tuples map to the slots of their fields.
  std::vector<std::vector<int>> value_slots(fn.nodes.size());
  auto new_slot = [&](Executable::SlotKind kind, const ir::TensorType& type) {
    Executable::Slot slot;
    slot.kind = kind;
    slot.bytes = type.num_bytes();
    exe->slots_.push_back(slot);
    return static_cast<int>(exe->slots_.size() - 1);
  };
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Node& p = fn.node(fn.params[i]);
    int s = new_slot(Executable::SlotKind::kInput, p.type.tensor());
    exe->slots_[static_cast<size_t>(s)].index = static_cast<int64_t>(i);
    value_slots[static_cast<size_t>(fn.params[i])] = {s};
    exe->input_types_.push_back(p.type.tensor());
  }
  std::vector<int> step_of_node(fn.nodes.size(), -1);
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const ir::Node& node = fn.nodes[i];
    switch (node.kind) {
      case ir::NodeKind::kInput:
        break;
      case ir::NodeKind::kConstant: {
        int s = new_slot(Executable::SlotKind::kConstant, node.type.tensor());
        exe->slots_[static_cast<size_t>(s)].constant = node.value;
        value_slots[i] = {s};
        break;
      }
      case ir::NodeKind::kTuple:
        for (ir::ValueId f : node.inputs) {
          for (int s : value_slots[static_cast<size_t>(f)]) value_slots[i].push_back(s);
        }
        break;
      case ir::NodeKind::kTupleGetItem: {
        // Fields of a tuple of tensors: one slot each (nested tuples are flattened in order).
        const ir::Type& tuple = fn.type_of(node.inputs[0]);
        size_t index = static_cast<size_t>(node.attrs.GetInt("index"));
        size_t first = 0;
        auto count = [](const ir::Type& t, auto&& self) -> size_t {
          if (t.is_tensor()) return 1;
          size_t n = 0;
          for (const ir::Type& f : t.fields()) n += self(f, self);
          return n;
        };
        for (size_t k = 0; k < index; ++k) first += count(tuple.fields()[k], count);
        size_t n = count(tuple.fields()[index], count);
        const auto& source = value_slots[static_cast<size_t>(node.inputs[0])];
        value_slots[i].assign(source.begin() + static_cast<std::ptrdiff_t>(first),
                              source.begin() + static_cast<std::ptrdiff_t>(first + n));
        break;
      }
      case ir::NodeKind::kCallKernel:
      case ir::NodeKind::kCallExtern: {
        Executable::Step step;
        step.kernel = node.callee;
        step.op = node.op;
        if (node.kind == ir::NodeKind::kCallKernel) {
          step.entry = exe->compiled_->Lookup(node.callee);
        } else {
          step.external = CompileExternal(module, node, options.codegen, exe->external_functions_);
        }
        for (ir::ValueId id : node.inputs) {
          for (int s : value_slots[static_cast<size_t>(id)]) step.args.push_back(s);
        }
        std::vector<ir::TensorType> results;
        if (node.type.is_tensor()) {
          results.push_back(node.type.tensor());
        } else {
          for (const ir::Type& f : node.type.fields()) results.push_back(f.tensor());
        }
        for (const ir::TensorType& t : results) {
          int s = new_slot(Executable::SlotKind::kArena, t);
          value_slots[i].push_back(s);
          step.args.push_back(s);
        }
        step_of_node[i] = static_cast<int>(exe->steps_.size());
        exe->steps_.push_back(std::move(step));
        break;
      }
      case ir::NodeKind::kCall:
        throw Error(
            fmt::format("Build: node %{} still calls op '{}' after Legalize", node.name, node.op));
    }
  }

  // Outputs: produced slots become output slots; inputs/constants returned directly are copied.
  const std::vector<int>& result_slots = value_slots[static_cast<size_t>(fn.output)];
  exe->output_types_ = fn.OutputTensorTypes();
  std::map<int, int> output_of_slot;
  for (size_t k = 0; k < result_slots.size(); ++k) {
    int s = result_slots[k];
    Executable::Slot& slot = exe->slots_[static_cast<size_t>(s)];
    if (slot.kind == Executable::SlotKind::kArena && !output_of_slot.count(s)) {
      slot.kind = Executable::SlotKind::kOutput;
      slot.index = static_cast<int64_t>(k);
      output_of_slot[s] = static_cast<int>(k);
    } else {
      exe->output_copies_.push_back({s, static_cast<int>(k)});
    }
  }

  // Liveness of arena slots over the steps, then placement.
  std::map<int, Lifetime> lifetimes;
  for (size_t st = 0; st < exe->steps_.size(); ++st) {
    for (int s : exe->steps_[st].args) {
      if (exe->slots_[static_cast<size_t>(s)].kind != Executable::SlotKind::kArena) continue;
      auto [it, inserted] =
          lifetimes.try_emplace(s, Lifetime{s, AlignUp(exe->slots_[static_cast<size_t>(s)].bytes),
                                            static_cast<int>(st), static_cast<int>(st)});
      if (!inserted) it->second.last = static_cast<int>(st);
    }
  }
  std::vector<Lifetime> list;
  for (auto& [s, l] : lifetimes) {
    list.push_back(l);
    exe->unplanned_bytes_ = ir::CheckedAdd(exe->unplanned_bytes_, l.bytes, "Build: the arena size");
  }
  exe->arena_bytes_ = PlanArena(list);
  for (const Lifetime& l : list) exe->slots_[static_cast<size_t>(l.slot)].index = l.offset;
  if (exe->arena_bytes_ > 0) {
    void* p = std::aligned_alloc(kAlignment, static_cast<size_t>(AlignUp(exe->arena_bytes_)));
    if (!p)
      throw Error(fmt::format("Build: cannot allocate an arena of {} bytes", exe->arena_bytes_));
    exe->arena_ =
        std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
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

std::string Executable::ProfileTable() const {
  std::vector<KernelProfile> rows = Profile();
  double total = 0;
  for (const KernelProfile& p : rows) total += p.total_seconds;
  size_t width = 6;
  for (const KernelProfile& p : rows) width = std::max(width, p.kernel.size());
  std::string out = fmt::format("{:<{}} {:>7} {:>12} {:>12} {:>7}\n", "kernel", width, "calls",
                                "total ms", "mean us", "share");
  for (const KernelProfile& p : rows) {
    out += fmt::format("{:<{}} {:>7} {:>12.3f} {:>12.2f} {:>6.1f}%\n", p.kernel, width, p.calls,
                       p.total_seconds * 1e3,
                       p.calls ? p.total_seconds * 1e6 / static_cast<double>(p.calls) : 0.0,
                       total > 0 ? 100.0 * p.total_seconds / total : 0.0);
  }
  return out;
}

}  // namespace tandem::backends
