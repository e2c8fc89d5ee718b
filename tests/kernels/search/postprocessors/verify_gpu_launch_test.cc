// What the verify_gpu_launch postprocessor (kernels/search/postprocessors/verify_gpu_launch.cc)
// accepts and rejects, on the golden outputs of the GPU rules and on targets whose limits sit
// exactly at or just below what a program needs:
//   - the unscheduled add + relu: rejected (its work would run on one thread);
//   - add + relu bound by auto_bind with 512 threads per block: accepted with 512 threads per
//     block, rejected with 256;
//   - the matmul staged through shared memory (a 16 x 4 and a 4 x 16 f32 tile: 512 bytes per
//     block): accepted with 512 bytes, rejected with 511;
//   - the matmul accumulated in registers (8 x 4 = 32 outputs per thread):
//     accepted with 32 registers per thread, rejected with 31;
//   - the row sum over the threads of a block (cross_thread_reduction): accepted.
// Verification never changes the program.
#include <gtest/gtest.h>

#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::ReadKernel;

bool Verify(const ir::KernelFunction& kernel, const SearchTarget& target) {
  Schedule s(kernel, /*seed=*/1);
  bool ok = MakeVerifyGpuLaunch(target)->Apply(s);
  EXPECT_EQ(ir::PrintKernel(s.function()), ir::PrintKernel(kernel));
  EXPECT_TRUE(s.trace().empty()) << s.trace().ToText();
  return ok;
}

SearchTarget Sm80() {
  return GpuSearchTarget("sm_80");
}

TEST(VerifyGpuLaunch, RejectsWorkLeftToOneThread) {
  EXPECT_FALSE(Verify(ReadKernel("add_relu.input.tir"), Sm80()));
  EXPECT_FALSE(Verify(ReadKernel("matmul.input.tir"), Sm80()));
}

TEST(VerifyGpuLaunch, ThreadsPerBlock) {
  ir::KernelFunction bound = ReadKernel("auto_bind_add_relu.expected.tir");  // 64 and 512 threads
  SearchTarget target = Sm80();
  target.max_threads_per_block = 512;
  EXPECT_TRUE(Verify(bound, target));
  target.max_threads_per_block = 256;
  EXPECT_FALSE(Verify(bound, target));
}

TEST(VerifyGpuLaunch, SharedMemoryPerBlock) {
  ir::KernelFunction staged = ReadKernel("multi_level_tiling_gpu_matmul_shared.expected.tir");
  SearchTarget target = Sm80();
  target.max_shared_memory_per_block = 512;
  EXPECT_TRUE(Verify(staged, target));
  target.max_shared_memory_per_block = 511;
  EXPECT_FALSE(Verify(staged, target));
}

TEST(VerifyGpuLaunch, LocalElementsPerThread) {
  ir::KernelFunction registers = ReadKernel("multi_level_tiling_gpu_matmul.expected.tir");
  SearchTarget target = Sm80();
  target.max_registers_per_thread = 32;
  EXPECT_TRUE(Verify(registers, target));
  target.max_registers_per_thread = 31;
  EXPECT_FALSE(Verify(registers, target));
}

TEST(VerifyGpuLaunch, AcceptsTheRowSumOverThreads) {
  EXPECT_TRUE(Verify(ReadKernel("cross_thread_reduction_sum.expected.tir"), Sm80()));
}

}  // namespace
}  // namespace tandem::kernels
