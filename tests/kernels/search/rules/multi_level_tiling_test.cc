// Golden text of the multi_level_tiling rule (kernels/search/rules/multi_level_tiling.cc) with
// fixed tile decisions on a 256-bit, 4-core target: a matmul becomes the SSRSRS nest (spatial
// loops in four levels, the reduction in two, reordered S0 S1 R0 S2 R1 S3) accumulating in a
// "local" cache written back under the S1 tile; a matmul with a relu epilogue instead gets the
// tile-level annotations and the sampled fuse level on the epilogue (the epilogue itself is
// moved by rewrite_epilogue_fusion, not by the rule). Each result computes what the unscheduled
// kernel computes and replays from its trace; blocks without data reuse (a row sum) and blocks
// that are not reductions are left alone.
#include <gtest/gtest.h>

#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::AtBlock;
using testing::ExpectGolden;
using testing::ExpectSameOutputs;
using testing::ExpectUnchanged;
using testing::GoldenTarget;
using testing::ReadKernel;
using testing::ReplayWithDecisions;
using Ints = std::vector<int64_t>;

TEST(MultiLevelTilingGolden, MatmulTiledWithLocalCache) {
  ir::KernelFunction kernel = ReadKernel("matmul.input.tir");
  ScheduleRulePtr rule = MakeMultiLevelTiling(GoldenTarget());
  auto [schedule, block] = AtBlock(kernel, "matmul");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  // Seed switch off; i (16): 2*2*2*2, j (32, the vector axis): 2*1*2*8, k (16): 4*4.
  Schedule fixed =
      ReplayWithDecisions(kernel, out[0].trace(),
                          {int64_t{0}, Ints{2, 2, 2, 2}, Ints{2, 1, 2, 8}, Ints{4, 4}, int64_t{0}});
  ExpectGolden("multi_level_tiling_matmul.expected.tir",
               "multi_level_tiling on block matmul of matmul.input.tir (vector_lanes=8, 4 cores)",
               fixed.function(), &fixed.trace());
  ExpectSameOutputs(kernel, fixed.function());
  EXPECT_EQ(Schedule::Replay(kernel, fixed.trace()).trace(), fixed.trace());
}

TEST(MultiLevelTilingGolden, MatmulWithReluEpilogueAnnotatedForFusion) {
  ir::KernelFunction kernel = ReadKernel("matmul_relu.input.tir");
  ScheduleRulePtr rule = MakeMultiLevelTiling(GoldenTarget());
  auto [schedule, block] = AtBlock(kernel, "matmul");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  // Tiles as above; fuse level: candidate index 1 (tile level 2, under S1).
  Schedule fixed = ReplayWithDecisions(
      kernel, out[0].trace(),
      {int64_t{0}, Ints{2, 2, 2, 2}, Ints{2, 1, 2, 8}, Ints{4, 4}, int64_t{0}, int64_t{1}});
  ExpectGolden(
      "multi_level_tiling_matmul_relu.expected.tir",
      "multi_level_tiling on block matmul of matmul_relu.input.tir (vector_lanes=8, 4 cores)",
      fixed.function(), &fixed.trace());
  ExpectSameOutputs(kernel, fixed.function());
}

TEST(MultiLevelTilingGolden, LeavesBlocksWithoutReuseOrReduction) {
  ScheduleRulePtr rule = MakeMultiLevelTiling(GoldenTarget());
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
