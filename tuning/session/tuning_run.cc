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

json CountsToJson(const EvaluationCounts& c) {
  return json{{"requested", c.requested},         {"reused", c.reused},
              {"measured", c.measured},           {"failed", c.failed},
              {"over_budget", c.over_budget},     {"confirmed", c.confirmed},
              {"build_seconds", c.build_seconds}, {"run_seconds", c.run_seconds}};
}

template <typename T>
T Field(const json& object, const char* name, const std::string& where) {
  auto it = object.find(name);
  if (it == object.end()) {
    throw ir::Error(fmt::format("tuning run: {} has no field '{}'", where, name));
  }
  try {
    return it->get<T>();
  } catch (const json::exception& e) {
    throw ir::Error(
        fmt::format("tuning run: field '{}' of {} is malformed: {}", name, where, e.what()));
  }
}

EvaluationCounts CountsFromJson(const json& object, const std::string& where) {
  EvaluationCounts c;
  c.requested = Field<int64_t>(object, "requested", where);
  c.reused = Field<int64_t>(object, "reused", where);
  c.measured = Field<int64_t>(object, "measured", where);
  c.failed = Field<int64_t>(object, "failed", where);
  c.over_budget = Field<int64_t>(object, "over_budget", where);
  // Runs recorded before confirmation existed have no such field.
  c.confirmed = object.contains("confirmed") ? Field<int64_t>(object, "confirmed", where) : 0;
  c.build_seconds = Field<double>(object, "build_seconds", where);
  c.run_seconds = Field<double>(object, "run_seconds", where);
  return c;
}

bool SameCounts(const EvaluationCounts& a, const EvaluationCounts& b) {
  return a.requested == b.requested && a.reused == b.reused && a.measured == b.measured &&
         a.failed == b.failed && a.over_budget == b.over_budget && a.confirmed == b.confirmed &&
         a.build_seconds == b.build_seconds && a.run_seconds == b.run_seconds;
}

json ResultToJson(const MeasureResult& r) {
  return json{{"run_seconds", r.run_seconds}, {"error", r.error}};
}

MeasureResult ResultFromJson(const json& object, const std::string& where) {
  std::string error = Field<std::string>(object, "error", where);
  if (!error.empty()) return MeasureResult::Failure(error);
  return MeasureResult::FromRunSeconds(Field<std::vector<double>>(object, "run_seconds", where), 0);
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
  }
  return model == other.model && model_hash == other.model_hash && pipeline == other.pipeline &&
         target == other.target && trial_budget == other.trial_budget &&
         time_budget_seconds == other.time_budget_seconds && seed == other.seed &&
         trace == other.trace && graph_curve == other.graph_curve &&
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

std::string TuningRunToJson(const TuningRun& run) {
  json decisions = json::array();
  for (const TuningDecision& d : run.decisions) {
    decisions.push_back({{"pass", d.pass},
                         {"trace", json::parse(d.trace.ToJson())},
                         {"result", ResultToJson(d.result)},
                         {"baseline_seconds", d.baseline_seconds}});
  }
  json counts = json::object();
  for (const auto& [pass, c] : run.counts) counts[pass] = CountsToJson(c);
  json kernel_curves = json::array();
  for (const KernelTuningCurve& curve : run.kernel_curves) {
    json points = json::array();
    for (const CurvePoint& p : curve.points) {
      points.push_back({p.trials, p.weighted_seconds, p.elapsed_seconds, p.all_tasks_measured});
    }
    kernel_curves.push_back(
        {{"pass", curve.pass}, {"num_tasks", curve.num_tasks}, {"points", points}});
  }
  json graph_curve = json::array();
  for (const GraphCurvePoint& p : run.graph_curve) {
    graph_curve.push_back({p.pass, p.measured, p.best_seconds, p.elapsed_seconds});
  }
  json object = {{"model", run.model},
                 {"model_hash", run.model_hash},
                 {"pipeline", run.pipeline},
                 {"target", run.target},
                 {"trial_budget", run.trial_budget},
                 {"time_budget_seconds", run.time_budget_seconds},
                 {"seed", run.seed},
                 {"decisions", decisions},
                 {"counts", counts},
                 {"kernel_curves", kernel_curves},
                 {"graph_curve", graph_curve},
                 {"before_seconds", run.before_seconds},
                 {"after_seconds", run.after_seconds},
                 {"after_error", run.after_error},
                 {"tuning_seconds", run.tuning_seconds},
                 {"measured_at", run.measured_at}};
  return object.dump();
}

namespace {

TuningRun DecodeTuningRun(const std::string& text, const std::string& trace_json) {
  json object = json::parse(text, nullptr, false);
  if (!object.is_object()) throw ir::Error("tuning run: the summary is not a JSON object");
  const std::string where = "the run summary";
  TuningRun run;
  run.model = Field<std::string>(object, "model", where);
  run.model_hash = Field<std::string>(object, "model_hash", where);
  run.pipeline = Field<std::string>(object, "pipeline", where);
  run.target = Field<std::string>(object, "target", where);
  run.trial_budget = Field<int64_t>(object, "trial_budget", where);
  run.time_budget_seconds = Field<double>(object, "time_budget_seconds", where);
  run.seed = Field<uint64_t>(object, "seed", where);
  run.trace = ir::Trace::FromJson(trace_json);
  for (const json& d : Field<json>(object, "decisions", where)) {
    TuningDecision decision;
    decision.pass = Field<std::string>(d, "pass", "a decision");
    decision.trace = ir::Trace::FromJson(Field<json>(d, "trace", "a decision").dump());
    decision.result = ResultFromJson(Field<json>(d, "result", "a decision"), "a decision result");
    decision.baseline_seconds = Field<double>(d, "baseline_seconds", "a decision");
    run.decisions.push_back(std::move(decision));
  }
  json counts = Field<json>(object, "counts", where);  // items() does not keep it alive
  for (const auto& [pass, c] : counts.items()) {
    run.counts[pass] = CountsFromJson(c, "the counts of " + pass);
  }
  for (const json& c : Field<json>(object, "kernel_curves", where)) {
    KernelTuningCurve curve;
    curve.pass = Field<std::string>(c, "pass", "a kernel curve");
    curve.num_tasks = Field<size_t>(c, "num_tasks", "a kernel curve");
    for (const json& p : Field<json>(c, "points", "a kernel curve")) {
      if (!p.is_array() || p.size() != 4) throw ir::Error("tuning run: malformed curve point");
      curve.points.push_back(
          {p[0].get<int64_t>(), p[1].get<double>(), p[2].get<double>(), p[3].get<bool>()});
    }
    run.kernel_curves.push_back(std::move(curve));
  }
  for (const json& p : Field<json>(object, "graph_curve", where)) {
    if (!p.is_array() || p.size() != 4) throw ir::Error("tuning run: malformed graph curve point");
    run.graph_curve.push_back(
        {p[0].get<std::string>(), p[1].get<int64_t>(), p[2].get<double>(), p[3].get<double>()});
  }
  run.before_seconds = Field<std::vector<double>>(object, "before_seconds", where);
  run.after_seconds = Field<std::vector<double>>(object, "after_seconds", where);
  run.after_error = Field<std::string>(object, "after_error", where);
  run.tuning_seconds = Field<double>(object, "tuning_seconds", where);
  run.measured_at = Field<std::string>(object, "measured_at", where);
  return run;
}

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

TuningRun TuningRunFromJson(const std::string& text, const std::string& trace_json) {
  try {
    return DecodeTuningRun(text, trace_json);
  } catch (const ir::Error&) {
    throw;
  } catch (const std::exception& e) {  // the JSON library's own errors (number overflow, ...)
    throw ir::Error(fmt::format("tuning run: {}", e.what()));
  }
}

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
