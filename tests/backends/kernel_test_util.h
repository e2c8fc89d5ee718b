// Helpers for the backend tests: terse builders of kernel IR and the check that compiled code
// computes what the kernel reference interpreter computes.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/llvm/codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/kernel/expr.h"
#include "ir/kernel/stmt.h"
#include "ir/tensor.h"

namespace tandem::testing {

inline ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

// Occurrences of `what` in `text` (instructions in generated code).
inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct BlockIter {
  ir::Var var;
  int64_t extent;
  ir::IterKind kind;
  ir::Expr value;  // the iter_value bound to `var`
};

inline ir::Stmt MakeBlock(const std::string& name, const std::vector<BlockIter>& iters,
                          ir::Stmt body, ir::Stmt init = nullptr,
                          std::vector<ir::Buffer> alloc = {}, ir::Expr predicate = ir::Expr()) {
  auto block = std::make_shared<ir::BlockNode>();
  block->name = name;
  std::vector<ir::Expr> values;
  for (const BlockIter& it : iters) {
    block->iter_vars.push_back(ir::IterVar{it.var, it.extent, it.kind});
    values.push_back(it.value);
  }
  block->init = std::move(init);
  block->body = std::move(body);
  block->alloc_buffers = std::move(alloc);
  return ir::MakeBlockRealize(std::move(values), std::move(predicate), block);
}

inline ir::Stmt Root(ir::Stmt body, std::vector<ir::Buffer> alloc = {}) {
  return MakeBlock("root", {}, std::move(body), nullptr, std::move(alloc));
}

inline ir::Stmt Loop(const ir::Var& var, int64_t extent, ir::Stmt body,
                     ir::ForKind kind = ir::ForKind::kSerial) {
  return ir::MakeFor(var, extent, kind, std::move(body));
}

inline ir::KernelFunction Kernel(const std::string& name, std::vector<ir::Buffer> params,
                                 ir::Stmt body, int num_outputs = 1) {
  ir::KernelFunction kernel;
  kernel.name = name;
  kernel.params = std::move(params);
  kernel.num_outputs = num_outputs;
  kernel.body = std::move(body);
  return kernel;
}

inline ir::Tensor RandomTensor(const ir::Buffer& buffer, uint64_t seed) {
  ir::TensorType type{buffer->shape, buffer->dtype, ""};
  switch (buffer->dtype) {
    case ir::DataType::kInt8:
    case ir::DataType::kInt32:
    case ir::DataType::kInt64:
      return ir::Tensor::Random(type, seed, -50, 50);
    case ir::DataType::kUInt8:
      return ir::Tensor::Random(type, seed, 0, 256);
    default:
      return ir::Tensor::Random(type, seed, -1, 1);
  }
}

// Runs `kernel` compiled and interpreted on the same random arguments (outputs too start from
// the same random values) and expects every argument to agree afterwards.
inline void ExpectMatchesReference(const ir::KernelFunction& kernel,
                                   const backends::CodegenOptions& options = {},
                                   double tolerance = 1e-5, uint64_t seed = 1) {
  std::vector<ir::Tensor> compiled_args, reference_args;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    ir::Tensor t = RandomTensor(kernel.params[i], seed + i);
    compiled_args.push_back(t.Clone());
    reference_args.push_back(t);
  }
  std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels({kernel}, options);
  module->Run(kernel.name, compiled_args);
  backends::RunKernelReference(kernel, reference_args);
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    double error = ir::RelativeError(compiled_args[i], reference_args[i]);
    EXPECT_LT(error, tolerance) << "kernel '" << kernel.name << "', buffer '"
                                << kernel.params[i]->name << "'";
  }
}

}  // namespace tandem::testing
