// Golden text of the auto_inline rule (kernels/search/rules/auto_inline.cc): in add + relu, the
// add block (pointwise, not an output) is inlined into relu; applied to the relu block (an output,
// which cannot be inlined) it is reverse-inlined into its pointwise producer instead. Both
// compute what the unscheduled kernel computes. Left alone: an exp feeding a sum (an intrinsic is
// not inlined into a reduction, where it would be evaluated once per reduction step), the
// reduction block itself and the root.
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

TEST(AutoInlineGolden, InlinesAddIntoRelu) {
  ir::KernelFunction kernel = ReadKernel("add_relu.input.tir");
  ScheduleRulePtr rule = MakeAutoInline(GoldenTarget());
  auto [schedule, block] = AtBlock(kernel, "add");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  ExpectGolden("auto_inline_add.expected.tir", "auto_inline on block add of add_relu.input.tir",
               out[0].function(), &out[0].trace());
  ExpectSameOutputs(kernel, out[0].function());
}

TEST(AutoInlineGolden, ReverseInlinesOutputReluIntoAdd) {
  ir::KernelFunction kernel = ReadKernel("add_relu.input.tir");
  ScheduleRulePtr rule = MakeAutoInline(GoldenTarget());
  auto [schedule, block] = AtBlock(kernel, "relu");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  ExpectGolden("auto_inline_relu.expected.tir", "auto_inline on block relu of add_relu.input.tir",
               out[0].function(), &out[0].trace());
  ExpectSameOutputs(kernel, out[0].function());
}

TEST(AutoInlineGolden, LeavesIntrinsicFeedingReductionAndReductions) {
  ir::KernelFunction kernel = ReadKernel("exp_sum.input.tir");
  ScheduleRulePtr rule = MakeAutoInline(GoldenTarget());
  for (const char* name : {"exp", "sum", "root"}) {
    SCOPED_TRACE(name);
    auto [schedule, block] = AtBlock(kernel, name);
    ExpectUnchanged(rule->Apply(schedule, block), schedule);
  }
}

}  // namespace
}  // namespace tandem::kernels
