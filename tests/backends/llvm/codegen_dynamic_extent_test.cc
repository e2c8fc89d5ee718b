// Kernels planned for a dynamic axis (kernels/dynamic_extent.h), compiled: a matmul whose rows
// are dynamic and a softmax whose reduced axis is, each default-scheduled (parallel, vectorized,
// rfactor) and guarded, compute the valid prefix exactly at every size (junk past it is filled
// with huge values that would show), agree with the kernel interpreter, and bound their loops by
// the size; a loop whose whole body is `if (i < bound)` runs min(extent, bound) times, a bound
// below zero or past the extent included; and what the plan refuses is an error.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/llvm/codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "kernels/dynamic_extent.h"

namespace tandem {
namespace {

using kernels::AxisExtent;
using kernels::TensorExtents;

ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

// `op` lowered for `inputs`, planned with `extents`, default-scheduled on 2 threads, guarded.
ir::KernelFunction Dynamic(const std::string& op, const std::vector<ir::TensorType>& inputs,
                           ir::Attrs attrs, const std::vector<TensorExtents>& extents,
                           int64_t bound) {
  std::vector<ir::Type> types(inputs.begin(), inputs.end());
  ir::Type output = ir::InferCallType(op, types, attrs);
  ir::KernelFunction kernel = kernels::LowerOpCall(op, op, attrs, inputs, output);
  kernels::DynamicPlan plan = kernels::PlanDynamicIterators(
      kernel, extents, {{.symbol = "n", .minimum = 1, .bound = bound}});
  kernels::DefaultScheduleOptions options;
  options.parallel_min_work = 1;
  options.num_threads = 2;
  return kernels::ApplyDynamicIterators(kernels::ApplyDefaultSchedule(kernel, options).function(),
                                        plan);
}

ir::Tensor Extent(int64_t n) {
  return ir::Tensor::FromInt64s({1}, {n});
}

TEST(CodegenDynamicExtent, MatmulRowsComputeTheValidPrefixAtEverySize) {
  const int64_t bound = 40;
  ir::KernelFunction kernel = Dynamic("matmul", {F32({bound, 24}), F32({24, 20})}, {},
                                      {{{1, 0}, {}}, {}, {{1, 0}, {}}}, bound);
  EXPECT_NE(ir::PrintKernel(kernel).find("dynamic_extent[0]"), std::string::npos);
  std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels({kernel});
  ir::Tensor b = ir::Tensor::Random(F32({24, 20}), 2);
  for (int64_t n : {1, 5, 17, 39, 40}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    ir::Tensor a = ir::Tensor::Random(F32({bound, 24}), static_cast<uint64_t>(n));
    for (int64_t i = n * 24; i < bound * 24; ++i) a.data<float>()[i] = 1e30f;  // junk
    ir::Tensor out = module->Run(kernel.name, {a, b, Extent(n)}, true).at(0);
    ir::Tensor reference = backends::RunKernelReference(kernel, {a, b, Extent(n)}, true).at(0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < 20; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < 24; ++k)
          sum += a.data<float>()[i * 24 + k] * b.data<float>()[k * 20 + j];
        ASSERT_NEAR(out.data<float>()[i * 20 + j], sum, 1e-4) << i << "," << j;
        ASSERT_NEAR(reference.data<float>()[i * 20 + j], sum, 1e-4) << i << "," << j;
      }
    }
  }
}

TEST(CodegenDynamicExtent, SoftmaxOverTheDynamicAxisIgnoresThePositionsPastIt) {
  const int64_t bound = 64;
  ir::KernelFunction kernel = Dynamic("softmax", {F32({6, bound})}, {{"axis", int64_t{-1}}},
                                      {{{}, {1, 0}}, {{}, {1, 0}}}, bound);
  std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels({kernel});
  for (int64_t n : {1, 3, 9, 63, 64}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    ir::Tensor x = ir::Tensor::Random(F32({6, bound}), static_cast<uint64_t>(n) + 7);
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = n; c < bound; ++c) x.data<float>()[r * bound + c] = 1e4f;  // junk
    }
    ir::Tensor out = module->Run(kernel.name, {x, Extent(n)}, true).at(0);
    ir::Tensor reference = backends::RunKernelReference(kernel, {x, Extent(n)}, true).at(0);
    for (int64_t r = 0; r < 6; ++r) {
      const float* row = x.data<float>() + r * bound;
      double top = row[0];
      for (int64_t c = 1; c < n; ++c) top = std::max(top, static_cast<double>(row[c]));
      double total = 0;
      for (int64_t c = 0; c < n; ++c) total += std::exp(row[c] - top);
      for (int64_t c = 0; c < n; ++c) {
        double expected = std::exp(row[c] - top) / total;
        ASSERT_NEAR(out.data<float>()[r * bound + c], expected, 1e-5) << r << "," << c;
        ASSERT_NEAR(reference.data<float>()[r * bound + c], expected, 1e-5) << r << "," << c;
      }
    }
  }
}

TEST(CodegenDynamicExtent, AGuardedLoopRunsUpToItsBound) {
  ir::KernelFunction kernel = ir::ParseKernel(R"(
kernel @count(%limit: i64[1]) -> (%out: f32[16]) {
  block root() {
    for %i in 16 parallel {
      if %i < %limit[0] - 2 {
        block mark(%v: spatial 16 = %i)
            writes(%out[%v]) {
          %out[%v] = 1.0
        }
      }
    }
    for %j in 16 {
      if %j < %limit[0] {
        block twice(%w: spatial 16 = %j)
            reads(%out[%w])
            writes(%out[%w]) {
          %out[%w] = %out[%w] * 2.0 + 1.0
        }
      }
    }
  }
}
)");
  std::unique_ptr<backends::CompiledModule> module = backends::CompileKernels({kernel});
  for (int64_t limit : {-5, 0, 3, 9, 16, 40}) {
    SCOPED_TRACE("limit = " + std::to_string(limit));
    ir::Tensor out(F32({16}));
    module->Run("count", {Extent(limit), out});
    ir::Tensor reference(F32({16}));
    backends::RunKernelReference(kernel, {Extent(limit), reference});
    for (int64_t i = 0; i < 16; ++i) {
      float expected =
          (i < limit - 2 ? 1.0f : 0.0f) * (i < limit ? 2.0f : 1.0f) + (i < limit ? 1.0f : 0.0f);
      EXPECT_EQ(out.data<float>()[i], expected) << i;
      EXPECT_EQ(reference.data<float>()[i], expected) << i;
    }
  }
}

TEST(CodegenDynamicExtent, PlansRefuseWindowsAlongTheAxisAndStaticOutputs) {
  auto plan_error = [](const std::string& op, const std::vector<ir::TensorType>& inputs,
                       ir::Attrs attrs, const std::vector<TensorExtents>& extents) {
    std::vector<ir::Type> types(inputs.begin(), inputs.end());
    ir::Type output = ir::InferCallType(op, types, attrs);
    ir::KernelFunction kernel = kernels::LowerOpCall(op, op, attrs, inputs, output);
    try {
      kernels::PlanDynamicIterators(kernel, extents, {{.symbol = "n", .minimum = 1, .bound = 8}});
    } catch (const ir::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A 3-tap window along the dynamic axis reads position n at row n - 1.
  std::string window = plan_error(
      "max_pool2d", {F32({1, 1, 8, 4})},
      {{"pool_size", std::vector<int64_t>{3, 1}}, {"padding", std::vector<int64_t>{1, 0, 1, 0}}},
      {{{}, {}, {1, 0}, {}}, {{}, {}, {1, 0}, {}}});
  EXPECT_NE(window.find("reads axis 2 (valid length n) at an index (%h - 1) that reaches"),
            std::string::npos)
      << window;
  // A sum over the dynamic axis into a static output is fine (guarded) ...
  EXPECT_EQ(
      plan_error("sum", {F32({8, 4})}, {{"axes", std::vector<int64_t>{0}}}, {{{1, 0}, {}}, {}}),
      "");
  // ... but dynamic positions written to a static axis are not.
  std::string copy = plan_error("relu", {F32({8})}, {}, {{{1, 0}}, {}});
  EXPECT_NE(copy.find("into the static axis 0"), std::string::npos) << copy;
  EXPECT_EQ(kernels::ExtentsToString({{}, {2, 1}, {}}, {1, 17, 64}, "seq"), "[1, 2*seq+1, 64]");
}

}  // namespace
}  // namespace tandem
