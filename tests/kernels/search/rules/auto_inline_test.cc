// Golden text of the auto_inline rule (kernels/search/rules/auto_inline.cc): in add + relu, the
// add block (pointwise, not an output) is inlined into relu; applied to the relu block (an output,
// which cannot be inlined) it is reverse-inlined into its pointwise producer instead. Both
// compute what the unscheduled kernel computes. Left alone: an exp feeding a sum (an intrinsic is
// not inlined into a reduction, where it would be evaluated once per reduction step), the
// reduction block itself and the root. A dense convolution's pad stays a stage of its own on a
// CPU (the convolution would recompute each padded element once per output-channel tile and
// tap) and is inlined on a GPU; a depthwise convolution's pad, read as whole vectors along the
// channels, is inlined on both.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "tests/kernels/schedule_test_util.h"
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

TEST(AutoInline, KeepsADenseConvolutionsPadSeparateOnACpu) {
  auto conv = [](int64_t groups) {
    int64_t in_channels = groups == 1 ? 16 : 1;
    return testing::LowerOp("conv2d",
                            {testing::F32({1, 8, 8, 16}), testing::F32({3, 3, in_channels, 16})},
                            ir::Attrs{{"data_layout", std::string("NHWC")},
                                      {"kernel_layout", std::string("HWIO")},
                                      {"groups", groups},
                                      {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  };
  SearchTarget gpu = GoldenTarget();
  gpu.gpu = true;
  for (int64_t groups : {int64_t{1}, int64_t{16}}) {
    ir::KernelFunction kernel = conv(groups);
    for (bool on_gpu : {false, true}) {
      SCOPED_TRACE(fmt::format("groups {}, {}", groups, on_gpu ? "GPU" : "CPU"));
      ScheduleRulePtr rule = MakeAutoInline(on_gpu ? gpu : GoldenTarget());
      auto [schedule, block] = AtBlock(kernel, "pad");
      std::vector<Schedule> out = rule->Apply(schedule, block);
      ASSERT_EQ(out.size(), 1u);
      bool kept = FindBlock(out[0].function(), "pad").has_value();
      EXPECT_EQ(kept, groups == 1 && !on_gpu);
      ExpectSameOutputs(kernel, out[0].function());
    }
  }
}

}  // namespace
}  // namespace tandem::kernels
