// TuningRun: what one tuning run of a pipeline on a model did, kept in the tuning database.
//
// `tandem tune` commits one TuningRun when it finishes: the pipeline and the model it tuned,
// the whole pipeline's trace (every pass of the pipeline as an instruction: heuristic passes as
// one-choice "apply" instructions, tuning passes with their winning decisions, nested ones
// included), so that ReplayTrace on the imported model rebuilds the tuned module without
// measuring anything; the latency before (default_heuristic) and after; how the evaluations were
// spent per pass; the tuning curves; the budget and the time taken. `tandem run --db` and a
// second `tandem tune` replay the trace; `tandem report` draws the curves and the decision tree;
// pipeline regression tests compare a new trace with a recorded one.
//
// Storage: a workload of kind "run" whose hash is TuningRunKey(model_hash, pipeline) and whose
// text is {"model":..., "model_hash":..., "pipeline":...}; each run is one record of it: the
// trace in trace_json, the tuned module's run times in run_seconds, and everything else as the
// JSON object in measured_by (TuningRunToJson without the trace). So runs travel with the
// database's export and import like any other record.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/trace.h"
#include "tuning/database/database.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tuning {

// The measured f32 FMA peak of the machine that tuned (bench/fma_peak.h), recorded with a run so
// that kernels' achieved GFLOP/s can be read against it.
struct FmaPeakRecord {
  std::string unit;   // "AVX-512", "AVX2" or "none"; "" when not measured
  int lanes = 0;      // f32 lanes per FMA
  int threads = 0;    // threads it ran on (the measurements' threads)
  double gflops = 0;  // on all those threads together

  bool measured() const { return gflops > 0; }
  bool operator==(const FmaPeakRecord& other) const = default;
};

struct TuningRun {
  std::string model;               // the model's name (its file's stem, or the name given)
  std::string model_hash;          // ir::StructuralHash of the imported model, hex
  std::string pipeline;            // the pipeline text
  std::string target;              // target descriptor of the machine that tuned
  int64_t trial_budget = 0;        // 0: no limit
  double time_budget_seconds = 0;  // 0: no limit
  uint64_t seed = 0;
  ir::Trace trace;                        // every pass of the pipeline, replayable from the model
  std::vector<TuningDecision> decisions;  // per top-level tuning pass (inputs not stored)
  std::map<std::string, EvaluationCounts> counts;  // per tuning pass text
  std::vector<KernelTuningCurve> kernel_curves;
  std::vector<GraphCurvePoint> graph_curve;
  // Every graph-level evaluation and the record that answered it, pieces and confirmations
  // marked, the measurements before and after tuning ("(before: ...)", "(after: ...)") included
  // (empty in runs recorded before it existed).
  std::vector<GraphEvaluation> graph_evaluations;
  FmaPeakRecord fma_peak;  // not measured: unit "" (fixtures, runs recorded before it existed)
  std::vector<double> before_seconds;  // default_heuristic's run times (empty: not measured)
  std::vector<double> after_seconds;   // the tuned module's run times (empty: failed)
  std::string after_error;             // why the tuned module failed, if it did
  double tuning_seconds = 0;           // wall time of the pipeline
  std::string measured_at;             // UTC, ISO 8601

  bool operator==(const TuningRun& other) const;
};

// The workload hash under which runs of `pipeline` on the model are stored.
std::string TuningRunKey(const std::string& model_hash, const std::string& pipeline);

// The tuning job (TuningSession::ContinueJob) of a run of `pipeline` on the model under the
// record key (target descriptor and measure options) with this budget and seed: reruns of the
// same job share one trial count in the database.
std::string TuningJobKey(const std::string& model_hash, const std::string& pipeline,
                         const std::string& record_key, int64_t trial_budget,
                         double time_budget_seconds, uint64_t seed);

// JSON of everything but the trace (the measured_by field of the stored record), and back.
// FromJson throws ir::Error naming the missing or malformed field (every failure, the JSON
// library's included, is an ir::Error).
std::string TuningRunToJson(const TuningRun& run);
TuningRun TuningRunFromJson(const std::string& json, const std::string& trace_json);

// A run summarized from `session` after a pipeline ran: its decisions (without their input
// modules: the model is stored once, by hash), the counts of the tuning passes (not of
// measurements labelled "(...)", which callers take outside the pipeline), the curves, the
// budgets, seed and target of the session, and the time of now. Latencies are left empty.
TuningRun SummarizeTuningRun(const TuningSession& session, const std::string& model,
                             const std::string& model_hash, const std::string& pipeline,
                             const ir::Trace& trace, double tuning_seconds);

void CommitTuningRun(Database& database, const TuningRun& run);
// Every stored run of every model and pipeline on every target, in commit order. A stored run
// that does not decode is skipped; its reason (naming the record) is appended to `skipped`
// when given.
std::vector<TuningRun> TuningRuns(const Database& database,
                                  std::vector<std::string>* skipped = nullptr);
// The latest run of `pipeline` on the model on `target` that decodes (nullopt when there is
// none); later ones that do not decode are skipped like in TuningRuns.
std::optional<TuningRun> LatestTuningRun(const Database& database, const std::string& model_hash,
                                         const std::string& pipeline, const std::string& target,
                                         std::vector<std::string>* skipped = nullptr);

}  // namespace tandem::tuning
