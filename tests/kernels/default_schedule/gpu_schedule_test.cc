// The default GPU schedule: a reduction with operand reuse gets a register tile per thread, other
// blocks are spread flat over threads; both keep the kernel's result.
#include <gtest/gtest.h>

#include "kernels/default_schedule.h"
#include "tests/kernels/kernel_text.h"
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

TEST(GpuDefaultSchedule, LongRowsReduceInOneBlockPerRowThroughSharedPartials) {
  // 64 rows of 1024 (layer norm statistics, softmax sums): a block per row, its threads' partials
  // in shared memory, combined by the block in the same launch; replayed from the trace alike.
  ir::KernelFunction sum = testing::LowerOp("sum", {testing::F32({64, 1024})},
                                            ir::Attrs{{"axes", std::vector<int64_t>{1}}});
  Schedule s = ApplyGpuDefaultSchedule(sum);
  std::string trace = s.trace().ToText();
  EXPECT_NE(trace.find("set_scope("), std::string::npos) << trace;
  EXPECT_NE(trace.find("\"shared\""), std::string::npos) << trace;
  EXPECT_NE(trace.find("blockIdx.x"), std::string::npos) << trace;
  EXPECT_LT(CompareKernels(sum, s.function()), 1e-5);
  Schedule replayed = Schedule::Replay(sum, s.trace());
  EXPECT_EQ(replayed.trace().ToText(), trace);
  EXPECT_LT(CompareKernels(sum, replayed.function()), 1e-5);
}

TEST(GpuDefaultSchedule, SetScopeMovesAnIntermediateBufferAndRefusesParameters) {
  ir::KernelFunction sum = testing::LowerOp("sum", {testing::F32({4, 256})},
                                            ir::Attrs{{"axes", std::vector<int64_t>{1}}});
  Schedule s(sum);
  BlockRV b = s.GetBlock(s.BlockNames().front());
  EXPECT_THROW(s.SetScope(b, 0, "shared"), ScheduleError);  // the output is a parameter
  BlockRV copy = s.CacheWrite(b, 0, "local");
  s.SetScope(b, 0, "shared");
  std::string text = testing::KernelText(s.function());
  EXPECT_NE(text.find("shared"), std::string::npos) << text;
  EXPECT_EQ(text.find(" local"), std::string::npos) << text;
  EXPECT_THROW(s.SetScope(b, 0, "texture"), ScheduleError);
  EXPECT_LT(CompareKernels(sum, s.function()), 1e-6);
  (void)copy;
}

TEST(GpuDefaultSchedule, RowWiseGroupsRunInOneLaunchWithABlockPerRow) {
  // Softmax and layer norm (reductions over each row, then an elementwise block over the same
  // rows): one thread block per row, threads across the row, the row statistics in "local"
  // memory after shared partials. Rows of 256, of 1000 (250 lanes) and of 768 in two row axes.
  struct Case {
    std::string op;
    std::vector<ir::TensorType> inputs;
    ir::Attrs attrs;
  };
  std::vector<Case> cases = {
      {"softmax", {testing::F32({64, 256})}, ir::Attrs{{"axis", int64_t{1}}}},
      {"softmax", {testing::F32({8, 1000})}, ir::Attrs{{"axis", int64_t{-1}}}},
      {"layer_norm",
       {testing::F32({2, 16, 768}), testing::F32({768}), testing::F32({768})},
       ir::Attrs{{"axis", int64_t{-1}}, {"epsilon", 1e-5}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " " + ir::ToString(c.inputs[0]));
    ir::KernelFunction kernel = testing::LowerOp(c.op, c.inputs, c.attrs);
    Schedule s = ApplyGpuDefaultSchedule(kernel);
    std::string trace = s.trace().ToText();
    EXPECT_NE(trace.find("\"local\""), std::string::npos) << trace;
    EXPECT_NE(trace.find("\"shared\""), std::string::npos) << trace;
    // Each reduction: partials over the lanes, then group sums of them (two rfactors).
    size_t rfactors = 0;
    for (size_t at = trace.find("rfactor("); at != std::string::npos;
         at = trace.find("rfactor(", at + 1)) {
      ++rfactors;
    }
    EXPECT_EQ(rfactors, 4u) << trace;
    std::string text = testing::KernelText(s.function());
    // One nest under one blockIdx.x loop: one launch.
    size_t first = text.find("blockIdx.x for");
    ASSERT_NE(first, std::string::npos) << text;
    EXPECT_EQ(text.find("blockIdx.x for", first + 1), std::string::npos) << text;
    // The interpreter simulates the thread blocks: shared races and shared local elements fail.
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5);
    Schedule replayed = Schedule::Replay(kernel, s.trace());
    EXPECT_EQ(replayed.trace().ToText(), trace);
  }
}

TEST(GpuDefaultSchedule, ShortRowsStayOneThreadPerRow) {
  // Rows of 16 would leave most of a warp idle: the flat rule keeps a thread per row.
  ir::KernelFunction kernel =
      testing::LowerOp("softmax", {testing::F32({512, 16})}, ir::Attrs{{"axis", int64_t{1}}});
  Schedule s = ApplyGpuDefaultSchedule(kernel);
  EXPECT_EQ(s.trace().ToText().find("rfactor("), std::string::npos) << s.trace().ToText();
  EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5);
}

}  // namespace
}  // namespace tandem::kernels
