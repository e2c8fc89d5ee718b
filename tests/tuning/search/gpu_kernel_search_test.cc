// Kernel search over a synthetic GPU space with a known optimum, against a deterministic mock
// runner: b = a * 2 over 32 x 32, each loop split in three by sample_perfect_tile, the outer
// parts fused and bound to blockIdx.x, the middle parts fused and bound to threadIdx.x, the
// verify_gpu_launch postprocessor of a target with 512 threads per block pruning larger blocks.
// The runner's latency grows with the distance (in octaves) of the launch from 4 blocks of 256
// threads with one element per thread. Evolutionary search with the XGBoost model finds that
// optimum, and no program the search measures breaks the thread limit. (The candidates are
// built for the CPU with their bindings made serial loops: tuning sessions for the cuda target
// do not exist yet.) Finally, SearchSpaceFor
// gives the cuda target the GPU space.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/target.h"
#include "kernels/schedule/primitives.h"
#include "kernels/search/components.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/search/task_scheduler.h"

namespace tandem {
namespace {

constexpr char kScale[] = R"(
  kernel @gpu_scale(%a: f32[32,32]) -> (%b: f32[32,32]) {
    block root() {
      for %i in 32 {
        for %j in 32 {
          block B(%vi: spatial 32 = %i, %vj: spatial 32 = %j)
              reads(%a[%vi, %vj]) writes(%b[%vi, %vj]) {
            %b[%vi, %vj] = %a[%vi, %vj] * 2.0
          }
        }
      }
    }
  })";

// i and j split in three; [i0 j0] -> blockIdx.x, [i1 j1] -> threadIdx.x, i2 j2 per thread.
class BindTiles : public kernels::ScheduleRule {
 public:
  std::string name() const override { return "bind_tiles"; }
  std::vector<kernels::Schedule> Apply(const kernels::Schedule& schedule,
                                       const kernels::BlockRV& block) const override {
    if (schedule.BlockName(block) != "B") return {schedule};
    kernels::Schedule s = schedule;
    std::vector<kernels::LoopRV> loops = s.GetLoops(block);
    std::vector<std::vector<kernels::LoopRV>> parts;
    for (const kernels::LoopRV& loop : loops) {
      std::vector<kernels::ExprRV> f = s.SamplePerfectTile(loop, 3, 64);
      parts.push_back(s.Split(loop, {f[0], f[1], f[2]}));
    }
    s.Reorder({parts[0][0], parts[1][0], parts[0][1], parts[1][1], parts[0][2], parts[1][2]});
    s.Bind(s.Fuse({parts[0][0], parts[1][0]}), "blockIdx.x");
    s.Bind(s.Fuse({parts[0][1], parts[1][1]}), "threadIdx.x");
    return {s};
  }
};

kernels::SearchSpace SyntheticGpuSpace() {
  kernels::SearchTarget target = kernels::GpuSearchTarget("sm_80");
  target.max_threads_per_block = 512;
  kernels::SearchSpace space;
  space.rules.push_back(std::make_shared<BindTiles>());
  space.postprocessors.push_back(kernels::MakeVerifyGpuLaunch(target));
  space.mutators.push_back({kernels::MakeMutateTileSize(target), 1.0});
  return space;
}

// The launch of a program built serially: its first loop ran over the blocks, the second over
// each block's threads, the rest in each thread.
struct Launch {
  int64_t blocks = 1, threads = 1, per_thread = 1;
};
Launch LaunchOf(const ir::KernelFunction& kernel) {
  Launch launch;
  int loops = 0;
  ir::VisitStmtTree(kernel.body, [&](const ir::Stmt& s) {
    const auto* loop = ir::As<ir::ForNode>(s);
    if (!loop) return;
    int64_t& extent = loops == 0 ? launch.blocks : loops == 1 ? launch.threads : launch.per_thread;
    extent *= loop->extent;
    ++loops;
  });
  return launch;
}

// Latency 1 ms + 0.1 ms per octave between the launch and 4 blocks x 256 threads x 1 element.
class SyntheticGpuRunner : public tuning::Runner {
 public:
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    std::vector<tuning::MeasureResult> results;
    for (const tuning::RunInput& input : inputs) {
      ++runs;
      Launch launch = LaunchOf(*input.executable->module().kernel_functions().begin()->second);
      if (launch.threads > 512) ++over_limit;
      double octaves = std::abs(std::log2(static_cast<double>(launch.blocks) / 4.0)) +
                       std::abs(std::log2(static_cast<double>(launch.threads) / 256.0)) +
                       std::abs(std::log2(static_cast<double>(launch.per_thread)));
      if (octaves < best_octaves) {
        best_octaves = octaves;
        best = fmt::format("{} blocks x {} threads x {} per thread", launch.blocks, launch.threads,
                           launch.per_thread);
      }
      results.push_back(tuning::MeasureResult::FromRunSeconds({1e-3 + 1e-4 * octaves}, 0));
    }
    return results;
  }
  int64_t runs = 0;
  int64_t over_limit = 0;
  double best_octaves = 1e9;
  std::string best;  // the best launch measured
};

// Builds the candidates for the CPU (no GPU tuning session exists yet): the in-process builder
// on the kernels with their thread bindings made serial loops (the same computation), keeping
// the first build error.
class SerializingBuilder : public tuning::Builder {
 public:
  std::vector<tuning::BuildOutput> Build(const std::vector<tuning::BuildInput>& inputs) override {
    std::vector<tuning::BuildInput> serial = inputs;
    for (tuning::BuildInput& input : serial) {
      std::vector<ir::KernelFunction> kernels;
      for (const auto& [name, kernel] : input.module.kernel_functions()) {
        ir::KernelFunction k = *kernel;
        std::vector<ir::Var> bound;
        ir::VisitStmtTree(k.body, [&](const ir::Stmt& s) {
          const auto* loop = ir::As<ir::ForNode>(s);
          if (loop && ir::IsThreadBinding(loop->for_kind)) bound.push_back(loop->loop_var);
        });
        for (const ir::Var& var : bound) {
          k = kernels::primitive::SetLoopKind(k, var, ir::ForKind::kSerial);
        }
        kernels.push_back(k);
      }
      for (const ir::KernelFunction& k : kernels) input.module.AddKernel(k);
    }
    std::vector<tuning::BuildOutput> outputs = builder_.Build(serial);
    for (const tuning::BuildOutput& output : outputs) {
      if (!output.error.empty() && first_error.empty()) first_error = output.error;
    }
    return outputs;
  }
  std::string first_error;

 private:
  tuning::LocalBuilder builder_{tuning::LocalBuilder::Options{.isolate = false}};
};

TEST(GpuKernelSearch, EvolutionarySearchFindsTheKnownOptimum) {
  auto runner = std::make_shared<SyntheticGpuRunner>();
  auto builder = std::make_shared<SerializingBuilder>();
  auto session =
      std::make_shared<tuning::TuningSession>(ir::Target{}, tuning::MakeInMemoryDatabase(), builder,
                                              runner, tuning::TuningSession::Options{});
  ir::KernelFunction kernel = ir::ParseKernel(kScale);
  tuning::TuningTask task{tuning::KernelWorkloadHash(kernel), kernel.name, kernel, 1,
                          tuning::EstimateFlops(kernel)};
  std::unique_ptr<tuning::CostModel> model = tuning::MakeXGBoostModel(1);
  tuning::SchedulerOptions options;
  options.max_trials = 128;
  tuning::TaskScheduler scheduler({task}, *session, *model, SyntheticGpuSpace(),
                                  tuning::SearchOptions{}, options, "TuneKernels");
  scheduler.Run();
  EXPECT_EQ(runner->runs, 128) << builder->first_error;
  EXPECT_EQ(runner->over_limit, 0) << "a program over the thread limit was measured";
  EXPECT_NEAR(scheduler.searches()[0].best_seconds(), 1e-3, 1e-9) << runner->best;
}

TEST(GpuKernelSearch, CudaTargetGetsTheGpuSpace) {
  ir::Target cuda = ir::ParseTarget("cuda -arch=sm_90");
  kernels::SearchSpace space = tuning::SearchSpaceFor(cuda, "");
  std::vector<std::string> rules;
  for (const kernels::ScheduleRulePtr& rule : space.rules) rules.push_back(rule->name());
  EXPECT_NE(std::find(rules.begin(), rules.end(), "multi_level_tiling_gpu"), rules.end());
  EXPECT_EQ(std::find(rules.begin(), rules.end(), "parallel_vectorize_unroll"), rules.end());
}

}  // namespace
}  // namespace tandem
