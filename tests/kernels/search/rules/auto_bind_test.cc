// Golden text of the auto_bind rule (kernels/search/rules/auto_bind.cc) on the sm_80 search
// target: at the root of add + relu (two nests of 8 x 64), each nest's two loops are fused and
// split by a sampled thread count (candidates 32, 64, 128, 256, 512: at most the 512 iterations;
// decisions 64 and 512), bound to blockIdx.x and threadIdx.x, its block annotated with the count.
// The result computes what the unscheduled kernel computes (the interpreter simulates the thread
// blocks). A nest already bound is left alone, and so is any block but the root.
#include <gtest/gtest.h>

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

TEST(AutoBindGolden, BindsEveryNestAtTheRoot) {
  ir::KernelFunction kernel = ReadKernel("add_relu.input.tir");
  ScheduleRulePtr rule = MakeAutoBind(GpuSearchTarget("sm_80"));
  auto [schedule, block] = AtBlock(kernel, "root");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  Schedule fixed = ReplayWithDecisions(kernel, out[0].trace(), {int64_t{1}, int64_t{4}});
  ExpectGolden("auto_bind_add_relu.expected.tir",
               "auto_bind on the root block of add_relu.input.tir (sm_80)", fixed.function(),
               &fixed.trace());
  ExpectSameOutputs(kernel, fixed.function());
  // Bound already: nothing more to bind.
  Schedule again = fixed;
  BlockRV root = again.GetBlock("root");
  std::vector<Schedule> twice = rule->Apply(again, root);
  ASSERT_EQ(twice.size(), 1u);
  EXPECT_EQ(twice[0].trace(), again.trace());
}

TEST(AutoBindGolden, LeavesOtherBlocks) {
  ScheduleRulePtr rule = MakeAutoBind(GpuSearchTarget("sm_80"));
  auto [schedule, block] = AtBlock(ReadKernel("add_relu.input.tir"), "add");
  ExpectUnchanged(rule->Apply(schedule, block), schedule);
}

TEST(AutoUnroll, AnnotatesTheRootWithASampledDepth) {
  ir::KernelFunction kernel = ReadKernel("matmul.input.tir");
  ScheduleRulePtr rule = MakeAutoUnroll(GpuSearchTarget("sm_80"));
  auto [schedule, block] = AtBlock(kernel, "root");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  // Candidates 0, 16, 64, 512, 1024: index 2 is 64.
  Schedule fixed = ReplayWithDecisions(kernel, out[0].trace(), {int64_t{2}});
  const auto* root = ir::As<ir::BlockRealizeNode>(fixed.function().body);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->block->annotations.GetInt("tandem.unroll", -1), 64);
  auto [other, matmul] = AtBlock(kernel, "matmul");
  ExpectUnchanged(rule->Apply(other, matmul), other);
}

}  // namespace
}  // namespace tandem::kernels
