// Code generation of kernels produced by the compute definitions (kernels/compute/lower.h),
// unscheduled, with their default schedule, and under random schedules: the compiled kernel
// must compute what the kernel interpreter computes for the same kernel.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "backends/llvm/codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/graph.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "tests/backends/kernel_test_util.h"
#include "tests/kernels/kernel_text.h"
#include "tests/kernels/schedule_fuzzer.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem {
namespace {

using kernels::testing::F32;
using kernels::testing::LowerOp;

ir::KernelFunction ConvBiasRelu() {
  ir::GraphBuilder b("conv_bias_relu");
  ir::ValueId data = b.Input("data", F32({1, 3, 9, 9}));
  ir::ValueId weight = b.Input("weight", F32({8, 3, 3, 3}));
  ir::ValueId bias = b.Input("bias", F32({8, 1, 1}));
  ir::ValueId conv = b.Call("conv2d", {data, weight},
                            ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}}, "conv");
  ir::ValueId sum = b.Call("add", {conv, bias}, {}, "biased");
  ir::GraphFunction function = b.Finish(b.Call("relu", {sum}, {}, "out"));
  return kernels::LowerGraphFunction(function, "conv_bias_relu");
}

ir::KernelFunction Softmax() {
  return kernels::LowerOpCall("softmax", "softmax", {}, {F32({4, 37})}, ir::Type(F32({4, 37})));
}

ir::KernelFunction DenseGelu() {
  ir::GraphBuilder b("dense_gelu");
  ir::ValueId x = b.Input("x", F32({3, 40}));
  ir::ValueId w = b.Input("w", F32({24, 40}));
  ir::ValueId bias = b.Input("bias", F32({24}));
  ir::ValueId sum = b.Call("add", {b.Call("dense", {x, w}), bias});
  return kernels::LowerGraphFunction(b.Finish(b.Call("gelu", {sum})), "dense_gelu");
}

TEST(LoweredKernels, Conv2dBiasReluAndSoftmax) {
  testing::ExpectMatchesReference(ConvBiasRelu());
  testing::ExpectMatchesReference(Softmax());
  testing::ExpectMatchesReference(DenseGelu());
}

TEST(LoweredKernels, DefaultSchedules) {
  for (const ir::KernelFunction& kernel :
       {ConvBiasRelu(), Softmax(), DenseGelu(), kernels::testing::Matmul(64, 48, 32),
        LowerOp("conv2d", {F32({1, 16, 14, 14}), F32({32, 16, 3, 3})},
                ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}})}) {
    ir::KernelFunction scheduled = kernels::ApplyDefaultSchedule(kernel).function();
    SCOPED_TRACE(kernels::testing::KernelText(scheduled));
    testing::ExpectMatchesReference(scheduled);
  }
}

// Compiling through LLVM costs ~0.1-1 s per schedule; the schedule fuzz test covers hundreds
// of schedules on the interpreter, this one a few per workload through real code generation.
int SchedulesPerWorkload() { return 6; }

TEST(LoweredKernels, RandomSchedules) {
  std::vector<std::pair<std::string, ir::KernelFunction>> workloads = {
      {"matmul", kernels::testing::Matmul(24, 20, 16)},
      {"matmul_odd", kernels::testing::Matmul(13, 17, 11)},
      {"conv_bias_relu", kernels::testing::ConvBiasRelu(3, 4, 6)},
      {"softmax", Softmax()},
  };
  int compiled = 0;
  for (const auto& [name, kernel] : workloads) {
    for (uint64_t seed = 0; seed < static_cast<uint64_t>(SchedulesPerWorkload()); ++seed) {
      kernels::Schedule schedule(kernel, seed);
      kernels::testing::FuzzCounts counts;
      kernels::testing::ScheduleFuzzer fuzzer(schedule, seed, counts);
      kernels::RandomState steps(seed);
      try {
        fuzzer.Run(8 + static_cast<int>(steps.Uniform(10)));
      } catch (const std::exception&) {
        continue;  // a schedule bug, reported by the schedule fuzz test
      }
      const ir::KernelFunction& scheduled = schedule.function();
      std::vector<ir::Tensor> reference_args, compiled_args;
      for (size_t i = 0; i < scheduled.params.size(); ++i) {
        ir::Tensor t = testing::RandomTensor(scheduled.params[i], seed + i);
        reference_args.push_back(t);
        compiled_args.push_back(t.Clone());
      }
      try {
        backends::RunKernelReference(scheduled, reference_args);
      } catch (const ir::Error&) {
        continue;  // an invalid schedule: the schedule fuzz test's concern
      }
      SCOPED_TRACE(name + " seed " + std::to_string(seed) + "\n" +
                   kernels::testing::KernelText(scheduled));
      auto start = std::chrono::steady_clock::now();
      std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels({scheduled});
      (void)start;
      module->Run(scheduled.name, compiled_args);
      ++compiled;
      for (size_t i = 0; i < scheduled.params.size(); ++i) {
        ASSERT_LT(ir::RelativeError(compiled_args[i], reference_args[i]), 1e-5)
            << "buffer " << scheduled.params[i]->name;
      }
    }
  }
  EXPECT_GT(compiled, 0);
}

}  // namespace
}  // namespace tandem
