// The default GPU schedule: a reduction with operand reuse gets a register tile per thread, other
// blocks are spread flat over threads; both keep the kernel's result.
#include <gtest/gtest.h>

#include "kernels/default_schedule.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::CompareKernels;
using testing::Matmul;

TEST(GpuDefaultSchedule, MatmulGetsARegisterTilePerThread) {
  ir::KernelFunction kernel = Matmul(64, 64, 32);
  Schedule s = ApplyGpuDefaultSchedule(kernel, {.threads_per_block = 64});
  std::string trace = s.trace().ToText();
  EXPECT_NE(trace.find("cache_write("), std::string::npos) << trace;
  EXPECT_NE(trace.find("unroll("), std::string::npos) << trace;
  EXPECT_NE(trace.find("threadIdx.x"), std::string::npos) << trace;
  EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5);
}

TEST(GpuDefaultSchedule, SmallOrReuseFreeBlocksAreSpreadFlat) {
  // 16 x 16 outputs in 4 x 4 tiles would leave most of a 256-thread block idle: flat instead.
  ir::KernelFunction small = Matmul(16, 16, 8);
  Schedule s = ApplyGpuDefaultSchedule(small);
  std::string trace = s.trace().ToText();
  EXPECT_EQ(trace.find("cache_write("), std::string::npos) << trace;
  EXPECT_NE(trace.find("bind("), std::string::npos) << trace;
  EXPECT_LT(CompareKernels(small, s.function()), 1e-5);
  ir::KernelFunction relu = testing::LowerOp("relu", {testing::F32({3, 100})});
  Schedule r = ApplyGpuDefaultSchedule(relu);
  EXPECT_EQ(r.trace().ToText().find("cache_write("), std::string::npos);
  EXPECT_LT(CompareKernels(relu, r.function()), 1e-5);
}

TEST(GpuDefaultSchedule, FewOutputsReduceThroughPerThreadPartials) {
  // Four row sums of 4096 and one sum of everything: partials bound to threads, then combined.
  for (ir::Attrs attrs : {ir::Attrs{{"axes", std::vector<int64_t>{1}}}, ir::Attrs{}}) {
    ir::KernelFunction sum = testing::LowerOp("sum", {testing::F32({4, 4096})}, attrs);
    Schedule s = ApplyGpuDefaultSchedule(sum);
    std::string trace = s.trace().ToText();
    EXPECT_NE(trace.find("rfactor("), std::string::npos) << trace;
    EXPECT_NE(trace.find("threadIdx.x"), std::string::npos) << trace;
    // The interpreter's thread simulation checks the launches for races too.
    EXPECT_LT(CompareKernels(sum, s.function()), 1e-5);
  }
}

}  // namespace
}  // namespace tandem::kernels
