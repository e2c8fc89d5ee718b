// Illegal uses of every schedule primitive are errors that name the primitive and change
// nothing; and schedules that the fuzzer (schedule_fuzz_test.cc) once found computed wrongly
// stay correct.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_structural.h"
#include "tests/kernels/kernel_text.h"
#include "kernels/schedule/schedule.h"
#include "tests/kernels/schedule_test_util.h"
#include "tests/kernels/schedule_variants.h"

namespace tandem::kernels {
namespace {

using testing::AddDeadLoop;
using testing::Conv;
using testing::Conv2d;
using testing::ConvBiasRelu;
using testing::GuardBlock;
using testing::KernelText;
using testing::Matmul;

constexpr double kTolerance = 1e-5;

// Runs `primitive`, expects a ScheduleError (a refusal, see TrySteps) whose message names the
// primitive `name` and contains `fragment`, and checks that neither the function nor the trace
// changed.
template <typename F>
void ExpectIllegal(Schedule& s, F primitive, const std::string& name, const std::string& fragment) {
  ir::KernelFunction before = s.function();
  size_t trace_size = s.trace().size();
  try {
    primitive();
    ADD_FAILURE() << name << ": expected an error containing '" << fragment << "'\n"
                  << KernelText(s.function());
  } catch (const ScheduleError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(name), std::string::npos) << "does not name " << name << ": " << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
  EXPECT_TRUE(ir::StructuralEqual(before, s.function()))
      << ir::StructuralDiff(before, s.function());
  EXPECT_EQ(trace_size, s.trace().size()) << name << "\n" << s.trace().ToText();
}

void ExpectSame(const Schedule& s) {
  EXPECT_LT(testing::CompareKernels(s.original(), s.function()), kTolerance)
      << s.trace().ToText() << KernelText(s.function());
}

TEST(ScheduleIllegal, EveryPrimitiveRejectsIllegalUses) {
  {
    Schedule s(Matmul(8, 6, 8));
    BlockRV b = s.GetBlock("matmul");
    auto loops = s.GetLoops(b);  // i, j, k
    ExpectIllegal(
        s,
        [&] {
          s.Fuse({loops[0], loops[2]});
        },
        "fuse", "perfectly nested");
    ExpectIllegal(
        s, [&] { s.RFactor(loops[0], 0); }, "rfactor", "no reduction block");
    ExpectIllegal(
        s, [&] { s.ComputeInline(b); }, "compute_inline", "without init");
    ExpectIllegal(
        s, [&] { s.Parallel(loops[2]); }, "parallelize", "reduction iterator");
    ExpectIllegal(
        s,
        [&] {
          s.Split(loops[1], {2, 2});
        },
        "split", "less than the extent");
    // The consumer of the result would read partial sums inside the reduction loop, also when
    // that loop is moved outermost.
    BlockRV copy = s.CacheWrite(b, 0, "local");
    ExpectIllegal(
        s, [&] { s.ReverseComputeAt(copy, loops[2]); }, "reverse_compute_at", "partial results");
    s.Reorder({loops[2], loops[0]});
    ExpectIllegal(
        s, [&] { s.ReverseComputeAt(copy, loops[1]); }, "reverse_compute_at", "partial results");
    // The init moved out of the reduction loop, inside a split of it.
    auto k = s.Split(loops[2], {2, 4});
    ExpectIllegal(
        s, [&] { s.DecomposeReduction(b, k[1]); }, "decompose_reduction", "reduction loop");
    s.DecomposeReduction(b, k[0]);
    ExpectIllegal(
        s, [&] { s.CacheWrite(b, 0, "local"); }, "cache_write", "other writers");
    // Without its init the update reads the output it accumulates into: a copy would go stale.
    ExpectIllegal(
        s, [&] { s.CacheRead(b, 0, "local"); }, "cache_read", "also writes");
    ExpectSame(s);
  }
  {
    // A weight copy of shape [8, 6] cannot take a split factor of 4 on its second axis.
    Schedule s(Matmul(8, 6, 8));
    BlockRV b = s.GetBlock("matmul");
    BlockRV copy = s.CacheRead(b, 1, "global");
    ExpectIllegal(
        s, [&] { s.TransformLayout(copy, 0, true, "AB", "BA4b"); }, "transform_layout",
        "does not divide");
    ExpectIllegal(
        s, [&] { s.TransformLayout(b, 1, false, "AB", "AB4b"); }, "transform_layout",
        "does not divide");
  }
  {
    // Loops that feed both a spatial and a reduction iterator may not move past each other:
    // the init would run at a later iteration than the first update.
    Schedule s(Matmul(4, 4, 4));
    BlockRV b = s.GetBlock("matmul");
    auto loops = s.GetLoops(b);
    s.Reorder({loops[2], loops[1]});  // i, k, j
    auto i = s.Split(loops[0], {2, 2});
    LoopRV fused = s.Fuse({i[1], loops[2], loops[1]});
    auto parts = s.Split(fused, {8, 8});  // both parts feed k and a spatial iterator
    ExpectIllegal(
        s,
        [&] {
          s.Reorder({parts[1], parts[0]});
        },
        "reorder", "initializes the reduction");
    ExpectIllegal(
        s, [&] { s.RFactor(parts[0], 0); }, "rfactor", "spatial");
    s.Reorder({parts[0], i[0]});  // a purely spatial loop may move past them
    ExpectSame(s);
  }
  {
    Schedule s(ConvBiasRelu(2, 3, 5));
    BlockRV pad = s.GetBlock("pad");
    BlockRV conv = s.GetBlock("conv2d");
    BlockRV relu = s.GetBlock("relu");
    auto pad_loops = s.GetLoops(pad);
    auto conv_loops = s.GetLoops(conv);
    auto relu_loops = s.GetLoops(relu);
    ExpectIllegal(
        s,
        [&] {
          s.Reorder({conv_loops[1], pad_loops[0]});
        },
        "reorder", "perfectly nested chain");
    ExpectIllegal(
        s,
        [&] {
          s.Fuse({pad_loops[0], conv_loops[1]});
        },
        "fuse", "perfectly nested");
    // relu does not read the padded input: conv2d would read it before it is computed.
    ExpectIllegal(
        s, [&] { s.ComputeAt(pad, relu_loops[1]); }, "compute_at", "outside the loop");
    ExpectIllegal(
        s, [&] { s.ComputeInline(conv); }, "compute_inline", "without init");
    BlockRV add = s.GetBlock("add");
    ExpectIllegal(
        s, [&] { s.ReverseComputeInline(add); }, "reverse_compute_inline", "reduction");
    ExpectIllegal(
        s, [&] { s.ReverseComputeAt(conv, pad_loops[1]); }, "reverse_compute_at",
        "only spatial iterators");
    // After moving the padding under an output row, the row loop is no longer a perfect nest
    // with the padding's loops.
    s.ComputeAt(pad, conv_loops[2]);
    auto moved = s.GetLoops(pad);
    ExpectIllegal(
        s,
        [&] {
          s.Reorder({moved.back(), conv_loops[3]});
        },
        "reorder", "perfectly nested chain");
    ExpectIllegal(
        s,
        [&] {
          s.Fuse({conv_loops[2], conv_loops[3]});
        },
        "fuse", "perfectly nested");
    ExpectIllegal(
        s, [&] { s.RFactor(conv_loops[4], 0); }, "rfactor", "shares loops");
    ExpectSame(s);
  }
}

// A producer placed under a loop whose iterations do not move its writes (softmax's column sums
// recomputed for every row): that loop cannot run in parallel, its iterations would write the
// same elements at once. Found by OpCases.SampledProgramsKeepTheirResults (a flaky race).
TEST(ScheduleIllegal, ParallelLoopsCannotShareWrittenElements) {
  Schedule s(testing::LowerOp("softmax", {testing::F32({4, 3})}, ir::Attrs{{"axis", int64_t{0}}}));
  BlockRV out = s.GetBlock("softmax");
  auto loops = s.GetLoops(out);  // rows, columns
  s.ComputeAt(s.GetBlock("softmax_exp_sum"), loops[0]);
  s.ComputeAt(s.GetBlock("softmax_exp"), loops[0]);
  s.ComputeAt(s.GetBlock("softmax_max"), loops[0]);
  ExpectSame(s);  // recomputing per row is legal serially
  ExpectIllegal(
      s, [&] { s.Parallel(loops[0]); }, "parallelize", "same elements in every iteration");
  s.Parallel(loops[1]);  // columns: each iteration writes its own elements
  ExpectSame(s);
}

TEST(ScheduleIllegal, BlocksUnderAConditionKeepIt) {
  {
    Schedule s(GuardBlock(ConvBiasRelu(2, 3, 5), "pad", "h", 5));
    BlockRV pad = s.GetBlock("pad");
    auto conv_loops = s.GetLoops(s.GetBlock("conv2d"));
    ExpectIllegal(
        s, [&] { s.ComputeAt(pad, conv_loops[2]); }, "compute_at", "different conditions");
    ExpectIllegal(
        s, [&] { s.ComputeInline(pad); }, "compute_inline", "under a condition");
    BlockRV copy = s.CacheRead(pad, 0, "local");  // the copy runs under the same condition
    ExpectSame(s);
    (void)copy;
  }
  {
    Schedule s(GuardBlock(ConvBiasRelu(2, 3, 5), "add", "i3", 4));
    BlockRV relu = s.GetBlock("relu");
    ExpectIllegal(
        s, [&] { s.ReverseComputeInline(relu); }, "reverse_compute_inline", "under a condition");
    // Under the add's innermost loop (which holds the condition) relu still runs everywhere.
    s.ReverseComputeAt(relu, s.GetLoops(s.GetBlock("add"))[3]);
    ExpectSame(s);
  }
  {
    Schedule s(GuardBlock(Matmul(6, 5, 4), "matmul", "j", 3));
    BlockRV b = s.GetBlock("matmul");
    auto loops = s.GetLoops(b);
    ExpectIllegal(
        s, [&] { s.DecomposeReduction(b, loops[2]); }, "decompose_reduction", "condition");
  }
}

// Schedules that the fuzzer once found to be computed wrongly (each was a bug in a primitive).
TEST(ScheduleRegression, ComputeAtOfAPaddingReaderClampsItsRegion) {
  // The padding block reads its input at w - 1 (guarded), so the region it needs per row
  // starts at -1: the copy must cover [0, 6], not [-1, 5].
  Schedule s(Conv(3, 4, 7, {2, 1}, {1, 2}));
  BlockRV pad = s.GetBlock("pad");
  BlockRV copy = s.CacheRead(pad, 0, "global");
  auto loops = s.GetLoops(pad);
  s.ComputeAt(copy, loops[2]);
  ExpectSame(s);
}

TEST(ScheduleRegression, ComputeAtKeepsThePredicateOfANonDividingSplit) {
  // The convolution's channel loop (3) split by 2 x 2 needs `ci < 3`; compute_at regenerates
  // the block's loops and must keep that condition.
  Schedule s(ConvBiasRelu(3, 4, 5));
  BlockRV conv = s.GetBlock("conv2d");
  auto loops = s.GetLoops(conv);
  s.Split(loops[4], {2, 2});
  s.ComputeAt(conv, s.GetLoops(s.GetBlock("add"))[2]);
  ExpectSame(s);
  // Also for the partial-sum block of an rfactor along the outer part of a split.
  Schedule m(Matmul(5, 4, 11));
  BlockRV b = m.GetBlock("matmul");
  m.RFactor(m.GetLoops(b)[2], 2);  // the write-back block `matmul` reduces 11 partial sums
  auto parts = m.Split(m.GetLoops(b)[2], {-1, 2});
  BlockRV rf = m.RFactor(parts[0], 1);  // 6 x 2 > 11: the partial block has a predicate
  m.ComputeAt(rf, m.GetLoops(b)[0]);
  ExpectSame(m);
}

TEST(ScheduleRegression, LoopsFeedingNoIteratorWithAPredicate) {
  // decompose_reduction: the init nest must replicate the dead loop its condition refers to.
  Schedule s(AddDeadLoop(Matmul(4, 5, 6), "k"));
  ASSERT_LT(testing::CompareKernels(Matmul(4, 5, 6), s.function()), kTolerance);
  BlockRV b = s.GetBlock("matmul");
  s.DecomposeReduction(b, s.GetLoops(b)[2]);
  ExpectSame(s);
  // compute_at: the condition on the dead loop only selects one of three identical runs.
  Schedule t(AddDeadLoop(ConvBiasRelu(2, 3, 5), "kw"));
  t.ComputeAt(t.GetBlock("conv2d"), t.GetLoops(t.GetBlock("add"))[2]);
  ExpectSame(t);
  // Without the condition the block recomputes its result three times: legal with the init
  // inside, but decomposing would add the three runs up.
  Schedule u(AddDeadLoop(Matmul(4, 5, 6), "j", false));
  ASSERT_LT(testing::CompareKernels(Matmul(4, 5, 6), u.function()), kTolerance);
  BlockRV m = u.GetBlock("matmul");
  auto loops = u.GetLoops(m);  // i, dead, j, k
  ExpectIllegal(
      u, [&] { u.DecomposeReduction(m, loops[0]); }, "decompose_reduction", "feeds no iterator");
  u.DecomposeReduction(m, loops[2]);
  ExpectSame(u);
}

TEST(ScheduleRegression, CacheStagesInsideALoopCopyOnlyWhatOneIterationTouches) {
  // Under an output row the convolution reads 3 rows of the padded input: the copy placed
  // there copies those, not the whole buffer, every iteration.
  Schedule s(Conv2d(2, 3, 6, 1));
  BlockRV pad = s.GetBlock("pad");
  BlockRV conv = s.GetBlock("conv2d");
  auto conv_loops = s.GetLoops(conv);
  s.ComputeAt(pad, conv_loops[2]);
  BlockRV copy = s.CacheRead(conv, 0, "local");
  BlockRV out = s.CacheWrite(conv, 0, "local");
  ExpectSame(s);
  auto copied = [&](const BlockRV& block) {
    int64_t n = 1;
    auto loops = s.GetLoops(block);
    for (size_t i = 3; i < loops.size(); ++i) n *= s.LoopExtent(loops[i]);
    return n;
  };
  EXPECT_EQ(copied(copy), 1 * 2 * 3 * 8);  // [n, c, 3 rows, padded width]
  EXPECT_EQ(copied(out), 1 * 1 * 1 * 6);   // one output row of one channel
}

}  // namespace
}  // namespace tandem::kernels
