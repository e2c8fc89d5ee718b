// Golden text of the rewrite_epilogue_fusion postprocessor
// (kernels/search/postprocessors/rewrite_epilogue_fusion.cc): in the SSRSRS-tiled matmul + relu
// that multi_level_tiling left, the relu epilogue is computed (reverse_compute_at) under the
// matmul's loop that carries the tile level its fuse-level annotation names: under j_1 (level 2,
// one 4x16 tile at a time) as annotated, and under j_0 (level 1, 8x16) when the annotation is
// edited to 1. Both compute what the input computes. An epilogue without a fuse level, or with
// a level that no loop carries, stays where it is (and the program is still accepted).
#include <gtest/gtest.h>

#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::ExpectGolden;
using testing::ExpectSameOutputs;
using testing::GoldenTarget;
using testing::ReadGoldenFile;
using testing::ReadKernel;

// The input with its "tandem.fuse_level=2" annotation replaced by `annotation`.
ir::KernelFunction InputWithFuseLevel(const std::string& annotation) {
  std::string text = ReadGoldenFile("matmul_relu_tiled.input.tir");
  const std::string from = "tandem.fuse_level=2";
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) text.replace(at, from.size(), annotation);
  return ir::ParseKernel(text, "matmul_relu_tiled.input.tir (edited)");
}

TEST(RewriteEpilogueFusionGolden, ReluUnderLevel2Tile) {
  ir::KernelFunction kernel = ReadKernel("matmul_relu_tiled.input.tir");
  Schedule s(kernel, /*seed=*/1);
  ASSERT_TRUE(MakeRewriteEpilogueFusion(GoldenTarget())->Apply(s));
  ExpectGolden("rewrite_epilogue_fusion_level2.expected.tir",
               "rewrite_epilogue_fusion on matmul_relu_tiled.input.tir (fuse level 2)",
               s.function(), &s.trace());
  ExpectSameOutputs(kernel, s.function());
  ExpectSameOutputs(ReadKernel("matmul_relu.input.tir"), s.function());
}

TEST(RewriteEpilogueFusionGolden, ReluUnderLevel1Tile) {
  ir::KernelFunction kernel = InputWithFuseLevel("tandem.fuse_level=1");
  Schedule s(kernel, /*seed=*/1);
  ASSERT_TRUE(MakeRewriteEpilogueFusion(GoldenTarget())->Apply(s));
  ExpectGolden("rewrite_epilogue_fusion_level1.expected.tir",
               "rewrite_epilogue_fusion on matmul_relu_tiled.input.tir with fuse level 1",
               s.function(), &s.trace());
  ExpectSameOutputs(kernel, s.function());
}

TEST(RewriteEpilogueFusionGolden, LeavesEpilogueWithoutUsableLevel) {
  PostprocessorPtr post = MakeRewriteEpilogueFusion(GoldenTarget());
  {
    SCOPED_TRACE("no fuse level (the untiled kernel)");
    ir::KernelFunction kernel = ReadKernel("matmul_relu.input.tir");
    Schedule s(kernel, /*seed=*/1);
    ASSERT_TRUE(post->Apply(s));
    EXPECT_EQ(ir::PrintKernel(s.function()), ir::PrintKernel(kernel));
    EXPECT_TRUE(s.trace().empty()) << s.trace().ToText();
  }
  {
    SCOPED_TRACE("fuse level 3: no loop carries it");
    ir::KernelFunction kernel = InputWithFuseLevel("tandem.fuse_level=3");
    Schedule s(kernel, /*seed=*/1);
    ASSERT_TRUE(post->Apply(s));
    EXPECT_EQ(ir::PrintKernel(s.function()), ir::PrintKernel(kernel));
    EXPECT_TRUE(s.trace().empty()) << s.trace().ToText();
  }
}

}  // namespace
}  // namespace tandem::kernels
