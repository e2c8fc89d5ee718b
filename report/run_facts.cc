#include "report/run_facts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace tandem::report {

using tuning::Database;
using tuning::GraphEvaluation;
using tuning::KernelSearchBatch;
using tuning::KernelTuningCurve;
using tuning::TuningRecord;
using tuning::TuningRun;

std::string RecordRef::Text() const {
  return tuning::JobTrialName(workload_hash, candidate_hash);
}

double KernelTaskFacts::BestGflops() const {
  if (!best_point || !(best_point->seconds > 0) || !(task.flops > 0)) return 0;
  return task.flops / best_point->seconds / 1e9;
}

std::optional<double> RecordSeconds(const Database& database, const std::string& target,
                                    const RecordRef& ref) {
  std::optional<TuningRecord> record =
      database.FindRecord(ref.workload_hash, target, ref.candidate_hash);
  if (!record || !record->ok()) return std::nullopt;
  return record->median_seconds();
}

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Looks records up once each.
class Records {
 public:
  Records(const Database& database, std::string target)
      : database_(database), target_(std::move(target)) {}

  const std::optional<TuningRecord>& Find(const RecordRef& ref) {
    auto [it, inserted] = cache_.try_emplace(ref.Text());
    if (inserted) it->second = database_.FindRecord(ref.workload_hash, target_, ref.candidate_hash);
    return it->second;
  }

 private:
  const Database& database_;
  std::string target_;
  std::map<std::string, std::optional<TuningRecord>> cache_;
};

PassPoints& Of(std::vector<PassPoints>& lines, const std::string& pass) {
  auto it = std::find_if(lines.begin(), lines.end(),
                         [&](const PassPoints& line) { return line.pass == pass; });
  if (it != lines.end()) return *it;
  lines.push_back({pass, {}});
  return lines.back();
}

// Failures collected per pass, each record once.
class FailureLog {
 public:
  void Add(const std::string& pass, const RecordRef& ref, const std::string& reason) {
    if (!seen_.insert(pass + "\n" + ref.Text()).second) return;
    PassFailures& failures = Of(pass);
    ++failures.failed;
    failures.by_reason[reason].push_back(ref);
  }
  PassFailures& Of(const std::string& pass) {
    auto it = std::find_if(passes_.begin(), passes_.end(),
                           [&](const PassFailures& f) { return f.pass == pass; });
    if (it != passes_.end()) return *it;
    passes_.push_back({pass, 0, 0, {}});
    return passes_.back();
  }
  std::vector<PassFailures> Take() { return std::move(passes_); }

 private:
  std::vector<PassFailures> passes_;
  std::set<std::string> seen_;
};

GraphFacts CollectGraph(const TuningRun& run, Records& records, FailureLog& failures) {
  GraphFacts facts;
  facts.logged = !run.graph_evaluations.empty();
  std::map<std::string, PlotPoint> best;       // per pass
  std::map<std::string, PlotPoint> last_seen;  // per pass: its last whole-module evaluation
  std::set<std::string> whole, pieces;
  int64_t evaluations = 0;  // of the tuning passes, answered or measured alike
  for (const GraphEvaluation& e : run.graph_evaluations) {
    RecordRef ref{e.workload_hash, e.candidate_hash};
    const std::optional<TuningRecord>& record = records.Find(ref);
    if (!record) continue;
    if (e.pass.rfind("(", 0) != 0) ++evaluations;
    PlotPoint point{static_cast<double>(evaluations), e.elapsed_seconds,
                    record->ok() ? record->median_seconds() : kInfinity, ref};
    if (e.pass.rfind("(", 0) == 0) {  // measured outside the pipeline, for the run's table
      if (!record->ok()) continue;
      if (e.pass.rfind("(before", 0) == 0) facts.before = point;
      if (e.pass.rfind("(after", 0) == 0) facts.after = point;
      continue;
    }
    (e.piece ? pieces : whole).insert(e.workload_hash);
    if (!record->ok()) {
      failures.Add(e.pass, ref, record->error);
      continue;
    }
    if (e.confirmation()) {
      Of(facts.confirmations, e.pass).points.push_back(point);
      continue;
    }
    if (e.piece) {
      Of(facts.pieces, e.pass).points.push_back(point);
      continue;
    }
    PassPoints& line = Of(facts.end_to_end, e.pass);
    auto [it, first] = best.try_emplace(e.pass, point);
    if (first || point.seconds < it->second.seconds) {
      it->second = point;
      line.points.push_back(point);
    }
    PlotPoint still = it->second;
    still.x = point.x, still.elapsed_seconds = point.elapsed_seconds;
    last_seen[e.pass] = still;
  }
  for (PassPoints& line : facts.end_to_end) {
    const PlotPoint& last = last_seen.at(line.pass);
    if (last.x > line.points.back().x) line.points.push_back(last);
  }
  facts.whole_modules = static_cast<int64_t>(whole.size());
  facts.piece_modules = static_cast<int64_t>(pieces.size());
  return facts;
}

KernelSearchFacts CollectKernelSearch(const KernelTuningCurve& curve, Records& records,
                                      FailureLog& failures) {
  KernelSearchFacts facts;
  facts.pass = curve.pass;
  facts.logged = !curve.tasks.empty();
  if (!facts.logged) {
    for (const tuning::CurvePoint& point : curve.points) {
      if (point.all_tasks_measured) {
        facts.recorded_complete.emplace_back(point.trials, point.weighted_seconds);
      }
    }
    return facts;
  }
  // Each task's term of the sum: weight x min(default, best so far); nullopt: left out.
  std::vector<std::optional<double>> terms;
  std::optional<RecordRef> lowered_by;
  for (const tuning::KernelSearchTask& task : curve.tasks) {
    KernelTaskFacts task_facts;
    task_facts.task = task;
    std::optional<double> term;
    if (!task.default_candidate.empty()) {
      RecordRef ref{task.workload_hash, task.default_candidate};
      const std::optional<TuningRecord>& record = records.Find(ref);
      if (record && record->ok()) {
        task_facts.default_schedule = PlotPoint{0, 0, record->median_seconds(), ref};
        term = static_cast<double>(task.weight) * record->median_seconds();
        if (!lowered_by) lowered_by = ref;
      }
    }
    if (!term) ++facts.left_out;
    terms.push_back(term);
    facts.tasks.push_back(std::move(task_facts));
  }
  auto sum = [&] {
    double total = 0;
    for (const std::optional<double>& term : terms) total += term.value_or(0);
    return total;
  };
  if (lowered_by) facts.weighted.push_back({0, 0, sum(), *lowered_by});
  for (const KernelSearchBatch& batch : curve.batches) {
    KernelTaskFacts& task = facts.tasks[batch.task];
    for (const std::string& candidate : batch.candidates) {
      RecordRef ref{task.task.workload_hash, candidate};
      const std::optional<TuningRecord>& record = records.Find(ref);
      if (!record) continue;
      ++task.measured;
      if (!record->ok()) {
        ++task.failed;
        failures.Add(curve.pass, ref, record->error);
        continue;
      }
      double seconds = record->median_seconds();
      if (!task.best_point || seconds < task.best_point->seconds) {
        task.best_point = PlotPoint{static_cast<double>(batch.trials), 0, seconds, ref};
      }
    }
    if (!task.best_point) continue;
    PlotPoint best = *task.best_point;
    best.x = static_cast<double>(batch.trials);
    task.best.push_back(best);
    std::optional<double>& term = terms[batch.task];
    double candidate_term = static_cast<double>(task.task.weight) * best.seconds;
    if (term && candidate_term < *term) {
      term = candidate_term;
      lowered_by = best.record;
    }
    if (lowered_by) facts.weighted.push_back({best.x, 0, sum(), *lowered_by});
  }
  return facts;
}

}  // namespace

RunFacts CollectRunFacts(const TuningRun& run, const Database& database) {
  Records records(database, run.target);
  FailureLog failures;
  RunFacts facts;
  facts.graph = CollectGraph(run, records, failures);
  for (const KernelTuningCurve& curve : run.kernel_curves) {
    facts.kernel_searches.push_back(CollectKernelSearch(curve, records, failures));
  }
  bool logged = facts.graph.logged;
  for (const KernelSearchFacts& search : facts.kernel_searches) logged = logged || search.logged;
  for (const auto& [pass, counts] : run.counts) {
    if (counts.failed == 0 && counts.over_budget == 0) continue;
    PassFailures& entry = failures.Of(pass);
    entry.over_budget = counts.over_budget;
    // Without a log the run's count of failed measurements is all there is; with one, each
    // failed record is listed with its reason (answers from earlier runs' records included).
    if (!logged) entry.failed = counts.failed;
  }
  facts.failures = failures.Take();
  std::erase_if(facts.failures,
                [](const PassFailures& f) { return f.failed == 0 && f.over_budget == 0; });
  return facts;
}

}  // namespace tandem::report
