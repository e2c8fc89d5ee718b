// Golden text of the add_rfactor rule (kernels/search/rules/add_rfactor.cc) with a fixed split
// on a 256-bit, 4-core target: a row sum (4 outputs, 64-long reduction) keeps its unfactored
// space and gains two more, the reduction split 8*8 and factored (rfactor) on the inner part
// (partial sums per lane) and on the outer part (partial sums per outer step). Each design space
// computes what the unscheduled kernel computes; a matmul (data reuse: multi_level_tiling's
// business) and a reduction with enough spatial parallelism are left alone.
#include <gtest/gtest.h>

#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::AtBlock;
using testing::ExpectGolden;
using testing::ExpectSameOutputs;
using testing::ExpectUnchanged;
using testing::F32;
using testing::GoldenTarget;
using testing::LowerOp;
using testing::ReadKernel;
using testing::ReplayWithDecisions;
using Ints = std::vector<int64_t>;

TEST(AddRFactorGolden, RowSumFactoredOnEitherPart) {
  ir::KernelFunction kernel = ReadKernel("sum_rows.input.tir");
  ScheduleRulePtr rule = MakeAddRFactor(GoldenTarget());
  auto [schedule, block] = AtBlock(kernel, "sum");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 3u);
  // The unfactored space comes first, unchanged.
  EXPECT_EQ(ir::PrintKernel(out[0].function()), ir::PrintKernel(kernel));
  EXPECT_EQ(out[0].trace(), schedule.trace());
  const char* files[] = {"", "add_rfactor_inner.expected.tir", "add_rfactor_outer.expected.tir"};
  const char* parts[] = {"", "inner", "outer"};
  for (size_t k = 1; k < 3; ++k) {
    SCOPED_TRACE(parts[k]);
    // The fused reduction (64) split 8*8.
    Schedule fixed = ReplayWithDecisions(kernel, out[k].trace(), {Ints{8, 8}});
    ExpectGolden(files[k],
                 std::string("add_rfactor on block sum of sum_rows.input.tir, factored on the ") +
                     parts[k] + " part (vector_lanes=8, 4 cores)",
                 fixed.function(), &fixed.trace());
    ExpectSameOutputs(kernel, fixed.function());
  }
}

TEST(AddRFactorGolden, LeavesReductionsWithReuseOrEnoughParallelism) {
  ScheduleRulePtr rule = MakeAddRFactor(GoldenTarget());
  {
    SCOPED_TRACE("matmul: data reuse");
    auto [schedule, block] = AtBlock(ReadKernel("matmul.input.tir"), "matmul");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
  {
    SCOPED_TRACE("sum of f32[64,64] over axis 1: 64 outputs = 4 cores * 16");
    auto [schedule, block] = AtBlock(
        LowerOp("sum", {F32({64, 64})}, ir::Attrs{{"axes", std::vector<int64_t>{1}}}), "sum");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
  {
    SCOPED_TRACE("sum of f32[4,8] over axis 1: a reduction shorter than two vectors");
    auto [schedule, block] =
        AtBlock(LowerOp("sum", {F32({4, 8})}, ir::Attrs{{"axes", std::vector<int64_t>{1}}}), "sum");
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
}

}  // namespace
}  // namespace tandem::kernels
