// What the verify_program postprocessor (kernels/search/postprocessors/verify_program.cc)
// accepts and rejects on a 256-bit target, on kernels written in the text form
// (tests/kernels/search/data/verify_program_*.input.tir): a finished add + relu (parallel rows,
// 32-lane vectors) and the golden output of rewrite_parallel_vectorize_unroll pass, unchanged,
// and compute what the unscheduled kernel computes; rejected, one file per reason: a vector of 6
// lanes, a vector longer than 32 lanes, a vectorized reduction loop, a parallel-extent
// annotation of 0, a block allocating inside a vector loop, an unbound variable. Through
// ReplayProgram the rejection comes with its reason (the postprocessor's name).
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "kernels/compute/lower.h"
#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::ExpectSameOutputs;
using testing::F32;
using testing::GoldenTarget;
using testing::ReadKernel;

bool Verify(const ir::KernelFunction& kernel) {
  Schedule s(kernel, /*seed=*/1);
  bool ok = MakeVerifyProgram(GoldenTarget())->Apply(s);
  // Verification never changes the program.
  EXPECT_EQ(ir::PrintKernel(s.function()), ir::PrintKernel(kernel));
  EXPECT_TRUE(s.trace().empty()) << s.trace().ToText();
  return ok;
}

ir::KernelFunction UnscheduledAddRelu() {
  ir::GraphBuilder b("add_relu");
  ir::ValueId x = b.Input("x", F32({8, 32}));
  ir::ValueId bias = b.Input("bias", F32({32}));
  ir::ValueId r = b.Call("relu", {b.Call("add", {x, bias})});
  return LowerGraphFunction(b.Finish(r), "add_relu");
}

TEST(VerifyProgramGolden, AcceptsFinishedPrograms) {
  ir::KernelFunction valid = ReadKernel("verify_program_valid.input.tir");
  EXPECT_TRUE(Verify(valid));
  ExpectSameOutputs(UnscheduledAddRelu(), valid);
  EXPECT_TRUE(Verify(ReadKernel("rewrite_parallel_vectorize_unroll_matmul.expected.tir")));
}

TEST(VerifyProgramGolden, RejectsInvalidPrograms) {
  for (const char* reason : {"vector_width_6", "vector_too_long", "vectorized_reduction",
                             "parallel_annotation_0", "alloc_in_vector_loop", "unbound_variable"}) {
    SCOPED_TRACE(reason);
    EXPECT_FALSE(Verify(ReadKernel(std::string("verify_program_") + reason + ".input.tir")));
  }
}

TEST(VerifyProgramGolden, RejectionThroughReplayProgramSaysWhich) {
  // A sampled program (a trace with a sampling instruction, so the space's postprocessors run)
  // whose kernel vectorizes 6 lanes: ReplayProgram rejects it and names verify_program.
  ir::KernelFunction kernel = ReadKernel("verify_program_vector_width_6.input.tir");
  Schedule s(kernel, /*seed=*/1);
  BlockRV root = s.GetBlock("root");
  std::vector<Schedule> annotated = MakeParallelVectorizeUnroll(GoldenTarget())->Apply(s, root);
  ASSERT_EQ(annotated.size(), 1u);
  SearchSpace space;
  space.postprocessors = {MakeVerifyProgram(GoldenTarget())};
  std::string why;
  EXPECT_FALSE(ReplayProgram(kernel, annotated[0].trace(), space, &why));
  EXPECT_NE(why.find("verify_program"), std::string::npos) << why;
  // The valid program with the same annotations passes.
  ir::KernelFunction valid = ReadKernel("verify_program_valid.input.tir");
  Schedule v(valid, /*seed=*/1);
  BlockRV valid_root = v.GetBlock("root");
  std::vector<Schedule> ok = MakeParallelVectorizeUnroll(GoldenTarget())->Apply(v, valid_root);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_TRUE(ReplayProgram(valid, ok[0].trace(), space, &why)) << why;
}

}  // namespace
}  // namespace tandem::kernels
