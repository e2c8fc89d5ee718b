// TrySteps (kernels/schedule/schedule.h) takes a primitive's refusal of an illegal step (a
// ScheduleError) as "not applicable": it restores the schedule and returns false. Any other
// error (a stale handle, a bug) is rethrown, the schedule restored as well. Replaying a trace
// keeps a refusal a ScheduleError, so that the search can tell it apart the same way.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/schedule/schedule.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::Matmul;

TEST(TrySteps, AppliesALegalStep) {
  Schedule s(Matmul(8, 6, 8));
  BlockRV b = s.GetBlock("matmul");
  std::vector<LoopRV> loops = s.GetLoops(b);
  EXPECT_TRUE(TrySteps(s, [&] { s.Split(loops[0], {2, 4}); }));
  EXPECT_EQ(s.GetLoops(b).size(), 4u);
}

TEST(TrySteps, AnIllegalStepIsNotApplicableAndUndone) {
  Schedule s(Matmul(8, 6, 8));
  BlockRV b = s.GetBlock("matmul");
  std::vector<LoopRV> loops = s.GetLoops(b);  // i, j, k
  ir::KernelFunction before = s.function();
  size_t trace_size = s.trace().size();
  // A legal split, then parallelizing the reduction loop: the whole step is undone.
  EXPECT_FALSE(TrySteps(s, [&] {
    s.Split(loops[0], {2, 4});
    s.Parallel(loops[2]);
  }));
  EXPECT_TRUE(ir::StructuralEqual(before, s.function()))
      << ir::StructuralDiff(before, s.function());
  EXPECT_EQ(trace_size, s.trace().size());
  // Each primitive's refusal is a ScheduleError.
  EXPECT_THROW(s.Parallel(loops[2]), ScheduleError);
  EXPECT_THROW(s.Split(loops[1], {2, 2}), ScheduleError);
  EXPECT_THROW(s.ComputeInline(b), ScheduleError);
}

TEST(TrySteps, RethrowsAnErrorThatIsNoRefusal) {
  Schedule s(Matmul(8, 6, 8));
  BlockRV b = s.GetBlock("matmul");
  std::vector<LoopRV> loops = s.GetLoops(b);
  ir::KernelFunction before = s.function();
  size_t trace_size = s.trace().size();
  try {
    TrySteps(s, [&] {
      s.Split(loops[0], {2, 4});
      throw ir::Error("a bug in the rule");
    });
    ADD_FAILURE() << "TrySteps swallowed an error that is no refusal";
  } catch (const ScheduleError& e) {
    ADD_FAILURE() << "a plain error became a refusal: " << e.what();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.message(), "a bug in the rule");
  }
  EXPECT_TRUE(ir::StructuralEqual(before, s.function()))
      << ir::StructuralDiff(before, s.function());
  EXPECT_EQ(trace_size, s.trace().size());
  // A handle to a block that does not exist is a caller's mistake, not an illegal step.
  EXPECT_THROW(TrySteps(s, [&] { s.GetBlock("no_such_block"); }), ir::Error);
  // Nor is an exception of another kind.
  EXPECT_THROW(TrySteps(s, [&] { throw std::logic_error("bug"); }), std::logic_error);
}

TEST(TrySteps, ReplayKeepsARefusalAScheduleError) {
  Schedule recorded(Matmul(4, 6, 8));
  recorded.Split(recorded.GetLoops(recorded.GetBlock("matmul"))[0], {2, 2});
  // On a taller matrix the recorded factors no longer cover the loop.
  EXPECT_THROW(Schedule::Replay(Matmul(8, 6, 8), recorded.trace()), ScheduleError);
  EXPECT_NO_THROW(Schedule::Replay(Matmul(4, 6, 8), recorded.trace()));
}

}  // namespace
}  // namespace tandem::kernels
