// Golden text of the cross_thread_reduction rule (kernels/search/rules/cross_thread_reduction.cc)
// on the sm_80 search target: a row sum of f32[4,64] keeps its unchanged design space and gains
// one where each row is a thread block whose 32 threads (the only count that divides 64 and
// leaves each thread two steps) sum partials in "shared" memory, combined by the block; the
// result computes the row sums (the interpreter simulates the thread blocks). A matmul (operand
// reuse) and the root are left alone.
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
using testing::ReadKernel;
using testing::ReplayWithDecisions;

TEST(CrossThreadReductionGolden, RowSumOverTheThreadsOfABlock) {
  ir::KernelFunction kernel = ReadKernel("sum_rows.input.tir");
  ScheduleRulePtr rule = MakeCrossThreadReduction(GpuSearchTarget("sm_80"));
  auto [schedule, block] = AtBlock(kernel, "sum");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 2u);
  ExpectUnchanged({out[0]}, schedule);
  Schedule fixed = ReplayWithDecisions(kernel, out[1].trace(), {int64_t{0}});
  ExpectGolden("cross_thread_reduction_sum.expected.tir",
               "cross_thread_reduction on block sum of sum_rows.input.tir (sm_80)",
               fixed.function(), &fixed.trace());
  ExpectSameOutputs(kernel, fixed.function());
  EXPECT_EQ(search::CategoricalsAnnotating(fixed.trace(), search::kThreadExtentKey).size(), 1u);
}

TEST(CrossThreadReductionGolden, LeavesMatmulAndRoot) {
  ScheduleRulePtr rule = MakeCrossThreadReduction(GpuSearchTarget("sm_80"));
  {
    SCOPED_TRACE("matmul: operand reuse");
    auto [schedule, block] = AtBlock(ReadKernel("matmul.input.tir"), "matmul");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
  {
    SCOPED_TRACE("the root block");
    auto [schedule, block] = AtBlock(ReadKernel("sum_rows.input.tir"), "root");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
}

}  // namespace
}  // namespace tandem::kernels
