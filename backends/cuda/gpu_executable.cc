#include "backends/cuda/gpu_executable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ir/error.h"

namespace tandem::backends::cuda {

namespace {

// Device allocations are 256-byte aligned; arena offsets keep that alignment.
constexpr int64_t kDeviceAlignment = 256;

// The function `node` (a call_extern) calls, compiled by its backend, which must be available and
// run on the device.
std::unique_ptr<ExternalFunction> CompileOnDevice(const ir::IRModule& module,
                                                  const ir::Node& node) {
  const ir::ErrorLocation where{.op = node.op, .node = node.name};
  const ir::GraphFunction& subgraph = module.Get(node.callee);
  const ExternalBackend& backend = ExternalBackendRegistry::Global().Get(subgraph.ExternBackend());
  std::string why;
  if (!backend.Available(&why)) {
    throw ir::Error(fmt::format("%{} is placed on {}, which is not available here: {}", node.name,
                                backend.name(), why),
                    where);
  }
  std::unique_ptr<ExternalFunction> compiled;
  try {
    compiled = backend.Compile(subgraph);
  } catch (const ir::Error& e) {
    throw e.WithNode(node.name);
  }
  if (!compiled->runs_on_cuda_device()) {
    throw ir::Error(fmt::format("%{} is placed on {}, which does not run on the CUDA device",
                                node.name, backend.name()),
                    where);
  }
  return compiled;
}

}  // namespace

// Steps:
//   1. the execution plan (slots, calls, one arena);
//   2. every distinct kernel compiled for the architecture and loaded, every distinct external
//      subgraph compiled by its backend (which must run on the device);
//   3. the arena, a buffer per input, output and constant slot; constants uploaded; the stream.
std::unique_ptr<GpuExecutable> GpuExecutable::Build(const ir::IRModule& legalized,
                                                    const std::string& arch,
                                                    const std::string& function) {
  std::string reason = CudaUnavailableReason();
  if (!reason.empty()) throw ir::Error(reason);
  std::string target_arch = arch.empty() ? DeviceArchitecture() : arch;
  const ir::GraphFunction& fn = legalized.Get(function);
  auto exe = std::unique_ptr<GpuExecutable>(new GpuExecutable());
  // 1. Plan.
  exe->plan_ = PlanExecution(fn, kDeviceAlignment);
  // 2. Kernels and library calls.
  for (const ExecutionPlan::Call& call : exe->plan_.calls) {
    const ir::Node& node = fn.node(call.node);
    exe->callees_.push_back(node.callee);
    exe->ops_.push_back(fmt::format("%{} ({})", node.name, node.op));
    if (node.kind == ir::NodeKind::kCallExtern) {
      if (!exe->externals_.count(node.callee)) {
        exe->externals_[node.callee] = CompileOnDevice(legalized, node);
      }
      continue;
    }
    if (node.kind != ir::NodeKind::kCallKernel) {
      throw ir::Error(fmt::format("%{} is a call of op {} left unlowered (run Legalize first)",
                                  node.name, node.op),
                      ir::ErrorLocation{.op = node.op, .node = node.name});
    }
    if (exe->kernels_.count(node.callee)) continue;
    GpuProgram program = CompileGpuKernel(legalized.GetKernel(node.callee), {target_arch, 3});
    exe->kernels_[node.callee] = std::make_unique<GpuKernel>(std::move(program));
  }
  // 3. Memory.
  exe->arena_ = std::make_unique<DeviceBuffer>(
      static_cast<size_t>(std::max<int64_t>(exe->plan_.arena_bytes, 0)));
  exe->slot_pointers_.assign(exe->plan_.slots.size(), 0);
  for (size_t s = 0; s < exe->plan_.slots.size(); ++s) {
    const ExecutionPlan::Slot& slot = exe->plan_.slots[s];
    if (slot.kind == ExecutionPlan::SlotKind::kArena) {
      exe->slot_pointers_[s] = exe->arena_->pointer() + static_cast<uint64_t>(slot.index);
      continue;
    }
    auto [it, inserted] = exe->slot_buffers_.emplace(
        static_cast<int>(s), DeviceBuffer(static_cast<size_t>(std::max<int64_t>(slot.bytes, 0))));
    if (slot.kind == ExecutionPlan::SlotKind::kConstant && slot.bytes > 0) {
      it->second.CopyFromHost(slot.constant.raw_data(), static_cast<size_t>(slot.bytes));
    }
    exe->slot_pointers_[s] = it->second.pointer();
  }
  exe->stream_ = std::make_unique<CudaStream>();
  return exe;
}

std::vector<ir::Tensor> GpuExecutable::Run(const std::vector<ir::Tensor>& inputs) {
  if (inputs.size() != plan_.input_types.size()) {
    throw ir::Error(fmt::format("the model takes {} inputs but {} were given",
                                plan_.input_types.size(), inputs.size()));
  }
  for (size_t s = 0; s < plan_.slots.size(); ++s) {
    const ExecutionPlan::Slot& slot = plan_.slots[s];
    if (slot.kind != ExecutionPlan::SlotKind::kInput) continue;
    const ir::Tensor& input = inputs[static_cast<size_t>(slot.index)];
    const ir::TensorType& type = plan_.input_types[static_cast<size_t>(slot.index)];
    if (input.shape() != type.shape || input.dtype() != type.dtype) {
      throw ir::Error(fmt::format("input {} is {} but the model takes {}", slot.index,
                                  ir::ToString(input.type()), ir::ToString(type)));
    }
    slot_buffers_.at(static_cast<int>(s))
        .CopyFromHost(input.raw_data(), static_cast<size_t>(input.num_bytes()));
  }
  // Everything runs in order on the executable's stream; one wait at the end.
  for (size_t c = 0; c < plan_.calls.size(); ++c) {
    std::vector<uint64_t> pointers;
    for (int s : plan_.calls[c].args) pointers.push_back(slot_pointers_[static_cast<size_t>(s)]);
    auto external = externals_.find(callees_[c]);
    if (external != externals_.end()) {
      external->second->RunOnCudaDevice(pointers.data(), stream_->handle());
    } else {
      kernels_.at(callees_[c])->Launch(pointers, stream_->handle());
    }
  }
  if (!plan_.calls.empty()) stream_->Synchronize(ops_.back());
  std::vector<ir::Tensor> outputs;
  for (const ir::TensorType& type : plan_.output_types) outputs.emplace_back(type);
  for (size_t s = 0; s < plan_.slots.size(); ++s) {
    const ExecutionPlan::Slot& slot = plan_.slots[s];
    if (slot.kind != ExecutionPlan::SlotKind::kOutput) continue;
    ir::Tensor& output = outputs[static_cast<size_t>(slot.index)];
    slot_buffers_.at(static_cast<int>(s))
        .CopyToHost(output.raw_data(), static_cast<size_t>(output.num_bytes()));
  }
  for (const ExecutionPlan::OutputCopy& copy : plan_.output_copies) {
    const ExecutionPlan::Slot& slot = plan_.slots[static_cast<size_t>(copy.slot)];
    ir::Tensor& output = outputs[static_cast<size_t>(copy.output)];
    if (slot.kind == ExecutionPlan::SlotKind::kConstant ||
        slot.kind == ExecutionPlan::SlotKind::kInput) {
      const ir::Tensor& source = slot.kind == ExecutionPlan::SlotKind::kConstant
                                     ? slot.constant
                                     : inputs[static_cast<size_t>(slot.index)];
      std::memcpy(output.raw_data(), source.raw_data(), static_cast<size_t>(output.num_bytes()));
    } else {
      slot_buffers_.at(copy.slot).CopyToHost(output.raw_data(),
                                             static_cast<size_t>(output.num_bytes()));
    }
  }
  return outputs;
}

}  // namespace tandem::backends::cuda
