// Schedule primitives: each legal use preserves the kernel's result; each illegal use is an
// Error that leaves the schedule unchanged; traces round-trip through JSON and replay exactly.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/schedule/schedule.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::CompareKernels;
using testing::Conv2d;
using testing::ConvBiasRelu;
using testing::Matmul;

constexpr double kTolerance = 1e-5;

void ExpectSame(const Schedule& s) {
  EXPECT_LT(CompareKernels(s.original(), s.function()), kTolerance) << s.trace().ToText();
}

// Runs `primitive`, expects an Error whose message contains `fragment`, and checks that the
// function and the trace did not change.
template <typename F>
void ExpectIllegal(Schedule& s, F primitive, const std::string& fragment) {
  ir::KernelFunction before = s.function();
  size_t trace_size = s.trace().size();
  try {
    primitive();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
  EXPECT_TRUE(ir::StructuralEqual(before, s.function()))
      << ir::StructuralDiff(before, s.function());
  EXPECT_EQ(trace_size, s.trace().size()) << fragment << "\n" << s.trace().ToText();
}

TEST(Schedule, SplitReorderFuseKeepResults) {
  Schedule s(Matmul(12, 10, 8));
  BlockRV b = s.GetBlock("matmul");
  auto loops = s.GetLoops(b);
  ASSERT_EQ(loops.size(), 3u);
  auto i = s.Split(loops[0], {3, 4});
  auto j = s.Split(loops[1], {-1, 4});  // 10 = 3 * 4 - 2: needs a predicate
  EXPECT_EQ(s.LoopExtent(j[0]), 3);
  ExpectSame(s);
  s.Reorder({i[0], j[0], i[1], j[1]});
  ExpectSame(s);
  LoopRV fused = s.Fuse({i[0], j[0]});
  EXPECT_EQ(s.LoopExtent(fused), 9);
  ExpectSame(s);
}

TEST(Schedule, ParallelVectorizeUnroll) {
  Schedule s(Matmul(8, 16, 4));
  auto loops = s.GetLoops(s.GetBlock("matmul"));
  s.Parallel(loops[0]);
  s.Vectorize(loops[1]);
  s.Unroll(loops[2]);
  ExpectSame(s);
  std::vector<ir::ForKind> kinds;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    if (const auto* loop = ir::As<ir::ForNode>(st)) kinds.push_back(loop->for_kind);
  });
  EXPECT_EQ(kinds, (std::vector<ir::ForKind>{ir::ForKind::kParallel, ir::ForKind::kVectorized,
                                             ir::ForKind::kUnrolled}));
}

TEST(Schedule, CacheWriteReverseComputeAtDecompose) {
  Schedule s(Matmul(8, 8, 8));
  BlockRV b = s.GetBlock("matmul");
  BlockRV copy = s.CacheWrite(b, 0, "local");
  auto loops = s.GetLoops(b);
  auto i = s.Split(loops[0], {2, 4});
  s.ReverseComputeAt(copy, i[0]);
  ExpectSame(s);
  s.DecomposeReduction(b, s.GetLoops(b)[2]);
  ExpectSame(s);
}

TEST(Schedule, ComputeAtAndInlinePadding) {
  Schedule s(Conv2d(3, 4, 6, 1));
  BlockRV pad = s.GetBlock("pad");
  auto conv_loops = s.GetLoops(s.GetBlock("conv2d"));
  s.ComputeAt(pad, conv_loops[2]);  // per output row: the 3 input rows it needs
  ExpectSame(s);

  Schedule t(Conv2d(3, 4, 6, 1));
  t.ComputeInline(t.GetBlock("pad"));
  ExpectSame(t);
  EXPECT_EQ(t.BlockNames().size(), 1u);
}

TEST(Schedule, FusedEpilogueByReverseComputeInline) {
  Schedule s(ConvBiasRelu(2, 3, 5));
  std::vector<std::string> names = s.BlockNames();
  ASSERT_GE(names.size(), 3u);
  // relu reads the add's result pointwise: inline it backwards, then the add into... (add reads
  // conv, a reduction: cannot be reverse-inlined).
  s.ReverseComputeInline(s.GetBlock(names.back()));
  ExpectSame(s);
  BlockRV add = s.GetBlock(s.BlockNames().back());
  ExpectIllegal(
      s, [&] { s.ReverseComputeInline(add); }, "reduction");
  // The epilogue goes under the conv's outer loop instead.
  auto conv_loops = s.GetLoops(s.GetBlock("conv2d"));
  s.ReverseComputeAt(add, conv_loops[1]);
  ExpectSame(s);
}

TEST(Schedule, RFactorSplitsTheReduction) {
  Schedule s(Matmul(4, 4, 16));
  BlockRV b = s.GetBlock("matmul");
  auto loops = s.GetLoops(b);
  auto k = s.Split(loops[2], {4, 4});
  BlockRV rf = s.RFactor(k[1], 0);
  ExpectSame(s);
  EXPECT_EQ(s.BlockName(rf), "matmul_rf");
}

TEST(Schedule, CacheReadAndTransformLayout) {
  Schedule s(Matmul(8, 16, 8));
  BlockRV b = s.GetBlock("matmul");
  BlockRV copy = s.CacheRead(b, 1, "global");  // the weight
  s.TransformLayout(copy, 0, true, "AB", "BA8b");
  ExpectSame(s);
}

TEST(Schedule, IllegalUsesAreErrorsAndChangeNothing) {
  Schedule s(Matmul(8, 8, 8));
  BlockRV b = s.GetBlock("matmul");
  auto loops = s.GetLoops(b);
  ExpectIllegal(
      s,
      [&] {
        s.Split(loops[0], {3, 2});
      },
      "less than the extent");
  ExpectIllegal(
      s,
      [&] {
        s.Split(loops[0], {-1, -1});
      },
      "at most one factor");
  ExpectIllegal(
      s,
      [&] {
        s.Split(loops[0], {0, 8});
      },
      "positive");
  ExpectIllegal(
      s,
      [&] {
        s.Fuse({loops[0], loops[2]});
      },
      "perfectly nested");
  ExpectIllegal(
      s,
      [&] {
        s.Reorder({loops[0], loops[0]});
      },
      "twice");
  ExpectIllegal(
      s, [&] { s.Parallel(loops[2]); }, "reduction iterator");
  ExpectIllegal(
      s, [&] { s.Vectorize(loops[2]); }, "reduction iterator");
  ExpectIllegal(
      s, [&] { s.ComputeInline(b); }, "without init");
  ExpectIllegal(
      s, [&] { s.CacheRead(b, 5, "local"); }, "out of range");
  ExpectIllegal(
      s, [&] { s.CacheWrite(b, 0, "texture"); }, "unknown storage scope");
  ExpectIllegal(
      s, [&] { s.RFactor(loops[0], 0); }, "no reduction block");
  ExpectIllegal(
      s, [&] { s.TransformLayout(b, 0, true, "AB", "BA"); }, "parameter");
  ExpectIllegal(
      s, [&] { s.GetBlock("nope"); }, "no block 'nope'");
  ExpectIllegal(
      s,
      [&] {
        s.SamplePerfectTile(loops[0], 2, 4, std::vector<int64_t>{3, 3});
      },
      "not a factorization");
  auto split = s.Split(loops[0], {2, 4});
  ExpectIllegal(
      s, [&] { s.Parallel(loops[0]); }, "transformed by an earlier primitive");
  (void)split;
  Schedule c(Conv2d(2, 2, 5, 1));
  BlockRV pad = c.GetBlock("pad");
  BlockRV conv = c.GetBlock("conv2d");
  auto pad_loops = c.GetLoops(pad);
  auto conv_loops = c.GetLoops(conv);
  ExpectIllegal(
      c, [&] { c.ComputeAt(conv, pad_loops[0]); }, "compute_at of block 'conv2d'");
  ExpectIllegal(
      c, [&] { c.DecomposeReduction(pad, conv_loops[0]); }, "no init");
}

TEST(Schedule, TraceRoundTripAndReplay) {
  Schedule s(Matmul(16, 16, 16), 42);
  BlockRV b = s.GetBlock("matmul");
  auto loops = s.GetLoops(b);
  auto ti = s.SamplePerfectTile(loops[0], 2, 8);
  auto tj = s.SamplePerfectTile(loops[1], 2, 16);
  auto i = s.Split(loops[0], {ti[0], ti[1]});
  auto j = s.Split(loops[1], {tj[0], tj[1]});
  s.Reorder({i[0], j[0], i[1], j[1]});
  BlockRV copy = s.CacheWrite(b, 0, "local");
  s.ReverseComputeAt(copy, j[0]);
  s.Parallel(i[0]);
  ExprRV unroll = s.SampleCategorical({0, 16, 64}, {0.5, 0.25, 0.25});
  s.Annotate(i[0], "pragma_auto_unroll_max_step", s.Value(unroll));
  ExpectSame(s);

  std::string json = s.trace().ToJson();
  ir::Trace parsed = ir::Trace::FromJson(json);
  EXPECT_EQ(parsed, s.trace());
  EXPECT_EQ(parsed.ToJson(), json);
  Schedule replayed = Schedule::Replay(s.original(), parsed);
  EXPECT_TRUE(ir::StructuralEqual(replayed.function(), s.function()))
      << ir::StructuralDiff(replayed.function(), s.function());
  EXPECT_EQ(replayed.trace(), s.trace());
  EXPECT_EQ(ir::StructuralHash(replayed.function()), ir::StructuralHash(s.function()));

  // A changed decision gives the mutated program; an invalid one is an error.
  size_t tile = 0;
  while (s.trace().instructions()[tile].kind != "sample_perfect_tile") ++tile;
  std::vector<int64_t> other = {16, 1};
  ir::Trace mutated = s.trace().WithDecision(tile, other);
  Schedule m = Schedule::Replay(s.original(), mutated);
  EXPECT_FALSE(ir::StructuralEqual(m.function(), s.function()));
  EXPECT_LT(CompareKernels(s.original(), m.function()), kTolerance);
  EXPECT_THROW(
      Schedule::Replay(s.original(), s.trace().WithDecision(tile, std::vector<int64_t>{5, 3})),
      ir::Error);
}

TEST(Schedule, SamplingIsDeterministicInTheSeed) {
  auto sample = [](uint64_t seed) {
    Schedule s(Matmul(64, 48, 32), seed);
    auto loops = s.GetLoops(s.GetBlock("matmul"));
    std::vector<int64_t> out;
    for (int r = 0; r < 5; ++r) {
      for (const ExprRV& v : s.SamplePerfectTile(loops[0], 4, 16)) out.push_back(s.Value(v));
    }
    return out;
  };
  EXPECT_EQ(sample(1), sample(1));
  EXPECT_NE(sample(1), sample(2));
  RandomState r(123);
  for (int t = 0; t < 200; ++t) {
    auto f = SamplePerfectTileFactors(r, 96, 3, 8);
    EXPECT_EQ(f[0] * f[1] * f[2], 96);
    EXPECT_LE(f[2], 8);
  }
}

// A seeded sample_perfect_tile: with its switch on, the innermost factor is the largest divisor
// of the extent at most the seed and the bound (64 rows, seed 6: 4; bound 2: 2), the outer ones
// sampled; with it off, the factors are sampled as usual. The switch is the instruction's second
// input and the seed an attribute, so the trace round-trips through JSON and replays exactly;
// a seed below 1 is an error.
TEST(Schedule, SeededPerfectTileTakesTheSeedAsItsInnermostFactor) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Schedule s(Matmul(64, 48, 32), seed);
    auto loops = s.GetLoops(s.GetBlock("matmul"));
    ExprRV on = s.SampleCategorical({0, 1}, {0.0, 1.0});
    ExprRV off = s.SampleCategorical({0, 1}, {1.0, 0.0});
    auto rows = s.SamplePerfectTile(loops[0], 4, 16, {}, Schedule::PerfectTileSeed{on, 6});
    auto bounded = s.SamplePerfectTile(loops[1], 3, 2, {}, Schedule::PerfectTileSeed{on, 6});
    auto free = s.SamplePerfectTile(loops[2], 2, 16, {}, Schedule::PerfectTileSeed{off, 32});
    int64_t product = 1;
    for (const ExprRV& v : rows) product *= s.Value(v);
    EXPECT_EQ(product, 64);
    EXPECT_EQ(s.Value(rows.back()), 4);
    EXPECT_EQ(s.Value(bounded.back()), 2);
    EXPECT_EQ(s.Value(free[0]) * s.Value(free[1]), 32);
    EXPECT_LE(s.Value(free[1]), 16);
    size_t first = 0;
    while (s.trace().instructions()[first].kind != "sample_perfect_tile") ++first;
    const ir::Instruction& inst = s.trace().instructions()[first];
    EXPECT_EQ(inst.inputs.size(), 2u);
    EXPECT_EQ(inst.attrs.GetInt("seed_innermost"), 6);
    ir::Trace parsed = ir::Trace::FromJson(s.trace().ToJson());
    EXPECT_EQ(parsed, s.trace());
    EXPECT_EQ(Schedule::Replay(s.original(), parsed).trace(), s.trace());
    // Sampled anew, the switch's decision still decides.
    ir::Trace fresh = s.trace();
    for (size_t i = first; i < fresh.size(); ++i) fresh.mutable_instructions()[i].decision.reset();
    Schedule again = Schedule::Replay(s.original(), fresh, seed + 100);
    EXPECT_EQ(std::get<std::vector<int64_t>>(*again.trace().instructions()[first].decision).back(),
              4);
  }
  Schedule s(Matmul(8, 8, 8));
  auto loops = s.GetLoops(s.GetBlock("matmul"));
  ExprRV on = s.SampleCategorical({0, 1}, {0.0, 1.0});
  EXPECT_THROW(s.SamplePerfectTile(loops[0], 2, 8, {}, Schedule::PerfectTileSeed{on, 0}),
               ir::Error);
}

TEST(Schedule, RandomStateIsPortable) {
  // SplitMix64 is fully specified: these values hold on every machine and compiler.
  RandomState r(0);
  EXPECT_EQ(r.Next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(r.Next(), 0x6e789e6aa1b965f4ULL);
}

}  // namespace
}  // namespace tandem::kernels
