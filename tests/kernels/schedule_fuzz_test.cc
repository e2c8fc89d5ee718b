// Schedule fuzzing: hundreds of random schedules of matmul, conv2d and a fused conv2d + bias +
// relu must each compute what the unscheduled kernel computes (through the bounds-checked
// kernel interpreter), give the same result when their parallel and vectorized loops run in
// reverse order, and replay from their trace's JSON to the same kernel and trace. Deliberately
// illegal uses of every primitive must be errors that change nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_structural.h"
#include "kernel_text.h"
#include "kernels/schedule/schedule.h"
#include "schedule_fuzzer.h"
#include "schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::Conv2d;
using testing::ConvBiasRelu;
using testing::F32;
using testing::FuzzCounts;
using testing::KernelText;
using testing::LowerOp;
using testing::Matmul;
using testing::ScheduleFuzzer;

constexpr double kTolerance = 1e-5;
constexpr int kSchedulesPerWorkload = 150;

// The kernel with every parallel and vectorized loop iterating backwards: their iterations must
// be independent, so the result must not change.
class ReverseParallelLoops : public ir::StmtMutator {
 public:
  ir::Expr VisitExpr(const ir::Expr& e) override { return e; }

 protected:
  ir::Stmt VisitFor(const ir::ForNode* op, const ir::Stmt& s) override {
    ir::Stmt visited = StmtMutator::VisitFor(op, s);
    if (op->for_kind != ir::ForKind::kParallel && op->for_kind != ir::ForKind::kVectorized) {
      return visited;
    }
    const auto* loop = ir::As<ir::ForNode>(visited);
    ir::VarMap reverse{{op->loop_var.get(), ir::IntImm(op->extent - 1) - op->loop_var}};
    return ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind,
                       ir::Substitute(loop->body, reverse), loop->annotations);
  }
};

bool HasParallelLoop(const ir::KernelFunction& fn) {
  bool found = false;
  ir::VisitStmtTree(fn.body, [&](const ir::Stmt& s) {
    const auto* loop = ir::As<ir::ForNode>(s);
    found = found || (loop && (loop->for_kind == ir::ForKind::kParallel ||
                               loop->for_kind == ir::ForKind::kVectorized));
  });
  return found;
}

// Runs `fn` on `inputs`; returns the relative error against `expected`, or sets `error` when
// the interpreter raised one (an out-of-bounds access, an unbound variable).
double ErrorAgainst(const ir::KernelFunction& fn, const std::vector<ir::Tensor>& inputs,
                    const std::vector<ir::Tensor>& expected, std::string* error) {
  try {
    std::vector<ir::Tensor> got = backends::RunKernelReference(fn, inputs, true);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, ir::RelativeError(got[i], expected[i]));
    }
    return worst;
  } catch (const ir::Error& e) {
    *error = e.what();
    return 1e9;
  }
}

struct Workload {
  std::string name;
  // The kernel to schedule for a given seed (workloads alternate between variants).
  std::function<ir::KernelFunction(uint64_t seed)> make;
  int variants = 1;
  int schedules = kSchedulesPerWorkload;
  // Transformations that must have been applied at least once, besides the common ones.
  std::vector<std::string> kinds;
};

ir::KernelFunction Conv(int64_t c, int64_t o, int64_t hw, std::vector<int64_t> strides,
                        std::vector<int64_t> dilation) {
  ir::Attrs attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}},
                  {"strides", std::move(strides)},
                  {"dilation", std::move(dilation)}};
  return LowerOp("conv2d", {F32({1, c, hw, hw}), F32({o, c, 3, 3})}, attrs);
}

Workload MatmulWorkload() {
  return {"matmul",
          [](uint64_t seed) { return seed % 2 == 0 ? Matmul(24, 20, 16) : Matmul(13, 17, 11); },
          2,
          kSchedulesPerWorkload,
          {"rfactor", "transform_layout"}};
}

Workload ConvWorkload() {
  return {"conv2d",
          [](uint64_t seed) {
            return seed % 2 == 0 ? Conv(3, 4, 6, {1, 1}, {1, 1}) : Conv(4, 4, 7, {2, 1}, {1, 2});
          },
          2,
          kSchedulesPerWorkload,
          {"compute_inline", "rfactor", "transform_layout"}};
}

Workload ConvBiasReluWorkload() {
  return {"conv_bias_relu",
          [](uint64_t) { return ConvBiasRelu(3, 4, 6); },
          1,
          kSchedulesPerWorkload,
          {"compute_inline", "reverse_compute_inline", "rfactor", "transform_layout"}};
}

// `fn` with the realize of block `block` wrapped in `if (loop < bound)`, where `loop` is the
// block's loop named `loop_name`.
ir::KernelFunction GuardBlock(const ir::KernelFunction& fn, const std::string& block,
                              const std::string& loop_name, int64_t bound) {
  class Guard : public ir::StmtMutator {
   public:
    Guard(std::string block, std::string loop_name, int64_t bound)
        : block_(std::move(block)), loop_name_(std::move(loop_name)), bound_(bound) {}
    ir::Expr VisitExpr(const ir::Expr& e) override { return e; }

   protected:
    ir::Stmt VisitFor(const ir::ForNode* op, const ir::Stmt& s) override {
      if (op->loop_var->name == loop_name_) loop_ = op->loop_var;
      return StmtMutator::VisitFor(op, s);
    }
    ir::Stmt VisitBlockRealize(const ir::BlockRealizeNode* op, const ir::Stmt& s) override {
      if (op->block->name != block_) return StmtMutator::VisitBlockRealize(op, s);
      return ir::MakeIfThenElse(loop_ < ir::IntImm(bound_), s);
    }

   private:
    std::string block_, loop_name_;
    int64_t bound_;
    ir::Var loop_;
  };
  Guard guard(block, loop_name, bound);
  ir::KernelFunction out = fn;
  out.body = guard.VisitStmt(fn.body);
  return out;
}

// Blocks under an IfThenElse (which no compute definition emits, but the IR allows): the
// primitives must keep the condition or refuse.
Workload GuardedWorkload() {
  return {"guarded",
          [](uint64_t seed) {
            switch (seed % 4) {
              case 0: return GuardBlock(Matmul(6, 5, 4), "matmul", "j", 3);
              case 1: return GuardBlock(ConvBiasRelu(2, 3, 5), "pad", "h", 5);
              case 2: return GuardBlock(ConvBiasRelu(2, 3, 5), "add", "i3", 4);
              default: return GuardBlock(ConvBiasRelu(2, 3, 5), "conv2d", "h", 4);
            }
          },
          4,
          100,
          {}};
}

// Seeds to fuzz: TANDEM_FUZZ_SEED=n runs only seed n (to debug one schedule);
// TANDEM_FUZZ_COUNT=n and TANDEM_FUZZ_FIRST=f run seeds f..f+n-1, and TANDEM_FUZZ_STEPS=m
// applies up to m primitives per schedule (for longer fuzzing campaigns).
std::vector<uint64_t> Seeds(int schedules) {
  std::vector<uint64_t> seeds;
  if (const char* one = std::getenv("TANDEM_FUZZ_SEED")) {
    seeds.push_back(std::strtoull(one, nullptr, 10));
    return seeds;
  }
  uint64_t count = static_cast<uint64_t>(schedules);
  uint64_t first = 0;
  if (const char* n = std::getenv("TANDEM_FUZZ_COUNT")) count = std::strtoull(n, nullptr, 10);
  if (const char* f = std::getenv("TANDEM_FUZZ_FIRST")) first = std::strtoull(f, nullptr, 10);
  for (uint64_t s = first; s < first + count; ++s) seeds.push_back(s);
  return seeds;
}

// The seed of the fuzzer's own choices: differs between workloads for the same schedule seed.
uint64_t FuzzSeed(const Workload& workload, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a of the name
  for (char c : workload.name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h ^ seed;
}

int StepCount(uint64_t fuzz_seed) {
  int64_t most = 17;
  if (const char* m = std::getenv("TANDEM_FUZZ_STEPS")) most = std::max(9ll, std::atoll(m));
  RandomState random(fuzz_seed);
  return 8 + static_cast<int>(random.Uniform(most - 7));
}

bool Verbose() { return std::getenv("TANDEM_FUZZ_VERBOSE") != nullptr; }

// Re-runs the fuzzer for `seed` checking the result after every step, and describes the first
// step that broke the program (called after a final check failed).
std::string FirstBadStep(const ir::KernelFunction& original, uint64_t seed, uint64_t fuzz_seed,
                         int steps, const std::vector<ir::Tensor>& inputs,
                         const std::vector<ir::Tensor>& expected) {
  Schedule s(original, seed);
  FuzzCounts counts;
  std::string report;
  ScheduleFuzzer fuzzer(s, fuzz_seed, counts,
                        [&](const std::string& kind, const ir::KernelFunction& before) {
                          if (!report.empty()) return;
                          std::string error;
                          double err = ErrorAgainst(s.function(), inputs, expected, &error);
                          if (err < kTolerance) return;
                          report = fmt::format(
                              "first bad step: {} (error {} {})\n--- before:\n{}--- after:\n{}",
                              kind, err, error, KernelText(before), KernelText(s.function()));
                        });
  fuzzer.Run(steps);
  return report.empty() ? "every step was fine on its own" : report;
}

void FuzzWorkload(const Workload& workload) {
  auto start = std::chrono::steady_clock::now();
  FuzzCounts counts;
  std::vector<std::vector<ir::Tensor>> inputs(static_cast<size_t>(workload.variants));
  std::vector<std::vector<ir::Tensor>> expected(static_cast<size_t>(workload.variants));
  int failures = 0;
  int reversed_checks = 0;
  for (uint64_t seed : Seeds(workload.schedules)) {
    if (failures >= 3) break;  // enough to debug; keeps the output readable
    size_t variant = static_cast<size_t>(seed % static_cast<uint64_t>(workload.variants));
    ir::KernelFunction original = workload.make(seed);
    if (expected[variant].empty()) {
      inputs[variant] = testing::RandomArgs(original, 7);
      expected[variant] = backends::RunKernelReference(original, inputs[variant], true);
    }
    auto seed_start = std::chrono::steady_clock::now();
    Schedule s(original, seed);
    uint64_t fuzz_seed = FuzzSeed(workload, seed);
    int steps = StepCount(fuzz_seed);
    ScheduleFuzzer fuzzer(s, fuzz_seed, counts);
    try {
      fuzzer.Run(steps);
    } catch (const std::exception& e) {
      ++failures;
      ADD_FAILURE() << workload.name << " seed " << seed << ": a primitive threw a non-Error "
                    << e.what() << "\n" << s.trace().ToText();
      continue;
    }
    ++counts.schedules;
    std::string context = fmt::format("{} seed {} applied [{}]\ntrace:\n{}\n{}", workload.name,
                                      seed, fmt::join(fuzzer.applied(), ", "), s.trace().ToText(),
                                      KernelText(s.function()));

    // (a) Same outputs as the unscheduled kernel, with every access in bounds.
    std::string error;
    double err = ErrorAgainst(s.function(), inputs[variant], expected[variant], &error);
    if (!(err < kTolerance)) {
      ++failures;
      ADD_FAILURE() << "wrong result (relative error " << err << ") " << error << "\n" << context
                    << FirstBadStep(original, seed, fuzz_seed, steps, inputs[variant],
                                    expected[variant]);
      continue;
    }
    // (a') Parallel and vectorized iterations are independent.
    if (HasParallelLoop(s.function())) {
      ++reversed_checks;
      ReverseParallelLoops reverser;
      ir::KernelFunction reversed = s.function();
      reversed.body = reverser.VisitStmt(reversed.body);
      err = ErrorAgainst(reversed, inputs[variant], expected[variant], &error);
      if (!(err < kTolerance)) {
        ++failures;
        ADD_FAILURE() << "result depends on the order of parallel iterations (error " << err
                      << ") " << error << "\n" << context;
        continue;
      }
    }
    // (b) The trace round-trips through JSON and replays to the same kernel and trace.
    try {
      ir::Trace parsed = ir::Trace::FromJson(s.trace().ToJson());
      Schedule replayed = Schedule::Replay(original, parsed);
      if (!ir::StructuralEqual(replayed.function(), s.function()) ||
          !(replayed.trace() == s.trace())) {
        ++failures;
        ADD_FAILURE() << "replay differs: " << ir::StructuralDiff(replayed.function(), s.function())
                      << "\n" << context << "replayed:\n" << KernelText(replayed.function());
      }
    } catch (const ir::Error& e) {
      ++failures;
      ADD_FAILURE() << "replay failed: " << e.what() << "\n" << context;
    }
    double seed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - seed_start).count();
    if (Verbose() && seed_seconds > 0.5) {
      std::cout << fmt::format("    seed {} took {:.2f} s\n", seed, seed_seconds);
    }
    if (Verbose() && std::getenv("TANDEM_FUZZ_SEED")) std::cout << context;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format(
      "[ fuzz     ] {}: {} schedules checked ({} with reversed parallel loops), {} primitives "
      "applied, {} rejected, {:.1f} s\n",
      workload.name, counts.schedules, reversed_checks, counts.applied, counts.rejected, seconds);
  if (Verbose()) {
    for (const auto& [kind, c] : counts.by_kind) {
      std::cout << fmt::format("    {:24} applied {:5} rejected {:5}\n", kind, c.applied,
                               c.rejected);
    }
    for (const auto& [reason, n] : counts.reasons) std::cout << fmt::format("    {:5} {}\n", n, reason);
  }
  if (std::getenv("TANDEM_FUZZ_SEED")) return;
  EXPECT_GE(counts.schedules, std::min(100, workload.schedules));
  EXPECT_GE(counts.applied, 5 * counts.schedules) << "too few primitives succeed";
  EXPECT_GT(counts.rejected, 0) << "the fuzzer never tried an illegal step";
  // Every kind of transformation was applied somewhere.
  std::vector<std::string> kinds = {"split",      "reorder",     "fuse",
                                    "parallel",   "vectorize",   "unroll",
                                    "annotate",   "cache_write", "reverse_compute_at",
                                    "cache_read", "compute_at",  "decompose_reduction"};
  kinds.insert(kinds.end(), workload.kinds.begin(), workload.kinds.end());
  for (const std::string& kind : kinds) {
    EXPECT_GT(counts.by_kind[kind].applied, 0) << workload.name << ": " << kind;
  }
}

// Runs `primitive`, expects an ir::Error whose message names the primitive `name` and contains
// `fragment`, and checks that neither the function nor the trace changed.
template <typename F>
void ExpectIllegal(Schedule& s, F primitive, const std::string& name,
                   const std::string& fragment) {
  ir::KernelFunction before = s.function();
  size_t trace_size = s.trace().size();
  try {
    primitive();
    ADD_FAILURE() << name << ": expected an error containing '" << fragment << "'\n"
                  << KernelText(s.function());
  } catch (const ir::Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(name), std::string::npos) << "does not name " << name << ": " << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
  EXPECT_TRUE(ir::StructuralEqual(before, s.function())) << ir::StructuralDiff(before, s.function());
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
    ExpectIllegal(s, [&] { s.Fuse({loops[0], loops[2]}); }, "fuse", "perfectly nested");
    ExpectIllegal(s, [&] { s.RFactor(loops[0], 0); }, "rfactor", "no reduction block");
    ExpectIllegal(s, [&] { s.ComputeInline(b); }, "compute_inline", "without init");
    ExpectIllegal(s, [&] { s.Parallel(loops[2]); }, "parallelize", "reduction iterator");
    ExpectIllegal(s, [&] { s.Split(loops[1], {2, 2}); }, "split", "less than the extent");
    // The consumer of the result would read partial sums inside the reduction loop, also when
    // that loop is moved outermost.
    BlockRV copy = s.CacheWrite(b, 0, "local");
    ExpectIllegal(s, [&] { s.ReverseComputeAt(copy, loops[2]); }, "reverse_compute_at",
                  "partial results");
    s.Reorder({loops[2], loops[0]});
    ExpectIllegal(s, [&] { s.ReverseComputeAt(copy, loops[1]); }, "reverse_compute_at",
                  "partial results");
    // The init moved out of the reduction loop, inside a split of it.
    auto k = s.Split(loops[2], {2, 4});
    ExpectIllegal(s, [&] { s.DecomposeReduction(b, k[1]); }, "decompose_reduction",
                  "reduction loop");
    s.DecomposeReduction(b, k[0]);
    ExpectIllegal(s, [&] { s.CacheWrite(b, 0, "local"); }, "cache_write", "other writers");
    // Without its init the update reads the output it accumulates into: a copy would go stale.
    ExpectIllegal(s, [&] { s.CacheRead(b, 0, "local"); }, "cache_read", "also writes");
    ExpectSame(s);
  }
  {
    // A weight copy of shape [8, 6] cannot take a split factor of 4 on its second axis.
    Schedule s(Matmul(8, 6, 8));
    BlockRV b = s.GetBlock("matmul");
    BlockRV copy = s.CacheRead(b, 1, "global");
    ExpectIllegal(s, [&] { s.TransformLayout(copy, 0, true, "AB", "BA4b"); }, "transform_layout",
                  "does not divide");
    ExpectIllegal(s, [&] { s.TransformLayout(b, 1, false, "AB", "AB4b"); }, "transform_layout",
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
    ExpectIllegal(s, [&] { s.Reorder({parts[1], parts[0]}); }, "reorder",
                  "initializes the reduction");
    ExpectIllegal(s, [&] { s.RFactor(parts[0], 0); }, "rfactor", "spatial");
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
    ExpectIllegal(s, [&] { s.Reorder({conv_loops[1], pad_loops[0]}); }, "reorder",
                  "perfectly nested chain");
    ExpectIllegal(s, [&] { s.Fuse({pad_loops[0], conv_loops[1]}); }, "fuse", "perfectly nested");
    // relu does not read the padded input: conv2d would read it before it is computed.
    ExpectIllegal(s, [&] { s.ComputeAt(pad, relu_loops[1]); }, "compute_at",
                  "outside the loop");
    ExpectIllegal(s, [&] { s.ComputeInline(conv); }, "compute_inline", "without init");
    BlockRV add = s.GetBlock("add");
    ExpectIllegal(s, [&] { s.ReverseComputeInline(add); }, "reverse_compute_inline", "reduction");
    ExpectIllegal(s, [&] { s.ReverseComputeAt(conv, pad_loops[1]); }, "reverse_compute_at",
                  "only spatial iterators");
    // After moving the padding under an output row, the row loop is no longer a perfect nest
    // with the padding's loops.
    s.ComputeAt(pad, conv_loops[2]);
    auto moved = s.GetLoops(pad);
    ExpectIllegal(s, [&] { s.Reorder({moved.back(), conv_loops[3]}); }, "reorder",
                  "perfectly nested chain");
    ExpectIllegal(s, [&] { s.Fuse({conv_loops[2], conv_loops[3]}); }, "fuse",
                  "perfectly nested");
    ExpectIllegal(s, [&] { s.RFactor(conv_loops[4], 0); }, "rfactor", "shares loops");
    ExpectSame(s);
  }
}

TEST(ScheduleIllegal, BlocksUnderAConditionKeepIt) {
  {
    Schedule s(GuardBlock(ConvBiasRelu(2, 3, 5), "pad", "h", 5));
    BlockRV pad = s.GetBlock("pad");
    auto conv_loops = s.GetLoops(s.GetBlock("conv2d"));
    ExpectIllegal(s, [&] { s.ComputeAt(pad, conv_loops[2]); }, "compute_at",
                  "different conditions");
    ExpectIllegal(s, [&] { s.ComputeInline(pad); }, "compute_inline", "under a condition");
    BlockRV copy = s.CacheRead(pad, 0, "local");  // the copy runs under the same condition
    ExpectSame(s);
    (void)copy;
  }
  {
    Schedule s(GuardBlock(ConvBiasRelu(2, 3, 5), "add", "i3", 4));
    BlockRV relu = s.GetBlock("relu");
    ExpectIllegal(s, [&] { s.ReverseComputeInline(relu); }, "reverse_compute_inline",
                  "under a condition");
    auto add_loops = s.GetLoops(s.GetBlock("add"));
    ExpectIllegal(s, [&] { s.ReverseComputeAt(relu, add_loops[3]); }, "reverse_compute_at",
                  "different conditions");
  }
  {
    Schedule s(GuardBlock(Matmul(6, 5, 4), "matmul", "j", 3));
    BlockRV b = s.GetBlock("matmul");
    auto loops = s.GetLoops(b);
    ExpectIllegal(s, [&] { s.DecomposeReduction(b, loops[0]); }, "decompose_reduction",
                  "condition");
    s.DecomposeReduction(b, loops[2]);  // below the condition
    ExpectSame(s);
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

// `fn` with the loop named `loop_name` wrapped in a loop `dead` of extent 3 that feeds no block
// iterator. When `predicated`, every block under it runs only for `dead < 1` (the shape a split
// of a loop of extent 1 into 3 x 1 leaves once the simplifier folds the bindings); otherwise
// they run three times (the shape compute_at leaves when it moves a block's own nest under
// another block's loop).
ir::KernelFunction AddDeadLoop(const ir::KernelFunction& fn, const std::string& loop_name,
                               bool predicated = true) {
  class Wrapper : public ir::StmtMutator {
   public:
    Wrapper(std::string name, bool predicated) : name_(std::move(name)), predicated_(predicated) {}
    ir::Expr VisitExpr(const ir::Expr& e) override { return e; }

   protected:
    ir::Stmt VisitFor(const ir::ForNode* op, const ir::Stmt& s) override {
      if (op->loop_var->name != name_) return StmtMutator::VisitFor(op, s);
      ir::Var dead = ir::MakeVar("dead");
      ir::Stmt inner = predicated_ ? AddPredicate(op->body, dead < ir::IntImm(1)) : op->body;
      ir::Stmt body = ir::MakeFor(op->loop_var, op->extent, op->for_kind, inner, op->annotations);
      return ir::MakeFor(dead, 3, ir::ForKind::kSerial, body);
    }

   private:
    static ir::Stmt AddPredicate(const ir::Stmt& s, const ir::Expr& condition) {
      if (const auto* loop = ir::As<ir::ForNode>(s)) {
        return ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind,
                           AddPredicate(loop->body, condition), loop->annotations);
      }
      const auto* realize = ir::As<ir::BlockRealizeNode>(s);
      return ir::MakeBlockRealize(realize->iter_values, condition, realize->block);
    }
    std::string name_;
    bool predicated_;
  };
  Wrapper wrapper(loop_name, predicated);
  ir::KernelFunction out = fn;
  out.body = wrapper.VisitStmt(fn.body);
  return out;
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
  ExpectIllegal(u, [&] { u.DecomposeReduction(m, loops[0]); }, "decompose_reduction",
                "feeds no iterator");
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

TEST(ScheduleFuzz, Matmul) {
  FuzzWorkload(MatmulWorkload());
}

TEST(ScheduleFuzz, Conv2d) {
  FuzzWorkload(ConvWorkload());
}

TEST(ScheduleFuzz, ConvBiasRelu) {
  FuzzWorkload(ConvBiasReluWorkload());
}

TEST(ScheduleFuzz, GuardedBlocks) {
  FuzzWorkload(GuardedWorkload());
}

}  // namespace
}  // namespace tandem::kernels
