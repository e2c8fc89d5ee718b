// Shared helpers for schedule tests: kernels lowered from graph ops, and a check that a
// transformed kernel computes what the original computes (through the kernel interpreter).
#pragma once

#include <gtest/gtest.h>

#include "backends/reference/kernel_interpreter.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"

namespace tandem::kernels::testing {

inline ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

// A kernel lowered from one op call with the given operand types.
inline ir::KernelFunction LowerOp(const std::string& op, const std::vector<ir::TensorType>& inputs,
                                  ir::Attrs attrs = {}) {
  std::vector<ir::Type> types(inputs.begin(), inputs.end());
  ir::Type out = ir::InferCallType(op, types, attrs);
  return LowerOpCall(op, op, attrs, inputs, out);
}

inline ir::KernelFunction Matmul(int64_t m, int64_t n, int64_t k) {
  return LowerOp("matmul", {F32({m, k}), F32({k, n})});
}

inline ir::KernelFunction Conv2d(int64_t c, int64_t o, int64_t hw, int64_t pad) {
  ir::Attrs attrs{{"padding", std::vector<int64_t>{pad, pad, pad, pad}}};
  return LowerOp("conv2d", {F32({1, c, hw, hw}), F32({o, c, 3, 3})}, attrs);
}

// conv2d + add(bias) + relu as one fused kernel.
inline ir::KernelFunction ConvBiasRelu(int64_t c, int64_t o, int64_t hw) {
  ir::GraphBuilder b("conv_bias_relu");
  ir::ValueId x = b.Input("data", F32({1, c, hw, hw}));
  ir::ValueId w = b.Input("weight", F32({o, c, 3, 3}));
  ir::ValueId bias = b.Input("bias", F32({o, 1, 1}));
  ir::ValueId conv =
      b.Call("conv2d", {x, w}, ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::ValueId add = b.Call("add", {conv, bias});
  ir::ValueId relu = b.Call("relu", {add});
  return LowerGraphFunction(b.Finish(relu), "conv_bias_relu");
}

inline std::vector<ir::Tensor> RandomArgs(const ir::KernelFunction& fn, uint64_t seed) {
  std::vector<ir::Tensor> inputs;
  size_t n_inputs = fn.params.size() - static_cast<size_t>(fn.num_outputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    const ir::Buffer& b = fn.params[i];
    inputs.push_back(ir::Tensor::Random(ir::TensorType{b->shape, b->dtype, ""}, seed + i));
  }
  return inputs;
}

// Relative error between the outputs of two kernels on the same random inputs.
inline double CompareKernels(const ir::KernelFunction& expected, const ir::KernelFunction& actual,
                             uint64_t seed = 7) {
  std::vector<ir::Tensor> inputs = RandomArgs(expected, seed);
  auto want = backends::RunKernelReference(expected, inputs, true);
  auto got = backends::RunKernelReference(actual, inputs, true);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, ir::RelativeError(got[i], want[i]));
  return worst;
}

}  // namespace tandem::kernels::testing
