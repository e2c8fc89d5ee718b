// Golden text of the parallel_vectorize_unroll rule
// (kernels/search/rules/parallel_vectorize_unroll.cc) with fixed decisions on a 256-bit, 4-core
// target: the root block of a matmul is annotated with the largest parallel extent (candidates
// 1, 16, 64, 256; decision 64), the largest vector extent (4 vectors of 8 lanes: 32) and the
// unroll depth (candidates 0, 16, 64, 512; decision 16). The loops are untouched (the rewrite is
// rewrite_parallel_vectorize_unroll's), so the program computes what it computed. Any block but
// the root is left alone.
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

TEST(ParallelVectorizeUnrollGolden, AnnotatesRoot) {
  ir::KernelFunction kernel = ReadKernel("matmul.input.tir");
  ScheduleRulePtr rule = MakeParallelVectorizeUnroll(GoldenTarget());
  auto [schedule, block] = AtBlock(kernel, "root");
  std::vector<Schedule> out = rule->Apply(schedule, block);
  ASSERT_EQ(out.size(), 1u);
  // Category indices: parallel extent 64 (index 2), unroll depth 16 (index 1).
  Schedule fixed = ReplayWithDecisions(kernel, out[0].trace(), {int64_t{2}, int64_t{1}});
  ExpectGolden("parallel_vectorize_unroll_matmul.expected.tir",
               "parallel_vectorize_unroll on the root block of matmul.input.tir (vector_lanes=8, "
               "4 cores)",
               fixed.function(), &fixed.trace());
  ExpectSameOutputs(kernel, fixed.function());
}

TEST(ParallelVectorizeUnrollGolden, LeavesOtherBlocks) {
  ScheduleRulePtr rule = MakeParallelVectorizeUnroll(GoldenTarget());
  auto [schedule, block] = AtBlock(ReadKernel("matmul.input.tir"), "matmul");
  ExpectUnchanged(rule->Apply(schedule, block), schedule);
}

}  // namespace
}  // namespace tandem::kernels
