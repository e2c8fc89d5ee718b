// TuningRunToJson and TuningRunFromJson: a tuning run's summary as the JSON object stored in its
// record's measured_by field. Fields added after the first runs were stored (confirmed counts,
// graph evaluations, kernel search tasks and batches, the FMA peak) are optional when read, so
// databases written before them still open and their runs still decode.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "tuning/session/tuning_run.h"

namespace tandem::tuning {

using nlohmann::json;

namespace {

json CountsToJson(const EvaluationCounts& c) {
  return json{{"requested", c.requested},         {"reused", c.reused},
              {"measured", c.measured},           {"failed", c.failed},
              {"over_budget", c.over_budget},     {"confirmed", c.confirmed},
              {"build_seconds", c.build_seconds}, {"run_seconds", c.run_seconds}};
}

template <typename T>
T Field(const json& object, const char* name, const std::string& where) {
  if (!object.is_object()) throw ir::Error(fmt::format("tuning run: {} is not an object", where));
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

// A field that runs recorded by an older Tandem lack: `fallback` when absent.
template <typename T>
T OptionalField(const json& object, const char* name, const std::string& where, T fallback) {
  return object.is_object() && object.contains(name) ? Field<T>(object, name, where) : fallback;
}

EvaluationCounts CountsFromJson(const json& object, const std::string& where) {
  EvaluationCounts c;
  c.requested = Field<int64_t>(object, "requested", where);
  c.reused = Field<int64_t>(object, "reused", where);
  c.measured = Field<int64_t>(object, "measured", where);
  c.failed = Field<int64_t>(object, "failed", where);
  c.over_budget = Field<int64_t>(object, "over_budget", where);
  c.confirmed = OptionalField<int64_t>(object, "confirmed", where, 0);
  c.build_seconds = Field<double>(object, "build_seconds", where);
  c.run_seconds = Field<double>(object, "run_seconds", where);
  return c;
}

json ResultToJson(const MeasureResult& r) {
  return json{{"run_seconds", r.run_seconds}, {"error", r.error}};
}

MeasureResult ResultFromJson(const json& object, const std::string& where) {
  std::string error = Field<std::string>(object, "error", where);
  if (!error.empty()) return MeasureResult::Failure(error);
  return MeasureResult::FromRunSeconds(Field<std::vector<double>>(object, "run_seconds", where), 0);
}

json GraphEvaluationToJson(const GraphEvaluation& e) {
  return json{{"pass", e.pass},
              {"workload", e.workload_hash},
              {"candidate", e.candidate_hash},
              {"piece", e.piece},
              {"reused", e.reused},
              {"measured", e.measured},
              {"elapsed_seconds", e.elapsed_seconds}};
}

GraphEvaluation GraphEvaluationFromJson(const json& object) {
  const std::string where = "a graph evaluation";
  return {
      Field<std::string>(object, "pass", where),      Field<std::string>(object, "workload", where),
      Field<std::string>(object, "candidate", where), Field<bool>(object, "piece", where),
      Field<bool>(object, "reused", where),           Field<int64_t>(object, "measured", where),
      Field<double>(object, "elapsed_seconds", where)};
}

json KernelCurveToJson(const KernelTuningCurve& curve) {
  json points = json::array();
  for (const CurvePoint& p : curve.points) {
    points.push_back({p.trials, p.weighted_seconds, p.elapsed_seconds, p.all_tasks_measured});
  }
  json tasks = json::array();
  for (const KernelSearchTask& t : curve.tasks) {
    tasks.push_back({{"workload", t.workload_hash},
                     {"name", t.name},
                     {"weight", t.weight},
                     {"flops", t.flops},
                     {"default", t.default_candidate}});
  }
  json batches = json::array();
  for (const KernelSearchBatch& b : curve.batches) {
    batches.push_back({{"task", b.task}, {"trials", b.trials}, {"candidates", b.candidates}});
  }
  return {{"pass", curve.pass},
          {"num_tasks", curve.num_tasks},
          {"points", points},
          {"tasks", tasks},
          {"batches", batches}};
}

KernelTuningCurve KernelCurveFromJson(const json& c) {
  const std::string where = "a kernel curve";
  KernelTuningCurve curve;
  curve.pass = Field<std::string>(c, "pass", where);
  curve.num_tasks = Field<size_t>(c, "num_tasks", where);
  for (const json& p : Field<json>(c, "points", where)) {
    if (!p.is_array() || p.size() != 4) throw ir::Error("tuning run: malformed curve point");
    curve.points.push_back(
        {p[0].get<int64_t>(), p[1].get<double>(), p[2].get<double>(), p[3].get<bool>()});
  }
  for (const json& t : OptionalField<json>(c, "tasks", where, json::array())) {
    curve.tasks.push_back({Field<std::string>(t, "workload", "a kernel search task"),
                           Field<std::string>(t, "name", "a kernel search task"),
                           Field<int64_t>(t, "weight", "a kernel search task"),
                           Field<double>(t, "flops", "a kernel search task"),
                           Field<std::string>(t, "default", "a kernel search task")});
  }
  for (const json& b : OptionalField<json>(c, "batches", where, json::array())) {
    KernelSearchBatch batch{
        Field<size_t>(b, "task", "a kernel search batch"),
        Field<int64_t>(b, "trials", "a kernel search batch"),
        Field<std::vector<std::string>>(b, "candidates", "a kernel search batch")};
    if (batch.task >= curve.tasks.size()) {
      throw ir::Error(fmt::format("tuning run: a kernel search batch names task {} of {}",
                                  batch.task, curve.tasks.size()));
    }
    curve.batches.push_back(std::move(batch));
  }
  return curve;
}

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
    run.kernel_curves.push_back(KernelCurveFromJson(c));
  }
  for (const json& p : Field<json>(object, "graph_curve", where)) {
    if (!p.is_array() || p.size() != 4) throw ir::Error("tuning run: malformed graph curve point");
    run.graph_curve.push_back(
        {p[0].get<std::string>(), p[1].get<int64_t>(), p[2].get<double>(), p[3].get<double>()});
  }
  for (const json& e : OptionalField<json>(object, "graph_evaluations", where, json::array())) {
    run.graph_evaluations.push_back(GraphEvaluationFromJson(e));
  }
  if (object.contains("fma_peak")) {
    const json& peak = object["fma_peak"];
    run.fma_peak = {
        Field<std::string>(peak, "unit", "the FMA peak"), Field<int>(peak, "lanes", "the FMA peak"),
        Field<int>(peak, "threads", "the FMA peak"), Field<double>(peak, "gflops", "the FMA peak")};
  }
  run.before_seconds = Field<std::vector<double>>(object, "before_seconds", where);
  run.after_seconds = Field<std::vector<double>>(object, "after_seconds", where);
  run.after_error = Field<std::string>(object, "after_error", where);
  run.tuning_seconds = Field<double>(object, "tuning_seconds", where);
  run.measured_at = Field<std::string>(object, "measured_at", where);
  return run;
}

}  // namespace

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
    kernel_curves.push_back(KernelCurveToJson(curve));
  }
  json graph_curve = json::array();
  for (const GraphCurvePoint& p : run.graph_curve) {
    graph_curve.push_back({p.pass, p.measured, p.best_seconds, p.elapsed_seconds});
  }
  json graph_evaluations = json::array();
  for (const GraphEvaluation& e : run.graph_evaluations) {
    graph_evaluations.push_back(GraphEvaluationToJson(e));
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
                 {"graph_evaluations", graph_evaluations},
                 {"before_seconds", run.before_seconds},
                 {"after_seconds", run.after_seconds},
                 {"after_error", run.after_error},
                 {"tuning_seconds", run.tuning_seconds},
                 {"measured_at", run.measured_at}};
  if (run.fma_peak.measured()) {
    object["fma_peak"] = {{"unit", run.fma_peak.unit},
                          {"lanes", run.fma_peak.lanes},
                          {"threads", run.fma_peak.threads},
                          {"gflops", run.fma_peak.gflops}};
  }
  return object.dump();
}

TuningRun TuningRunFromJson(const std::string& text, const std::string& trace_json) {
  try {
    return DecodeTuningRun(text, trace_json);
  } catch (const ir::Error&) {
    throw;
  } catch (const std::exception& e) {  // the JSON library's own errors (number overflow, ...)
    throw ir::Error(fmt::format("tuning run: {}", e.what()));
  }
}

}  // namespace tandem::tuning
