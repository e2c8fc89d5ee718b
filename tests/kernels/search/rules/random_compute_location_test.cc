// Golden text of the random_compute_location rule
// (kernels/search/rules/random_compute_location.cc) with a fixed location: in exp + row sum, the
// exp block (not inlined: an intrinsic feeding a reduction) is computed under the sum's row loop
// (location 0 of sample_compute_location), so each row's exponentials are made just before they
// are summed. The result computes what the unscheduled kernel computes. Left alone: blocks that
// write an output (the sum), and blocks multi_level_tiling already tiled.
#include <gtest/gtest.h>

#include "kernels/search/components.h"
#include "kernels/search/search_util.h"
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

TEST(RandomComputeLocationGolden, ExpComputedUnderSumRow) {
  ir::KernelFunction kernel = ReadKernel("exp_sum.input.tir");
  ScheduleRulePtr rule = MakeRandomComputeLocation(GoldenTarget());
  auto [schedule, block] = AtBlock(kernel, "exp");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  Schedule fixed = ReplayWithDecisions(kernel, out[0].trace(), {int64_t{0}});
  ExpectGolden("random_compute_location_exp.expected.tir",
               "random_compute_location on block exp of exp_sum.input.tir, location 0",
               fixed.function(), &fixed.trace());
  ExpectSameOutputs(kernel, fixed.function());
}

TEST(RandomComputeLocationGolden, LeavesOutputsAndTiledBlocks) {
  ScheduleRulePtr rule = MakeRandomComputeLocation(GoldenTarget());
  {
    SCOPED_TRACE("sum: writes the output");
    auto [schedule, block] = AtBlock(ReadKernel("exp_sum.input.tir"), "sum");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
  {
    SCOPED_TRACE("matmul tiled by multi_level_tiling");
    ir::KernelFunction kernel = ReadKernel("matmul_relu.input.tir");
    auto [schedule, block] = AtBlock(kernel, "matmul");
    std::vector<Schedule> tiled = MakeMultiLevelTiling(GoldenTarget())->Apply(schedule, block);
    ASSERT_EQ(tiled.size(), 1u);
    Schedule s = tiled[0];
    BlockRV matmul = s.GetBlock("matmul");
    ExpectUnchanged(rule->Apply(s, matmul), s);
  }
}

}  // namespace
}  // namespace tandem::kernels
