// Search for fast programs of one kernel: evolutionary search guided by a cost model, or plain
// replay of random samples (the baseline).
//
// The design spaces of a kernel (kernels/search/search_space.h) are traces with sampling
// instructions; a program is such a trace with every decision filled in. Evolutionary search
// keeps a population of programs and, for each batch to measure:
//   1. seeds the population with the best programs of this workload already in the database
//      (their traces replayed) and fills it up with fresh random samples of the design spaces;
//   2. evolves it for a few generations: every program is scored by the cost model; parents
//      are drawn with probability proportional to their score; with probability
//      `mutation_probability` a child is a parent with one decision changed by a mutator
//      (chosen by the mutators' weights), otherwise the parent itself; invalid children are
//      rejected by replay + postprocessing before any measurement; the best-scored distinct
//      programs survive;
//   3. returns the best-scored programs not measured yet, except that an `epsilon` share of the
//      batch is drawn at random from the fresh samples (exploration, so a wrong model cannot
//      starve a region of the space).
// Replay skips steps 1-2: the batch is random samples. With `offer_default_schedule`, the first
// batch also holds the kernel's default schedule (kernels/default_schedule.h, postprocessed like
// a sample), so that tuning never ends slower than the untuned build where the design space is
// weaker than the hand-written rules. Both only return programs not measured
// before (by the hash of the scheduled kernel), and give up a sampling loop after
// `max_failures` rejected attempts in a row.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/default_schedule.h"
#include "kernels/search/search_space.h"
#include "tuning/database/database.h"
#include "tuning/search/cost_model.h"
#include "tuning/search/task.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tuning {

struct SearchOptions {
  bool evolutionary = true;  // false: replay random samples
  int population = 64;
  int generations = 3;
  double mutation_probability = 0.85;
  double epsilon = 0.1;
  int seeds_from_database = 16;
  int max_failures = 256;
  bool offer_default_schedule = false;
  kernels::DefaultScheduleOptions default_schedule;
};

class TaskSearch {
 public:
  TaskSearch(TuningTask task, const kernels::SearchSpace& space, SearchOptions options,
             uint64_t seed);

  // Up to `count` programs not measured before (fewer when the space seems exhausted).
  std::vector<KernelCandidate> NextBatch(int count, CostModel& model, const Database& database,
                                         const std::string& target);
  // Records measurements of a batch NextBatch returned.
  void Commit(const std::vector<KernelCandidate>& batch, const std::vector<MeasureResult>& results);

  const TuningTask& task() const { return task_; }
  int64_t trials() const { return trials_; }
  double best_seconds() const { return best_seconds_; }
  const ir::Trace& best_trace() const { return best_trace_; }
  // (trials so far, best seconds so far) after every committed batch.
  const std::vector<std::pair<int64_t, double>>& curve() const { return curve_; }
  bool exhausted() const { return exhausted_; }
  // The candidate hash of the task's default schedule, once NextBatch offered it ("" before, or
  // when the kernel has none).
  const std::string& default_candidate() const { return default_candidate_; }

 private:
  using Program = KernelCandidate;
  std::optional<Program> Sample();
  std::optional<Program> MakeProgram(const kernels::Schedule& schedule) const;
  std::optional<Program> FromTrace(const ir::Trace& trace);
  std::optional<Program> Mutate(const Program& parent);
  std::vector<Program> Evolve(std::vector<Program> population, CostModel& model);

  TuningTask task_;
  kernels::SearchSpace space_;
  SearchOptions options_;
  kernels::RandomState random_;
  std::vector<ir::Trace> design_spaces_;
  std::set<std::string> measured_;
  int64_t trials_ = 0;
  double best_seconds_ = std::numeric_limits<double>::infinity();
  ir::Trace best_trace_;
  std::vector<std::pair<int64_t, double>> curve_;
  bool exhausted_ = false;
  bool default_offered_ = false;
  std::string default_candidate_;
};

}  // namespace tandem::tuning
