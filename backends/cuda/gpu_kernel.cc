#include "backends/cuda/gpu_kernel.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/target.h"

namespace tandem::backends::cuda {

std::string DeviceArchitecture() {
  const DeviceInfo& device = Device();
  int version = device.compute_capability_major * 10 + device.compute_capability_minor;
  std::string best;
  for (const std::string& arch : ir::CudaArchitectures()) {
    if (std::stoi(arch.substr(3)) <= version) best = arch;
  }
  if (best.empty()) {
    throw ir::Error(
        fmt::format("the CUDA device {} ({}) is older than every supported "
                    "architecture",
                    device.name, device.arch()));
  }
  return best;
}

namespace {

DeviceBuffer BufferFor(const ir::Buffer& buffer) {
  int64_t bytes = ir::NumElements(buffer->shape) * ir::SizeOf(buffer->dtype);
  return DeviceBuffer(static_cast<size_t>(std::max<int64_t>(bytes, 0)));
}

}  // namespace

GpuKernel::GpuKernel(GpuProgram program) : program_(std::move(program)) {
  std::string reason = CudaUnavailableReason();
  if (!reason.empty()) throw ir::Error(reason);
  module_ = CudaModule::Load(program_.ptx);
  for (const ir::Buffer& buffer : program_.scratch) scratch_.push_back(BufferFor(buffer));
}

void GpuKernel::Upload(const std::vector<ir::Tensor>& inputs) {
  size_t num_inputs = program_.params.size() - static_cast<size_t>(program_.num_outputs);
  if (inputs.size() != num_inputs) {
    throw ir::Error(fmt::format("kernel '{}' takes {} inputs but {} were given", program_.name,
                                num_inputs, inputs.size()));
  }
  if (params_.empty()) {
    for (const ir::Buffer& buffer : program_.params) params_.push_back(BufferFor(buffer));
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ir::Buffer& param = program_.params[k];
    if (inputs[k].shape() != param->shape || inputs[k].dtype() != param->dtype) {
      throw ir::Error(fmt::format("kernel '{}': input {} ('{}') is {} but the kernel takes {}",
                                  program_.name, k, param->name, ir::ToString(inputs[k].type()),
                                  ir::ToString(ir::TensorType{param->shape, param->dtype, ""})));
    }
    params_[k].CopyFromHost(inputs[k].raw_data(), static_cast<size_t>(inputs[k].num_bytes()));
  }
  for (size_t k = inputs.size(); k < params_.size(); ++k) params_[k].Zero();
  pointers_.clear();
  for (const DeviceBuffer& buffer : params_) pointers_.push_back(buffer.pointer());
}

void GpuKernel::Launch(const std::vector<uint64_t>& params, void* stream) {
  if (params.size() != program_.params.size()) {
    throw ir::Error(fmt::format("kernel '{}' takes {} buffers but {} were given", program_.name,
                                program_.params.size(), params.size()));
  }
  LaunchAll(params, stream);
}

void GpuKernel::LaunchAll(const std::vector<uint64_t>& params, void* stream) {
  std::vector<uint64_t> pointers = params;
  for (DeviceBuffer& buffer : scratch_) {
    buffer.Zero();
    pointers.push_back(buffer.pointer());
  }
  for (const GpuLaunchSpec& launch : program_.launches) {
    LaunchDims dims;
    for (int axis = 0; axis < 3; ++axis) {
      dims.grid[axis] = launch.grid[axis];
      dims.block[axis] = launch.block[axis];
    }
    module_->Launch(launch.entry, dims, pointers, stream);
  }
}

std::vector<ir::Tensor> GpuKernel::Run(const std::vector<ir::Tensor>& inputs) {
  Upload(inputs);
  LaunchAll(pointers_);
  module_->Synchronize();
  std::vector<ir::Tensor> outputs;
  for (size_t k = inputs.size(); k < program_.params.size(); ++k) {
    const ir::Buffer& param = program_.params[k];
    ir::Tensor output(ir::TensorType{param->shape, param->dtype, ""});
    params_[k].CopyToHost(output.raw_data(), static_cast<size_t>(output.num_bytes()));
    outputs.push_back(std::move(output));
  }
  return outputs;
}

double GpuKernel::TimeMilliseconds(const std::vector<ir::Tensor>& inputs, int repeat) {
  Upload(inputs);
  LaunchAll(pointers_);  // warm-up
  module_->Synchronize();
  std::vector<double> times;
  for (int k = 0; k < std::max(1, repeat); ++k) {
    times.push_back(module_->TimeMilliseconds([&] { LaunchAll(pointers_); }));
  }
  module_->Synchronize();
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace tandem::backends::cuda
