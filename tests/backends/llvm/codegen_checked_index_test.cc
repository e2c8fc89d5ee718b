// The intrinsic checked_index in compiled code: gathers whose run-time indices are out of range
// report the index and the range as the kernel's error (never reading out of bounds), in scalar,
// vectorized (the index differs per lane) and parallel loops, and the kernel interpreter agrees;
// in-range indices, negative ones included, give the interpreter's results.
#include <gtest/gtest.h>

#include "backends/llvm/codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "kernels/schedule/schedule.h"

namespace tandem {
namespace {

ir::TensorType Type(ir::Shape shape, ir::DataType dtype) {
  return ir::TensorType{std::move(shape), dtype, ""};
}

ir::KernelFunction Lower(const std::string& name, const std::string& op,
                         const std::vector<ir::TensorType>& inputs, ir::Attrs attrs) {
  std::vector<ir::Type> types(inputs.begin(), inputs.end());
  ir::Type output = ir::InferCallType(op, types, attrs);
  return kernels::LowerOpCall(name, op, attrs, inputs, output);
}

// gather_elements along the innermost axis, that axis vectorized: each lane loads its own index.
ir::KernelFunction VectorizedGatherElements() {
  ir::KernelFunction kernel =
      Lower("vector_gather", "gather_elements",
            {Type({4, 16}, ir::DataType::kFloat32), Type({4, 16}, ir::DataType::kInt64)},
            {{"axis", int64_t{1}}});
  kernels::Schedule s(kernel);
  std::vector<kernels::LoopRV> loops = s.GetLoops(s.GetBlock("gather_elements"));
  std::vector<kernels::LoopRV> inner = s.Split(loops[1], {-1, 8});
  s.Vectorize(inner[1]);
  s.Parallel(loops[0]);
  ir::KernelFunction out = s.function();
  out.name = "vector_gather";
  return out;
}

// An embedding lookup (gather on axis 0) under its default schedule.
ir::KernelFunction Embedding() {
  ir::KernelFunction kernel =
      Lower("embedding", "gather",
            {Type({10, 32}, ir::DataType::kFloat32), Type({2, 3}, ir::DataType::kInt64)}, {});
  kernels::DefaultScheduleOptions options;
  options.parallel_min_work = 1;
  options.num_threads = 2;
  ir::KernelFunction out = kernels::ApplyDefaultSchedule(kernel, options).function();
  out.name = "embedding";
  return out;
}

std::string RunError(const backends::CompiledModule& module, const std::string& kernel,
                     const std::vector<ir::Tensor>& inputs) {
  try {
    module.Run(kernel, inputs, true);
  } catch (const ir::Error& e) {
    return e.what();
  }
  return "";
}

std::string InterpreterError(const ir::KernelFunction& kernel,
                             const std::vector<ir::Tensor>& inputs) {
  try {
    backends::RunKernelReference(kernel, inputs, true);
  } catch (const ir::Error& e) {
    return e.what();
  }
  return "";
}

TEST(CodegenCheckedIndex, OutOfRangeIndicesAreReportedNotRead) {
  std::vector<ir::KernelFunction> kernels = {VectorizedGatherElements(), Embedding()};
  std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels(kernels);

  ir::Tensor data = ir::Tensor::Random(Type({4, 16}, ir::DataType::kFloat32), 1);
  ir::Tensor indices = ir::Tensor::Random(Type({4, 16}, ir::DataType::kInt64), 2, -16, 16);
  std::vector<ir::Tensor> good = {data, indices};
  EXPECT_LT(ir::RelativeError(module->Run("vector_gather", good, true).at(0),
                              backends::RunKernelReference(kernels[0], good, true).at(0)),
            1e-6);
  ir::Tensor bad = indices.Clone();
  bad.data<int64_t>()[2 * 16 + 11] = 1 << 30;  // one lane of one vector
  std::string error = RunError(*module, "vector_gather", {data, bad});
  EXPECT_NE(error.find("index 1073741824 is out of range [-16, 16)"), std::string::npos) << error;
  EXPECT_NE(error.find("vector_gather"), std::string::npos) << error;
  EXPECT_NE(InterpreterError(kernels[0], {data, bad}).find("index 1073741824 is out of range"),
            std::string::npos);
  bad.data<int64_t>()[2 * 16 + 11] = -17;
  error = RunError(*module, "vector_gather", {data, bad});
  EXPECT_NE(error.find("index -17 is out of range [-16, 16)"), std::string::npos) << error;

  ir::Tensor table = ir::Tensor::Random(Type({10, 32}, ir::DataType::kFloat32), 3);
  ir::Tensor ids = ir::Tensor::FromInt64s({2, 3}, {0, 9, -10, -1, 4, 5});
  EXPECT_LT(ir::RelativeError(module->Run("embedding", {table, ids}, true).at(0),
                              backends::RunKernelReference(kernels[1], {table, ids}, true).at(0)),
            1e-6);
  ids.data<int64_t>()[4] = 10;
  error = RunError(*module, "embedding", {table, ids});
  EXPECT_NE(error.find("index 10 is out of range [-10, 10)"), std::string::npos) << error;
  // The error does not stay pending: the next good run succeeds.
  ids.data<int64_t>()[4] = 4;
  EXPECT_EQ(RunError(*module, "embedding", {table, ids}), "");
}

}  // namespace
}  // namespace tandem
