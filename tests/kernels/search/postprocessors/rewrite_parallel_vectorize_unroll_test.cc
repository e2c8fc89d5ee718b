// Golden text of the rewrite_parallel_vectorize_unroll postprocessor
// (kernels/search/postprocessors/rewrite_parallel_vectorize_unroll.cc) on a 256-bit target: in
// the tiled matmul whose root asks for a parallel extent of at most 16, vectors of at most 32
// lanes and an unroll depth of 16, each block's innermost loop is vectorized (split first where
// it is longer than 32), the outer spatial loops down to the first that is not perfectly nested
// are fused and parallelized, and loops holding one block alone are unrolled from the inside
// out while their extents multiply to at most 16. The result computes what the input computes
// and verify_program accepts it. Left alone: a kernel without the root annotations; rejected:
// an annotation asking for a parallel extent below 1; a reduction's innermost loop is never
// vectorized.
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

TEST(RewriteParallelVectorizeUnrollGolden, TiledMatmul) {
  ir::KernelFunction kernel = ReadKernel("matmul_tiled_annotated.input.tir");
  Schedule s(kernel, /*seed=*/1);
  ASSERT_TRUE(MakeRewriteParallelVectorizeUnroll(GoldenTarget())->Apply(s));
  ExpectGolden("rewrite_parallel_vectorize_unroll_matmul.expected.tir",
               "rewrite_parallel_vectorize_unroll on matmul_tiled_annotated.input.tir "
               "(vector_lanes=8)",
               s.function(), &s.trace());
  ExpectSameOutputs(kernel, s.function());
  ExpectSameOutputs(ReadKernel("matmul.input.tir"), s.function());
  EXPECT_TRUE(MakeVerifyProgram(GoldenTarget())->Apply(s));
}

TEST(RewriteParallelVectorizeUnrollGolden, LeavesUnannotatedAndRejectsBadAnnotation) {
  PostprocessorPtr post = MakeRewriteParallelVectorizeUnroll(GoldenTarget());
  {
    SCOPED_TRACE("no root annotations");
    ir::KernelFunction kernel = ReadKernel("matmul_tiled.input.tir");
    Schedule s(kernel, /*seed=*/1);
    ASSERT_TRUE(post->Apply(s));
    EXPECT_EQ(ir::PrintKernel(s.function()), ir::PrintKernel(kernel));
    EXPECT_TRUE(s.trace().empty()) << s.trace().ToText();
  }
  {
    SCOPED_TRACE("tandem.parallel=0");
    std::string text = ReadGoldenFile("matmul_tiled_annotated.input.tir");
    size_t at = text.find("tandem.parallel=16");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 18, "tandem.parallel=0");
    Schedule s(ir::ParseKernel(text, "edited"), /*seed=*/1);
    EXPECT_FALSE(post->Apply(s));
  }
}

TEST(RewriteParallelVectorizeUnrollGolden, ReductionLoopNotVectorized) {
  // The row sum with only a vector annotation: its innermost loop (k0, 64) is bound to the
  // reduction iterator, so nothing is vectorized (nor split for it).
  std::string text = ReadGoldenFile("sum_rows.input.tir");
  size_t at = text.find("block root() {");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 14, "block root() annotations {tandem.vectorize=32} {");
  ir::KernelFunction kernel = ir::ParseKernel(text, "sum_rows (annotated)");
  Schedule s(kernel, /*seed=*/1);
  ASSERT_TRUE(MakeRewriteParallelVectorizeUnroll(GoldenTarget())->Apply(s));
  EXPECT_EQ(ir::PrintKernel(s.function()), ir::PrintKernel(kernel));
}

}  // namespace
}  // namespace tandem::kernels
