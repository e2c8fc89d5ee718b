// Matrix products staged through a thread block's shared memory: the default GPU schedule's
// shared tiles keep the result in the interpreter's thread simulation (races checked), the
// generated PTX holds the shared arrays and the barriers between the copies and the products
// that read them, ptxas accepts it (where this build found ptxas) and it runs on a device
// (where one is).
#include <gtest/gtest.h>

#include "backends/cuda/cuda_driver.h"
#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ptxas.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/target.h"
#include "kernels/default_schedule.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem {
namespace {

using kernels::testing::F32;

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

class SharedTile : public ::testing::TestWithParam<int> {
 protected:
  ir::KernelFunction Kernel() const {
    switch (GetParam()) {
      case 0:
        return kernels::testing::Matmul(128, 128, 64);
      case 1:
        return kernels::testing::LowerOp("batch_matmul", {F32({2, 64, 48}), F32({2, 48, 96})});
      default:
        return kernels::testing::Matmul(96, 40, 200);
    }
  }
};

TEST_P(SharedTile, StagesOperandsAndKeepsTheResult) {
  ir::KernelFunction kernel = Kernel();
  kernels::Schedule s = kernels::ApplyGpuDefaultSchedule(kernel);
  std::string trace = s.trace().ToText();
  EXPECT_EQ(Count(trace, "\"shared\""), 2u) << trace;
  // The thread simulation reports threads of one step that share an element.
  EXPECT_LT(kernels::testing::CompareKernels(kernel, s.function()), 1e-5) << trace;

  for (const std::string& arch : ir::CudaArchitectures()) {
    backends::GpuProgram program = backends::CompileGpuKernel(s.function(), {arch, 3});
    ASSERT_EQ(program.launches.size(), 1u);
    EXPECT_EQ(Count(program.ptx, ".shared .align 16"), 2u) << program.ptx;
    // A barrier after the copies, and one closing each step of the reduction loop.
    EXPECT_GE(Count(program.ptx, "bar.sync"), 2u) << program.ptx;
    if (!backends::cuda::PtxasPath().empty()) {
      backends::cuda::PtxasReport report = backends::cuda::AssemblePtx(program.ptx, arch);
      EXPECT_TRUE(report.accepted) << report.log;
      EXPECT_GT(report.shared_bytes, 0) << report.log;
      EXPECT_EQ(report.spill_bytes, 0) << report.log;
    }
    std::string reason = backends::cuda::CudaUnavailableReason();
    if (!reason.empty() || backends::cuda::DeviceArchitecture() != arch) continue;
    std::vector<ir::Tensor> inputs = kernels::testing::RandomArgs(kernel, 3);
    std::vector<ir::Tensor> expected = backends::RunKernelReference(kernel, inputs, true);
    std::vector<ir::Tensor> got = backends::cuda::GpuKernel(program).Run(inputs);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_LT(ir::RelativeError(got[0], expected[0]), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Products, SharedTile, ::testing::Values(0, 1, 2));

TEST(SharedMemoryCodegen, RowReductionsAreOneLaunchWithABarrier) {
  ir::KernelFunction sum = kernels::testing::LowerOp("sum", {F32({64, 1024})},
                                                     ir::Attrs{{"axes", std::vector<int64_t>{1}}});
  kernels::Schedule s = kernels::ApplyGpuDefaultSchedule(sum);
  EXPECT_LT(kernels::testing::CompareKernels(sum, s.function()), 1e-5);
  for (const std::string& arch : ir::CudaArchitectures()) {
    backends::GpuProgram program = backends::CompileGpuKernel(s.function(), {arch, 3});
    ASSERT_EQ(program.launches.size(), 1u);
    EXPECT_EQ(program.launches[0].grid[0], 64);
    // 256 partials, then 16 group sums of 16 partials each, a barrier after each level.
    EXPECT_EQ(Count(program.ptx, ".shared .align 16"), 2u) << program.ptx;
    EXPECT_GE(Count(program.ptx, "bar.sync"), 2u) << program.ptx;
    if (backends::cuda::PtxasPath().empty()) continue;
    backends::cuda::PtxasReport report = backends::cuda::AssemblePtx(program.ptx, arch);
    EXPECT_TRUE(report.accepted) << report.log;
    EXPECT_EQ(report.shared_bytes, (256 + 16) * 4) << report.log;
  }
}

TEST(SharedMemoryCodegen, SoftmaxAndLayerNormAreOneLaunchWithABlockPerRow) {
  // Two reductions per row, each through 256 shared partials and 16 shared group sums (a
  // barrier after each level), their results in registers; one launch of a block per row.
  ir::KernelFunction softmax =
      kernels::testing::LowerOp("softmax", {F32({64, 256})}, ir::Attrs{{"axis", int64_t{1}}});
  ir::KernelFunction layer_norm =
      kernels::testing::LowerOp("layer_norm", {F32({32, 768}), F32({768}), F32({768})},
                                ir::Attrs{{"axis", int64_t{-1}}, {"epsilon", 1e-5}});
  for (const auto& [kernel, rows] : {std::pair{softmax, 64}, std::pair{layer_norm, 32}}) {
    SCOPED_TRACE(kernel.name);
    kernels::Schedule s = kernels::ApplyGpuDefaultSchedule(kernel);
    EXPECT_LT(kernels::testing::CompareKernels(kernel, s.function()), 1e-5);
    for (const std::string& arch : ir::CudaArchitectures()) {
      backends::GpuProgram program = backends::CompileGpuKernel(s.function(), {arch, 3});
      ASSERT_EQ(program.launches.size(), 1u);
      EXPECT_EQ(program.launches[0].grid[0], rows);
      EXPECT_EQ(Count(program.ptx, ".shared .align 16"), 4u) << program.ptx;
      EXPECT_GE(Count(program.ptx, "bar.sync"), 4u) << program.ptx;
      if (backends::cuda::PtxasPath().empty()) continue;
      backends::cuda::PtxasReport report = backends::cuda::AssemblePtx(program.ptx, arch);
      EXPECT_TRUE(report.accepted) << report.log;
      EXPECT_EQ(report.shared_bytes, 2 * (256 + 16) * 4) << report.log;
      EXPECT_EQ(report.spill_bytes, 0) << report.log;
    }
  }
}

TEST(SharedMemoryCodegen, ScopesAreCheckedWhereTheyCannotBe) {
  // A shared tile under no thread block: one copy for the whole grid is not shared memory.
  ir::Buffer a = ir::MakeBuffer("A", ir::DataType::kFloat32, {64});
  ir::Buffer staged = ir::MakeBuffer("A_shared", ir::DataType::kFloat32, {64}, "shared");
  ir::Buffer c = ir::MakeBuffer("C", ir::DataType::kFloat32, {64});
  ir::Var t = ir::MakeVar("t"), u = ir::MakeVar("u");
  auto root = std::make_shared<ir::BlockNode>();
  root->name = "root";
  root->alloc_buffers = {staged};
  root->body = ir::MakeSeq(
      {ir::MakeFor(t, 64, ir::ForKind::kThreadIdxX, ir::MakeStore(staged, {t}, ir::Load(a, {t}))),
       ir::MakeFor(u, 64, ir::ForKind::kThreadIdxX,
                   ir::MakeStore(c, {u}, ir::Load(staged, {ir::FloorMod(u + 1, 64)})))});
  ir::KernelFunction kernel;
  kernel.name = "unstaged";
  kernel.params = {a, c};
  kernel.num_outputs = 1;
  kernel.body = ir::MakeBlockRealize({}, ir::IntImm(1), root);
  try {
    backends::CompileGpuKernel(kernel, {ir::CudaArchitectures().front(), 3});
    FAIL() << "a whole-grid shared buffer compiled";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("A_shared"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
