// Task scheduling: which kernel of a model gets the next batch of measurements.
//
// A model's end-to-end latency is roughly sum_i w_i * g_i, where g_i is the best latency found
// so far for kernel task i and w_i how often the model calls it. The gradient scheduler (after
// Ansor) gives the next batch to the task whose extra trials are expected to cut that sum most:
// after every task has had one warm-up batch (the tasks with the most work per run first), it
// estimates for each task
//   dL/dt_i = w_i * ( alpha * (g_i(t_i) - g_i(t_i - window)) / window
//                     + (1 - alpha) * (-g_i(t_i) / t_i) ),
// the first term from the recent slope of the task's own tuning curve, the second an optimistic
// bound (the latency could fall to zero at the rate it has fallen on average), and picks the
// most negative, with an epsilon share of random picks. Tasks whose search is exhausted are
// skipped. The round-robin scheduler (the baseline) cycles through the tasks.
//
// After each batch the cost model is retrained on every measurement so far (all tasks: the
// model learns across workloads; throughputs are normalized per workload).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/search/search_space.h"
#include "tuning/search/cost_model.h"
#include "tuning/search/evolutionary_search.h"
#include "tuning/search/task.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tuning {

struct SchedulerOptions {
  bool gradient = true;     // false: round robin
  int64_t max_trials = 64;  // measurements over all tasks
  int batch_size = 16;
  double alpha = 0.2;
  int window = 3;  // trials-curve points for the backward slope
  double epsilon = 0.05;
};

class TaskScheduler {
 public:
  TaskScheduler(std::vector<TuningTask> tasks, TuningSession& session, CostModel& model,
                const kernels::SearchSpace& space, SearchOptions search, SchedulerOptions options,
                std::string pass);

  // Tunes until max_trials measurements were requested or every task is exhausted.
  void Run();

  const std::vector<TaskSearch>& searches() const { return searches_; }
  // The model's tuning curve: a point after every batch (also recorded in the session).
  const std::vector<CurvePoint>& curve() const { return curve_; }
  // Index of the task the next batch goes to (exposed for tests).
  size_t PickTask();

 private:
  double TaskGradient(size_t i) const;

  TuningSession& session_;
  CostModel& model_;
  SchedulerOptions options_;
  std::string pass_;
  std::vector<TaskSearch> searches_;
  std::vector<CurvePoint> curve_;
  std::vector<KernelSearchBatch> batches_;
  size_t next_round_robin_ = 0;
  int64_t trials_ = 0;
};

}  // namespace tandem::tuning
