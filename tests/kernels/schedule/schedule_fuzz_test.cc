// Schedule fuzzing: hundreds of random schedules of matmul, conv2d, a fused conv2d + bias + relu
// and kernels with blocks under conditions must each compute what the unscheduled kernel
// computes (through the bounds-checked kernel interpreter), give the same result when their
// parallel and vectorized loops run in reverse order, and replay from their trace's JSON to the
// same kernel and trace. Illegal steps must be errors that change nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <optional>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_structural.h"
#include "tests/kernels/kernel_text.h"
#include "kernels/schedule/schedule.h"
#include "tests/kernels/schedule_fuzzer.h"
#include "tests/kernels/schedule_test_util.h"
#include "tests/kernels/schedule_variants.h"

namespace tandem::kernels {
namespace {

using testing::Conv;
using testing::ConvBiasRelu;
using testing::FuzzCounts;
using testing::GuardBlock;
using testing::KernelText;
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

// Blocks under an IfThenElse (which no compute definition emits, but the IR allows): the
// primitives must keep the condition or refuse.
Workload GuardedWorkload() {
  return {"guarded",
          [](uint64_t seed) {
            switch (seed % 4) {
              case 0:
                return GuardBlock(Matmul(6, 5, 4), "matmul", "j", 3);
              case 1:
                return GuardBlock(ConvBiasRelu(2, 3, 5), "pad", "h", 5);
              case 2:
                return GuardBlock(ConvBiasRelu(2, 3, 5), "add", "i3", 4);
              default:
                return GuardBlock(ConvBiasRelu(2, 3, 5), "conv2d", "h", 4);
            }
          },
          4,
          100,
          {}};
}

// Seeds to fuzz. To debug one schedule, set kOnlySeed to its seed (and kVerbose to true to
// print its trace and kernel); for a longer fuzzing campaign, raise kSeedCount (0 keeps each
// workload's own count), move kFirstSeed past the seeds already checked, and raise kMostSteps
// (the most primitives applied per schedule, at least 9). Then rebuild and run
// `kernels_tests --gtest_filter='ScheduleFuzz.*'`.
constexpr std::optional<uint64_t> kOnlySeed = std::nullopt;
constexpr uint64_t kFirstSeed = 0;
constexpr uint64_t kSeedCount = 0;
constexpr int64_t kMostSteps = 17;
// Prints slow seeds, per-primitive counts and rejection reasons (and with kOnlySeed, the
// schedule itself).
constexpr bool kVerbose = false;

static_assert(kMostSteps >= 9, "schedules apply 8 to kMostSteps primitives");

std::vector<uint64_t> Seeds(int schedules) {
  if (kOnlySeed) return {*kOnlySeed};
  uint64_t count = kSeedCount > 0 ? kSeedCount : static_cast<uint64_t>(schedules);
  std::vector<uint64_t> seeds;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + count; ++s) seeds.push_back(s);
  return seeds;
}

// The seed of the fuzzer's own choices: differs between workloads for the same schedule seed.
uint64_t FuzzSeed(const Workload& workload, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a of the name
  for (char c : workload.name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h ^ seed;
}

int StepCount(uint64_t fuzz_seed) {
  RandomState random(fuzz_seed);
  return 8 + static_cast<int>(random.Uniform(kMostSteps - 7));
}

// Re-runs the fuzzer for `seed` checking the result after every step, and describes the first
// step that broke the program (called after a final check failed).
std::string FirstBadStep(const ir::KernelFunction& original, uint64_t seed, uint64_t fuzz_seed,
                         int steps, const std::vector<ir::Tensor>& inputs,
                         const std::vector<ir::Tensor>& expected) {
  Schedule s(original, seed);
  FuzzCounts counts;
  std::string report;
  ScheduleFuzzer fuzzer(
      s, fuzz_seed, counts, [&](const std::string& kind, const ir::KernelFunction& before) {
        if (!report.empty()) return;
        std::string error;
        double err = ErrorAgainst(s.function(), inputs, expected, &error);
        if (err < kTolerance) return;
        report = fmt::format("first bad step: {} (error {} {})\n--- before:\n{}--- after:\n{}",
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
                    << e.what() << "\n"
                    << s.trace().ToText();
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
      ADD_FAILURE() << "wrong result (relative error " << err << ") " << error << "\n"
                    << context
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
        ADD_FAILURE() << "result depends on the order of parallel iterations (error " << err << ") "
                      << error << "\n"
                      << context;
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
                      << "\n"
                      << context << "replayed:\n"
                      << KernelText(replayed.function());
      }
    } catch (const ir::Error& e) {
      ++failures;
      ADD_FAILURE() << "replay failed: " << e.what() << "\n" << context;
    }
    double seed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - seed_start).count();
    if (kVerbose && seed_seconds > 0.5) {
      std::cout << fmt::format("    seed {} took {:.2f} s\n", seed, seed_seconds);
    }
    if (kVerbose && kOnlySeed) std::cout << context;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format(
      "[ fuzz     ] {}: {} schedules checked ({} with reversed parallel loops), {} primitives "
      "applied, {} rejected, {:.1f} s\n",
      workload.name, counts.schedules, reversed_checks, counts.applied, counts.rejected, seconds);
  if (kVerbose) {
    for (const auto& [kind, c] : counts.by_kind) {
      std::cout << fmt::format("    {:24} applied {:5} rejected {:5}\n", kind, c.applied,
                               c.rejected);
    }
    for (const auto& [reason, n] : counts.reasons)
      std::cout << fmt::format("    {:5} {}\n", n, reason);
  }
  if (kOnlySeed) return;  // one schedule: no totals to check
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
