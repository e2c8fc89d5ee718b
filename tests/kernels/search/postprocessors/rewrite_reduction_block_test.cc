// Golden text of the rewrite_reduction_block postprocessor
// (kernels/search/postprocessors/rewrite_reduction_block.cc): the init of a reduction block moves
// into a block of its own placed before the block's outermost reduction loop
// (decompose_reduction): in the SSRSRS-tiled matmul, before k_0 under the S1 tile, so it fills
// one local tile; in an untiled row sum, before the reduction loop of each row. Both compute
// what their input computes and the postprocessor accepts them. A kernel without a reduction
// (add + relu) is left as it is.
#include <gtest/gtest.h>

#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::ExpectGolden;
using testing::ExpectSameOutputs;
using testing::GoldenTarget;
using testing::ReadKernel;

void ExpectRewritten(const std::string& input, const std::string& expected) {
  SCOPED_TRACE(input);
  ir::KernelFunction kernel = ReadKernel(input);
  Schedule s(kernel, /*seed=*/1);
  ASSERT_TRUE(MakeRewriteReductionBlock(GoldenTarget())->Apply(s));
  ExpectGolden(expected, "rewrite_reduction_block on " + input, s.function(), &s.trace());
  ExpectSameOutputs(kernel, s.function());
}

TEST(RewriteReductionBlockGolden, TiledMatmulInitBeforeOuterReductionLoop) {
  ExpectRewritten("matmul_tiled.input.tir", "rewrite_reduction_block_matmul.expected.tir");
}

TEST(RewriteReductionBlockGolden, RowSumInitBeforeReductionLoop) {
  ExpectRewritten("sum_rows.input.tir", "rewrite_reduction_block_sum.expected.tir");
}

TEST(RewriteReductionBlockGolden, LeavesKernelWithoutReduction) {
  ir::KernelFunction kernel = ReadKernel("add_relu.input.tir");
  Schedule s(kernel, /*seed=*/1);
  ASSERT_TRUE(MakeRewriteReductionBlock(GoldenTarget())->Apply(s));
  EXPECT_EQ(ir::PrintKernel(s.function()), ir::PrintKernel(kernel));
  EXPECT_TRUE(s.trace().empty()) << s.trace().ToText();
}

}  // namespace
}  // namespace tandem::kernels
