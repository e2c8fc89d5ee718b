#include "tuning/session/tuning_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/structural.h"
#include "tuning/database/record_trace.h"

namespace tandem::tuning {

using nlohmann::json;

namespace {

constexpr const char* kRunKind = "run";

bool SameCounts(const EvaluationCounts& a, const EvaluationCounts& b) {
  return a.requested == b.requested && a.reused == b.reused && a.measured == b.measured &&
         a.failed == b.failed && a.over_budget == b.over_budget && a.confirmed == b.confirmed &&
         a.build_seconds == b.build_seconds && a.run_seconds == b.run_seconds;
}

}  // namespace

bool TuningRun::operator==(const TuningRun& other) const {
  if (decisions.size() != other.decisions.size() || counts.size() != other.counts.size() ||
      kernel_curves.size() != other.kernel_curves.size()) {
    return false;
  }
  for (size_t i = 0; i < decisions.size(); ++i) {
    const TuningDecision& a = decisions[i];
    const TuningDecision& b = other.decisions[i];
    if (a.pass != b.pass || a.trace != b.trace || a.result.run_seconds != b.result.run_seconds ||
        a.result.error != b.result.error || a.baseline_seconds != b.baseline_seconds) {
      return false;
    }
  }
  for (auto a = counts.begin(), b = other.counts.begin(); a != counts.end(); ++a, ++b) {
    if (a->first != b->first || !SameCounts(a->second, b->second)) return false;
  }
  for (size_t i = 0; i < kernel_curves.size(); ++i) {
    const KernelTuningCurve& a = kernel_curves[i];
    const KernelTuningCurve& b = other.kernel_curves[i];
    if (a.pass != b.pass || a.num_tasks != b.num_tasks || a.points.size() != b.points.size()) {
      return false;
    }
    for (size_t k = 0; k < a.points.size(); ++k) {
      const CurvePoint& p = a.points[k];
      const CurvePoint& q = b.points[k];
      if (p.trials != q.trials || p.weighted_seconds != q.weighted_seconds ||
          p.elapsed_seconds != q.elapsed_seconds || p.all_tasks_measured != q.all_tasks_measured) {
        return false;
      }
    }
    if (a.tasks != b.tasks || a.batches != b.batches) return false;
  }
  return model == other.model && model_hash == other.model_hash && pipeline == other.pipeline &&
         target == other.target && trial_budget == other.trial_budget &&
         time_budget_seconds == other.time_budget_seconds && seed == other.seed &&
         trace == other.trace && graph_curve == other.graph_curve &&
         graph_evaluations == other.graph_evaluations && fma_peak == other.fma_peak &&
         before_seconds == other.before_seconds && after_seconds == other.after_seconds &&
         after_error == other.after_error && tuning_seconds == other.tuning_seconds &&
         measured_at == other.measured_at;
}

std::string TuningRunKey(const std::string& model_hash, const std::string& pipeline) {
  ir::StableHasher hasher;
  hasher.UpdateString(kRunKind);
  hasher.UpdateString(model_hash);
  hasher.UpdateString(pipeline);
  return ir::HashToHex(hasher.Digest());
}

std::string TuningJobKey(const std::string& model_hash, const std::string& pipeline,
                         const std::string& record_key, int64_t trial_budget,
                         double time_budget_seconds, uint64_t seed) {
  return fmt::format("{}|{}|trials={}|time-budget={}|seed={}", TuningRunKey(model_hash, pipeline),
                     record_key, trial_budget, time_budget_seconds, seed);
}

namespace {

// The stored run of `record`, or nullopt (its reason appended to `skipped`) when it does not
// decode.
std::optional<TuningRun> DecodeStoredRun(const TuningRecord& record,
                                         std::vector<std::string>* skipped) {
  try {
    return TuningRunFromJson(record.measured_by, record.trace_json);
  } catch (const ir::Error& e) {
    if (skipped) skipped->push_back(fmt::format("{}: {}", DescribeRecord(record), e.message()));
    return std::nullopt;
  }
}

}  // namespace

TuningRun SummarizeTuningRun(const TuningSession& session, const std::string& model,
                             const std::string& model_hash, const std::string& pipeline,
                             const ir::Trace& trace, double tuning_seconds) {
  TuningRun run;
  run.model = model;
  run.model_hash = model_hash;
  run.pipeline = pipeline;
  run.target = session.target_descriptor();
  run.trial_budget = session.options().max_measurements;
  run.time_budget_seconds = session.options().max_seconds;
  run.seed = session.options().seed;
  run.trace = trace;
  for (const TuningDecision& decision : session.decisions()) {
    TuningDecision stored = decision;
    stored.input = ir::IRModule();
    run.decisions.push_back(std::move(stored));
  }
  for (const auto& [pass, counts] : session.counts()) {
    if (pass.rfind("(", 0) != 0) run.counts[pass] = counts;
  }
  run.kernel_curves = session.kernel_curves();
  for (const GraphCurvePoint& point : session.graph_curve()) {
    if (point.pass.rfind("(", 0) != 0) run.graph_curve.push_back(point);
  }
  run.graph_evaluations = session.graph_evaluations();
  run.tuning_seconds = tuning_seconds;
  run.measured_at = NowUtc();
  return run;
}

void CommitTuningRun(Database& database, const TuningRun& run) {
  std::string key = TuningRunKey(run.model_hash, run.pipeline);
  json text = {{"model", run.model}, {"model_hash", run.model_hash}, {"pipeline", run.pipeline}};
  database.CommitWorkload({key, kRunKind, text.dump()});
  TuningRecord record;
  record.workload_hash = key;
  record.target = run.target;
  record.candidate_hash = "";
  record.trace_json = run.trace.ToJson();
  record.run_seconds = run.after_seconds;
  record.error =
      run.after_seconds.empty() ? (run.after_error.empty() ? "not measured" : run.after_error) : "";
  record.measured_at = run.measured_at;
  record.measured_by = TuningRunToJson(run);
  database.CommitRecord(record);
}

std::vector<TuningRun> TuningRuns(const Database& database, std::vector<std::string>* skipped) {
  std::vector<TuningRun> runs;
  for (const Workload& workload : database.Workloads()) {
    if (workload.kind != kRunKind) continue;
    for (const std::string& target : database.Targets(workload.hash)) {
      for (const TuningRecord& record : database.Records(workload.hash, target)) {
        if (std::optional<TuningRun> run = DecodeStoredRun(record, skipped)) {
          runs.push_back(std::move(*run));
        }
      }
    }
  }
  std::stable_sort(runs.begin(), runs.end(), [](const TuningRun& a, const TuningRun& b) {
    return a.measured_at < b.measured_at;
  });
  return runs;
}

std::optional<TuningRun> LatestTuningRun(const Database& database, const std::string& model_hash,
                                         const std::string& pipeline, const std::string& target,
                                         std::vector<std::string>* skipped) {
  std::vector<TuningRecord> records = database.Records(TuningRunKey(model_hash, pipeline), target);
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (std::optional<TuningRun> run = DecodeStoredRun(*it, skipped)) return run;
  }
  return std::nullopt;
}

}  // namespace tandem::tuning
