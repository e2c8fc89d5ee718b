// Kernel search against a deterministic mock runner on a small synthetic space with a known
// optimum: evolutionary search with the XGBoost model finds it; the gradient task scheduler
// gives more trials to the heavier of two tasks; every program the search proposes computes
// what the kernel computes (the real runner checks it).
#include <gtest/gtest.h>

#include <cmath>

#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/default_schedule.h"
#include "kernels/search/components.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/search/task_scheduler.h"

namespace tandem {
namespace {

// b[i, j] = a[i, j] * 2 over 64 x 64.
constexpr char kScale[] = R"(
  kernel @scale(%a: f32[64,64]) -> (%b: f32[64,64]) {
    block root() {
      for %i in 64 {
        for %j in 64 {
          block B(%vi: spatial 64 = %i, %vj: spatial 64 = %j)
              reads(%a[%vi, %vj]) writes(%b[%vi, %vj]) {
            %b[%vi, %vj] = %a[%vi, %vj] * 2.0
          }
        }
      }
    }
  })";

// Splits each of the two loops into 3 sampled factors: 28 x 28 programs.
class SplitBothLoops : public kernels::ScheduleRule {
 public:
  std::string name() const override { return "split_both_loops"; }
  std::vector<kernels::Schedule> Apply(const kernels::Schedule& schedule,
                                       const kernels::BlockRV& block) const override {
    kernels::Schedule s = schedule;
    std::vector<kernels::LoopRV> loops = s.GetLoops(block);
    for (const kernels::LoopRV& loop : loops) {
      std::vector<kernels::ExprRV> factors = s.SamplePerfectTile(loop, 3, 64);
      s.Split(loop, {factors[0], factors[1], factors[2]});
    }
    return {s};
  }
};

kernels::SearchSpace SyntheticSpace() {
  kernels::SearchTarget target;
  kernels::SearchSpace space;
  space.rules.push_back(std::make_shared<SplitBothLoops>());
  space.mutators.push_back({kernels::MakeMutateTileSize(target), 1.0});
  return space;
}

// The loop extents of the kernel's nest, outermost first.
std::vector<int64_t> Extents(const ir::KernelFunction& kernel) {
  std::vector<int64_t> extents;
  ir::Stmt s = kernel.body;
  while (s) {
    if (const auto* realize = ir::As<ir::BlockRealizeNode>(s)) {
      s = realize->block->body;
    } else if (const auto* loop = ir::As<ir::ForNode>(s)) {
      extents.push_back(loop->extent);
      s = loop->body;
    } else {
      break;
    }
  }
  return extents;
}

// Latency 1 ms + 0.1 ms per octave between each extent and the optimum (2, 8, 4, 4, 4, 4).
class SyntheticRunner : public tuning::Runner {
 public:
  static constexpr int64_t kOptimum[6] = {2, 8, 4, 4, 4, 4};
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    std::vector<tuning::MeasureResult> results;
    for (const tuning::RunInput& input : inputs) {
      ++runs;
      const ir::KernelFunction& kernel =
          *input.executable->module().kernel_functions().begin()->second;
      std::vector<int64_t> extents = Extents(kernel);
      double seconds = 1e-3;
      for (size_t k = 0; k < extents.size() && k < 6; ++k) {
        seconds += 1e-4 * std::abs(std::log2(static_cast<double>(extents[k])) -
                                   std::log2(static_cast<double>(kOptimum[k])));
      }
      results.push_back(tuning::MeasureResult::FromRunSeconds({seconds}, 0));
    }
    return results;
  }
  int64_t runs = 0;
};

// Builds in process: these tests are about the search, which must see every candidate it
// proposes built. (Isolated builds fork from two builder threads; under AddressSanitizer a child
// can inherit the sanitizer's allocator lock held by the other thread, since GCC's libasan does
// not take it around fork, and time out. The isolated builder is tested in
// tests/tuning/measure/isolated_build_test.cc and by the real-runner test below.)
std::shared_ptr<tuning::TuningSession> MockSession(std::shared_ptr<tuning::Runner> runner) {
  return std::make_shared<tuning::TuningSession>(
      ir::Target{}, tuning::MakeInMemoryDatabase(),
      std::make_shared<tuning::LocalBuilder>(tuning::LocalBuilder::Options{.isolate = false}),
      runner, tuning::TuningSession::Options{});
}

tuning::TuningTask ScaleTask(int64_t weight) {
  ir::KernelFunction kernel = ir::ParseKernel(kScale);
  return {tuning::KernelWorkloadHash(kernel), kernel.name, kernel, weight,
          tuning::EstimateFlops(kernel)};
}

TEST(KernelSearch, EvolutionarySearchFindsTheKnownOptimum) {
  auto runner = std::make_shared<SyntheticRunner>();
  auto session = MockSession(runner);
  std::unique_ptr<tuning::CostModel> model = tuning::MakeXGBoostModel(1);
  tuning::SchedulerOptions options;
  options.max_trials = 96;
  tuning::TaskScheduler scheduler({ScaleTask(1)}, *session, *model, SyntheticSpace(),
                                  tuning::SearchOptions{}, options, "TuneKernels");
  scheduler.Run();
  EXPECT_EQ(runner->runs, 96);  // 96 distinct programs of 784
  EXPECT_NEAR(scheduler.searches()[0].best_seconds(), 1e-3, 1e-9);
  // The curve never goes up.
  const auto& curve = scheduler.searches()[0].curve();
  for (size_t i = 1; i < curve.size(); ++i) EXPECT_LE(curve[i].second, curve[i - 1].second);
}

// A task of ScaleTask's shape but another workload (its constant differs), called 10 times per
// run.
tuning::TuningTask HeavyScaleTask() {
  std::string text = kScale;
  text.replace(text.find("2.0"), 3, "3.0");
  ir::KernelFunction kernel = ir::ParseKernel(text);
  return {tuning::KernelWorkloadHash(kernel), "heavy", kernel, 10, tuning::EstimateFlops(kernel)};
}

TEST(KernelSearch, GradientSchedulerFavoursTheHeavierTask) {
  auto runner = std::make_shared<SyntheticRunner>();
  auto session = MockSession(runner);
  std::unique_ptr<tuning::CostModel> model = tuning::MakeRandomModel(1);
  tuning::SchedulerOptions options;
  options.max_trials = 64;
  options.batch_size = 4;
  options.epsilon = 0;
  tuning::SearchOptions search;
  search.evolutionary = false;
  // Two tasks of the same shape but different workloads (the second kernel is renamed and its
  // constant differs), the second called 10 times per run.
  tuning::TuningTask light = ScaleTask(1);
  tuning::TuningTask heavy = HeavyScaleTask();
  tuning::TaskScheduler scheduler({light, heavy}, *session, *model, SyntheticSpace(), search,
                                  options, "TuneKernels");
  scheduler.Run();
  int64_t light_trials = scheduler.searches()[0].trials();
  int64_t heavy_trials = scheduler.searches()[1].trials();
  EXPECT_EQ(light_trials + heavy_trials, 64);
  EXPECT_GT(heavy_trials, 2 * light_trials) << light_trials << " vs " << heavy_trials;

  // Round robin splits evenly.
  auto session2 = MockSession(std::make_shared<SyntheticRunner>());
  options.gradient = false;
  tuning::TaskScheduler even({light, heavy}, *session2, *model, SyntheticSpace(), search, options,
                             "TuneKernels");
  even.Run();
  EXPECT_EQ(even.searches()[0].trials(), even.searches()[1].trials());
}

TEST(KernelSearch, WarmUpGoesToTheTaskWithTheMostWorkFirst) {
  // A budget of one batch warms up one task only: the one called 10 times per run, although it
  // comes second.
  tuning::TuningTask light = ScaleTask(1);
  tuning::TuningTask heavy = HeavyScaleTask();
  ASSERT_GT(heavy.flops, 0);
  std::unique_ptr<tuning::CostModel> model = tuning::MakeRandomModel(1);
  tuning::SchedulerOptions options;
  options.max_trials = 4;
  options.batch_size = 4;
  tuning::SearchOptions search;
  search.evolutionary = false;
  auto session = MockSession(std::make_shared<SyntheticRunner>());
  tuning::TaskScheduler scheduler({light, heavy}, *session, *model, SyntheticSpace(), search,
                                  options, "TuneKernels");
  scheduler.Run();
  EXPECT_EQ(scheduler.searches()[0].trials(), 0);
  EXPECT_EQ(scheduler.searches()[1].trials(), 4);
}

TEST(KernelSearch, DefaultScheduleIsOfferedFirstAndCanWin) {
  // With offer_default_schedule, the first batch holds the default-scheduled kernel; a runner
  // that finds every other program slower makes it the task's best, and the best trace replays
  // to it.
  tuning::TuningTask task = ScaleTask(1);
  kernels::DefaultScheduleOptions defaults;
  ir::KernelFunction want = kernels::ApplyDefaultSchedule(task.kernel, defaults).function();
  std::string default_hash = tuning::TuningSession::CandidateHash(want);
  tuning::SearchOptions options;
  options.offer_default_schedule = true;
  options.default_schedule = defaults;
  tuning::TaskSearch search(task, SyntheticSpace(), options, 5);
  std::unique_ptr<tuning::CostModel> model = tuning::MakeRandomModel(1);
  auto database = tuning::MakeInMemoryDatabase();
  std::vector<tuning::KernelCandidate> first = search.NextBatch(8, *model, *database, "t");
  ASSERT_EQ(first.size(), 8u);
  EXPECT_EQ(first[0].hash, default_hash);
  std::vector<tuning::MeasureResult> results;
  for (size_t i = 0; i < first.size(); ++i) {
    results.push_back(tuning::MeasureResult::FromRunSeconds({i == 0 ? 1e-3 : 2e-3}, 0));
  }
  search.Commit(first, results);
  EXPECT_DOUBLE_EQ(search.best_seconds(), 1e-3);
  std::optional<kernels::Schedule> replayed =
      kernels::ReplayProgram(task.kernel, search.best_trace(), SyntheticSpace());
  ASSERT_TRUE(replayed.has_value());
  EXPECT_TRUE(ir::StructuralEqual(replayed->function(), want));
  // Offered once: later batches do not repeat it.
  for (const tuning::KernelCandidate& c : search.NextBatch(8, *model, *database, "t")) {
    EXPECT_NE(c.hash, default_hash);
  }
}

TEST(KernelSearch, RealRunnerChecksEveryProposedProgram) {
  // The default CPU space on a small matmul, measured for real: every program is checked
  // against the default-scheduled kernel; none fails.
  ir::KernelFunction matmul = ir::ParseKernel(R"(
  kernel @mm(%a: f32[32,48], %w: f32[48,40]) -> (%c: f32[32,40]) {
    block root() {
      for %i in 32 {
        for %j in 40 {
          for %k in 48 {
            block C(%vi: spatial 32 = %i, %vj: spatial 40 = %j, %vk: reduce 48 = %k)
                reads(%a[%vi, %vk], %w[%vk, %vj]) writes(%c[%vi, %vj]) {
              init {
                %c[%vi, %vj] = 0.0
              }
              %c[%vi, %vj] = %c[%vi, %vj] + %a[%vi, %vk] * %w[%vk, %vj]
            }
          }
        }
      }
    }
  })");
  tuning::TuningTask task{tuning::KernelWorkloadHash(matmul), "mm", matmul, 1,
                          tuning::EstimateFlops(matmul)};
  EXPECT_DOUBLE_EQ(task.flops, 2.0 * 32 * 40 * 48);
  tuning::TuningSession::Options options;
  options.measure.repeats = 2;
  options.measure.min_repeat_seconds = 1e-4;
  tuning::TuningSession session(ir::Target{}, tuning::MakeInMemoryDatabase(),
                                std::make_shared<tuning::LocalBuilder>(),
                                std::make_shared<tuning::ProcessRunner>(), options);
  std::unique_ptr<tuning::CostModel> model = tuning::MakeXGBoostModel(2);
  tuning::SchedulerOptions scheduler_options;
  scheduler_options.max_trials = 24;
  scheduler_options.batch_size = 8;
  kernels::SearchSpace space = tuning::SearchSpaceFor(ir::Target{}, session.target_descriptor());
  tuning::TaskScheduler scheduler({task}, session, *model, space, tuning::SearchOptions{},
                                  scheduler_options, "TuneKernels");
  scheduler.Run();
  tuning::EvaluationCounts counts = session.TotalCounts();
  EXPECT_EQ(counts.measured, 24);
  EXPECT_EQ(counts.failed, 0);
  EXPECT_TRUE(std::isfinite(scheduler.searches()[0].best_seconds()));
  // Apply-history-best gives the best program.
  auto provider =
      tuning::HistoryBestProvider(session.shared_database(), session.target_descriptor(), space);
  std::optional<ir::KernelFunction> best = provider(matmul);
  ASSERT_TRUE(best.has_value());
}

}  // namespace
}  // namespace tandem
