// Golden text of the multi_level_tiling_gpu rule (kernels/search/rules/multi_level_tiling_gpu.cc)
// with fixed tile decisions on the sm_80 search target. A matmul gets two design spaces, both
// with S0 fused and bound to blockIdx.x, S2 to threadIdx.x, and the outputs accumulated in a
// "local" cache written back under the block loop by the threads that computed them:
//   - registers: the SSSRRSRS nest ordered S0 S2 S1 R0 R1 S3 R2 S4;
//   - cooperative fetch: S0 R0 S2 S1 R1 S3 R2 S4, both operand tiles copied into "shared" caches
//     under R0 by the block's threads.
// With a relu epilogue, the relu is inlined into the write-back. Each result
// computes what the unscheduled kernel computes (the interpreter simulates the thread blocks)
// and replays from its trace; blocks without data reuse, blocks that are not reductions and the
// root are left alone.
#include <gtest/gtest.h>

#include "kernels/schedule/block_analysis.h"
#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::AtBlock;
using testing::ExpectGolden;
using testing::ExpectSameOutputs;
using testing::ExpectUnchanged;
using testing::ReadKernel;
using testing::ReplayWithDecisions;
using Ints = std::vector<int64_t>;

// i (16): 1*2*2*2*2, j (32): 2*1*4*2*2, k (16): 4*2*2; 8 threads per block, 2 blocks.
const std::vector<ir::AttrValue> kTiles = {Ints{1, 2, 2, 2, 2}, Ints{2, 1, 4, 2, 2}, Ints{4, 2, 2}};

TEST(MultiLevelTilingGpuGolden, MatmulInRegistersAndThroughSharedMemory) {
  ir::KernelFunction kernel = ReadKernel("matmul.input.tir");
  ScheduleRulePtr rule = MakeMultiLevelTilingGpu(GpuSearchTarget("sm_80"));
  auto [schedule, block] = AtBlock(kernel, "matmul");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 2u);
  const char* files[] = {"multi_level_tiling_gpu_matmul.expected.tir",
                         "multi_level_tiling_gpu_matmul_shared.expected.tir"};
  for (size_t k = 0; k < 2; ++k) {
    Schedule fixed = ReplayWithDecisions(kernel, out[k].trace(), kTiles);
    ExpectGolden(
        files[k],
        std::string("multi_level_tiling_gpu on block matmul of matmul.input.tir (sm_80), ") +
            (k == 0 ? "registers" : "cooperative fetch"),
        fixed.function(), &fixed.trace());
    ExpectSameOutputs(kernel, fixed.function());
    EXPECT_EQ(Schedule::Replay(kernel, fixed.trace()).trace(), fixed.trace());
  }
}

TEST(MultiLevelTilingGpuGolden, ReluEpilogueInlinedIntoTheWriteBack) {
  ir::KernelFunction kernel = ReadKernel("matmul_relu.input.tir");
  ScheduleRulePtr rule = MakeMultiLevelTilingGpu(GpuSearchTarget("sm_80"));
  auto [schedule, block] = AtBlock(kernel, "matmul");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 2u);
  Schedule fixed = ReplayWithDecisions(kernel, out[0].trace(), kTiles);
  ExpectGolden("multi_level_tiling_gpu_matmul_relu.expected.tir",
               "multi_level_tiling_gpu on block matmul of matmul_relu.input.tir (sm_80), registers",
               fixed.function(), &fixed.trace());
  EXPECT_FALSE(FindRealize(fixed.function(), "relu")) << "the relu is still a block of its own";
  ExpectSameOutputs(kernel, fixed.function());
}

TEST(MultiLevelTilingGpuGolden, LeavesBlocksWithoutReuseOrReduction) {
  ScheduleRulePtr rule = MakeMultiLevelTilingGpu(GpuSearchTarget("sm_80"));
  {
    SCOPED_TRACE("row sum: a reduction without data reuse");
    auto [schedule, block] = AtBlock(ReadKernel("sum_rows.input.tir"), "sum");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
  {
    SCOPED_TRACE("relu epilogue: not a reduction");
    auto [schedule, block] = AtBlock(ReadKernel("matmul_relu.input.tir"), "relu");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
  {
    SCOPED_TRACE("the root block");
    auto [schedule, block] = AtBlock(ReadKernel("matmul.input.tir"), "root");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
}

}  // namespace
}  // namespace tandem::kernels
