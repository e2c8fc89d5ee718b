#include "tuning/search/task_scheduler.h"

#include <chrono>
#include <cmath>
#include <limits>

namespace tandem::tuning {

TaskScheduler::TaskScheduler(std::vector<TuningTask> tasks, TuningSession& session,
                             CostModel& model, const kernels::SearchSpace& space,
                             SearchOptions search, SchedulerOptions options, std::string pass)
    : session_(session), model_(model), options_(options), pass_(std::move(pass)) {
  for (TuningTask& task : tasks) {
    searches_.emplace_back(std::move(task), space, search, session_.random().Next());
  }
}

double TaskScheduler::TaskGradient(size_t i) const {
  const TaskSearch& s = searches_[i];
  double weight = static_cast<double>(s.task().weight);
  double best = s.best_seconds();
  if (!std::isfinite(best) || s.trials() == 0) return -std::numeric_limits<double>::infinity();
  const auto& curve = s.curve();
  double backward = 0;
  if (curve.size() > 1) {
    size_t back = curve.size() > static_cast<size_t>(options_.window)
                      ? curve.size() - 1 - options_.window
                      : 0;
    double earlier = curve[back].second;
    double span = static_cast<double>(curve.back().first - curve[back].first);
    if (std::isfinite(earlier) && span > 0) backward = (best - earlier) / span;
  }
  double optimistic = -best / static_cast<double>(s.trials());
  return weight * (options_.alpha * backward + (1 - options_.alpha) * optimistic);
}

size_t TaskScheduler::PickTask() {
  size_t n = searches_.size();
  if (!options_.gradient) {
    for (size_t k = 0; k < n; ++k) {
      size_t i = (next_round_robin_ + k) % n;
      if (!searches_[i].exhausted()) {
        next_round_robin_ = i + 1;
        return i;
      }
    }
    return n;
  }
  // Warm-up: every task once, the most work per run first (weight times floating-point
  // operations; the first of equals), so a budget too small to warm every task up tunes the
  // kernels that matter before a layout transform or an elementwise kernel.
  size_t warm_up = n;
  double most_work = -1;
  for (size_t i = 0; i < n; ++i) {
    if (searches_[i].trials() != 0 || searches_[i].exhausted()) continue;
    double work = static_cast<double>(searches_[i].task().weight) * searches_[i].task().flops;
    if (work > most_work) {
      most_work = work;
      warm_up = i;
    }
  }
  if (warm_up < n) return warm_up;
  std::vector<size_t> open;
  for (size_t i = 0; i < n; ++i) {
    if (!searches_[i].exhausted()) open.push_back(i);
  }
  if (open.empty()) return n;
  if (session_.random().UniformReal() < options_.epsilon) {
    return open[static_cast<size_t>(session_.random().Uniform(static_cast<int64_t>(open.size())))];
  }
  size_t best = open.front();
  for (size_t i : open) {
    if (TaskGradient(i) < TaskGradient(best)) best = i;
  }
  return best;
}

void TaskScheduler::Run() {
  auto start = std::chrono::steady_clock::now();
  while (trials_ < options_.max_trials && !session_.BudgetSpent()) {
    size_t i = PickTask();
    if (i >= searches_.size()) break;
    TaskSearch& search = searches_[i];
    int count =
        static_cast<int>(std::min<int64_t>(options_.batch_size, options_.max_trials - trials_));
    std::vector<KernelCandidate> batch =
        search.NextBatch(count, model_, session_.database(), session_.target_descriptor());
    if (batch.empty()) continue;  // exhausted now; PickTask skips it from here on
    std::vector<MeasureResult> results = session_.EvaluateKernels(search.task(), batch, pass_);
    search.Commit(batch, results);
    trials_ += static_cast<int64_t>(batch.size());
    KernelSearchBatch logged{i, trials_, {}};
    for (size_t k = 0; k < batch.size(); ++k) {
      if (TuningSession::IsOverBudget(results[k])) continue;
      logged.candidates.push_back(
          batch[k].hash.empty() ? TuningSession::CandidateHash(batch[k].scheduled) : batch[k].hash);
    }
    batches_.push_back(std::move(logged));
    std::vector<TrainingExample> examples;
    for (size_t k = 0; k < batch.size(); ++k) {
      examples.push_back(
          {search.task().workload_hash,
           batch[k].features.empty() ? ExtractFeatures(batch[k].scheduled) : batch[k].features,
           results[k].ok() ? results[k].median_seconds : 0.0});
    }
    model_.Update(examples);
    CurvePoint point;
    point.trials = trials_;
    point.all_tasks_measured = true;
    for (const TaskSearch& s : searches_) {
      if (std::isfinite(s.best_seconds())) {
        point.weighted_seconds += static_cast<double>(s.task().weight) * s.best_seconds();
      } else {
        point.all_tasks_measured = false;
      }
    }
    point.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    curve_.push_back(point);
    if (session_.on_progress) {
      session_.on_progress(
          {pass_ + " " + search.task().name, trials_, options_.max_trials, search.best_seconds()});
    }
  }
  std::vector<KernelSearchTask> tasks;
  for (const TaskSearch& s : searches_) {
    const TuningTask& task = s.task();
    tasks.push_back(
        {task.workload_hash, task.name, task.weight, task.flops, s.default_candidate()});
  }
  session_.RecordKernelCurve({pass_, searches_.size(), curve_, std::move(tasks), batches_});
}

}  // namespace tandem::tuning
