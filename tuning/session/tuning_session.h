// TuningSession: the machinery every tuning pass of one pipeline run shares.
//
// One session per pipeline run, held by the PassContext: the target, the database, the builder,
// the runner, how to measure, the trial budget, the one seeded random state every random
// decision is drawn from, the counts of evaluations requested and measurements performed per
// pass, and the log of decisions the tuning passes took. Graph-level candidates are evaluated
// here: a candidate module already measured on this target (same structural hash, same target
// descriptor) is answered from the database; the others are built in parallel, measured by the
// runner against the reference outputs of the function, and committed to the database, failed
// ones with their reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/target.h"
#include "ir/tensor.h"
#include "ir/trace.h"
#include "kernels/schedule/schedule.h"
#include "tuning/database/database.h"
#include "tuning/measure/builder.h"
#include "tuning/measure/measure.h"
#include "tuning/measure/runner.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/search/cost_model.h"
#include "tuning/search/task.h"
#include "tuning/session/tuning_curves.h"

namespace tandem::tuning {

// Per tuning pass (by name): evaluations asked for, answered from the database, really measured,
// failed (of those measured), and refused because the trial budget was spent.
struct EvaluationCounts {
  int64_t requested = 0;
  int64_t reused = 0;
  int64_t measured = 0;
  int64_t failed = 0;
  int64_t over_budget = 0;
  double build_seconds = 0;
  double run_seconds = 0;
  int64_t confirmed = 0;  // re-measurements of finalists (ConfirmModules): not charged

  EvaluationCounts& operator+=(const EvaluationCounts& other);
};

// Reported after each evaluated batch (for progress bars).
struct ProgressEvent {
  std::string pass;
  int64_t done = 0;         // candidates of this batch done
  int64_t total = 0;        // candidates in this batch
  double best_seconds = 0;  // best latency the pass has seen so far (0: none yet)
};

// One graph-level candidate to evaluate: the optimized module and the decisions behind it.
struct EvaluationRequest {
  ir::IRModule module;
  ir::Trace trace;
};

// The workload text a graph candidate is stored under: the module with large constants elided.
std::string GraphWorkloadText(const ir::IRModule& module);

// One scheduled program of a kernel tuning task, and the trace that made it. `hash`
// (CandidateHash of `scheduled`) and `features` (ExtractFeatures of `scheduled`) are filled by
// the search that proposes it, so that evaluation and cost-model training do not recompute
// them; an empty hash is computed when needed.
struct KernelCandidate {
  ir::KernelFunction scheduled;
  ir::Trace trace;
  std::string hash;
  std::vector<float> features;
};

// A decision a top-level tuning pass took: its trace from the pass's input, and the result.
struct TuningDecision {
  std::string pass;             // the pass's pipeline text
  ir::IRModule input;           // the module the pass started from
  ir::Trace trace;              // the winning candidate's decisions
  MeasureResult result;         // the winning candidate's measurement
  double baseline_seconds = 0;  // the input measured the same way (0 when not measured)
};

// A module attribute that, when set, joins the function signature in choosing the reference a
// graph candidate is checked against: candidates of the same signature but different meaning
// (two pieces of a model cut out for separate measurement) keep separate references.
inline constexpr const char* kReferenceKeyAttr = "tuning.reference_key";

class TuningSession {
 public:
  struct Options {
    MeasureOptions measure;
    // Largest number of real measurements in the whole run (0: no limit). Requests beyond it
    // fail with reason "trial budget spent" and are not recorded in the database.
    int64_t max_measurements = 0;
    // Wall-clock seconds the run may spend measuring (0: no limit): once past, requests fail
    // with reason "time budget spent" like requests over the trial budget.
    double max_seconds = 0;
    // The target descriptor records are stored and looked up under; empty: this machine's
    // (TargetDescriptor(target)). Set to replay a recorded database from another machine.
    std::string target_descriptor;
    // Replaying a recorded database (a pipeline fixture): the first answer from the database for
    // each candidate is charged to the budget like the measurement it stands for, so the run
    // spends its budget exactly as the recorded run did and takes the same decisions.
    bool charge_first_answers = false;
    uint64_t seed = 0;
    std::string function = "main";  // the graph function that is measured
    // How warnings name the database (its file); empty: "the tuning database".
    std::string database_name;
    // Confirming a decision (ConfirmModules): the finalists are re-measured together in this
    // many interleaved rounds (0 or 1: decisions are taken on the first measurements alone).
    int confirm_rounds = 3;
    // Each timed repeat of a confirmation loops the module for at least this long (the measure
    // options' min_repeat_seconds when that is longer): a confirmation decides, and on a shared
    // host the shortest windows are the noisiest (a module of a few milliseconds, one run per
    // repeat, can read several percent apart from an equally fast one within one round).
    double confirm_min_repeat_seconds = 0.02;
    // Finalists are the distinct candidates within this fraction of the best one's latency
    // (first measurements of one module taken minutes apart differ by 20-30% on a shared
    // machine) ...
    double confirm_margin = 0.25;
    // ... at most this many, fastest first.
    int max_finalists = 4;
    // A confirmed change must be faster than what it replaces by at least this fraction; below
    // it the difference is within what the interleaved measurement resolves on a shared machine
    // and the module is left as it was (the first choice of a tuning pass, which passes list
    // first, or a kernel's default schedules). Gains of a few percent confirmed on a 2-core
    // shared host do not reliably survive a later benchmark, hence 5%.
    double minimum_gain = 0.05;
  };

  TuningSession(ir::Target target, std::shared_ptr<Database> database,
                std::shared_ptr<Builder> builder, std::shared_ptr<Runner> runner, Options options);
  // An in-memory database, a LocalBuilder and a ProcessRunner.
  static std::shared_ptr<TuningSession> MakeDefault(const ir::Target& target, uint64_t seed);

  // Evaluates graph-level candidates for `pass` (see the file comment). One result per request,
  // in order; failures are values.
  // `charge_budget` false measures even when the trial budget is spent (for reporting the
  // latency before and after tuning).
  std::vector<MeasureResult> EvaluateModules(const std::vector<EvaluationRequest>& requests,
                                             const std::string& pass, bool charge_budget = true);
  // Re-measures the finalists of one decision together, so that the machine's slow and fast
  // spells, which made their first measurements (taken minutes apart) incomparable, hit them
  // alike: each is built once and the runner measures them in options().confirm_rounds
  // interleaved rounds (A B C A B C ...); a result pools every round's runs. Confirmations are
  // committed as records of each module's workload keyed by the group (so a run that reuses the
  // database, or replays a fixture, answers the same group from it and decides the same), are
  // counted as `confirmed`, and are not charged to the trial budget. Past the time budget, or
  // with fewer than two distinct modules, nothing is measured and the results are empty.
  std::vector<MeasureResult> ConfirmModules(const std::vector<EvaluationRequest>& requests,
                                            const std::string& pass);
  // Whether `challenger` is faster than `incumbent` by at least `minimum_gain` (a fraction) in one
  // confirmation of `rounds` interleaved rounds (two results of one ConfirmModules call): both in
  // their quietest rounds (median_seconds) and in the median over the rounds of the ratio of
  // their two medians in that round. The second reading pairs each round of one with the same
  // round of the other, so a gain has to show in most rounds: a lucky round of the challenger
  // (the machine's fast spell starting between the two) is not enough. A failed challenger never
  // wins; a failed incumbent always loses. Results whose runs do not split into `rounds` equal
  // rounds are read by median_seconds alone.
  static bool ConfirmedGain(const MeasureResult& challenger, const MeasureResult& incumbent,
                            int rounds, double minimum_gain);
  // Measurements the budget still allows: the trial budget less what was measured, the innermost
  // budget share's limit, and 0 once the time budget is spent (a large number when unlimited).
  int64_t RemainingBudget() const;
  // Limits the measurements of what runs until the matching PopBudgetShare to `trials` (or
  // less, when the enclosing budget has less left): a tuning pass splits its budget among the
  // candidates it expands with nested tuning passes, so that the first does not spend it all.
  void PushBudgetShare(int64_t trials);
  void PopBudgetShare();
  // Seconds since the session was made.
  double ElapsedSeconds() const;
  // Makes this run continue the tuning job `job` (TuningJobKey), before anything is measured, so
  // that a run killed and started again spends only what is left of the job's budget: each
  // charged measurement is a trial of the job, committed with its record in one transaction;
  // the first answer from the database for a trial of the job's earlier runs is charged like
  // the measurement it stands for (the seeded searches, sized by RemainingBudget, take the
  // same course as an uninterrupted run); and new measurements never exceed the budget less
  // the earlier runs' trials. `restart` forgets those trials first (`--retune`). Returns how
  // many trials earlier runs spent.
  int64_t ContinueJob(const std::string& job, bool restart = false);
  // Trials of the job spent by earlier runs (0 without a job).
  int64_t resumed_trials() const { return resumed_trials_; }

  // Evaluates scheduled programs of one kernel task: each is built alone (SingleKernelModule),
  // measured, and checked against the task's default-scheduled kernel on the same random
  // inputs. A program already measured for this workload and target (same scheduled kernel)
  // is answered from the database. Every new result is committed with its trace.
  std::vector<MeasureResult> EvaluateKernels(const TuningTask& task,
                                             const std::vector<KernelCandidate>& candidates,
                                             const std::string& pass);
  // Whether the workload has a successfully measured schedule in the database.
  bool HasMeasuredSchedule(const std::string& workload_hash) const;
  // The hash that identifies a scheduled program within its workload.
  static std::string CandidateHash(const ir::KernelFunction& scheduled);

  // Fixes the module whose outputs every candidate with the same function signature is checked
  // against (the reference interpreter's outputs on fixed random inputs). Called by a top-level
  // tuning pass on its input so that every candidate is checked against the semantics of the
  // module tuning started from. The interpreter runs when the first such candidate is measured,
  // not here: a pass that measures no graph-level candidate (TuneKernels checks kernels alone)
  // never pays for it. The first module registered for a signature wins.
  void EnsureReference(const ir::IRModule& module);

  const std::map<std::string, EvaluationCounts>& counts() const { return counts_; }
  EvaluationCounts TotalCounts() const;
  bool BudgetSpent() const;
  // "time budget spent" or "trial budget spent": the reason a request over budget fails with.
  std::string BudgetSpentReason() const;
  // Whether `result` is such a refusal (nothing was measured), not a failed measurement.
  static bool IsOverBudget(const MeasureResult& result);

  void RecordDecision(TuningDecision decision) { decisions_.push_back(std::move(decision)); }
  const std::vector<TuningDecision>& decisions() const { return decisions_; }
  void RecordKernelCurve(KernelTuningCurve curve) { kernel_curves_.push_back(std::move(curve)); }
  // Every kernel search of this run, in the order they finished.
  const std::vector<KernelTuningCurve>& kernel_curves() const { return kernel_curves_; }
  // A point after every evaluated batch of graph candidates.
  const std::vector<GraphCurvePoint>& graph_curve() const { return graph_curve_; }
  // Every graph-level evaluation a record answered, in order (GraphEvaluation).
  const std::vector<GraphEvaluation>& graph_evaluations() const { return graph_evaluations_; }

  kernels::RandomState& random() { return random_; }
  Database& database() { return *database_; }
  const std::shared_ptr<Database>& shared_database() const { return database_; }
  Builder& builder() { return *builder_; }
  Runner& runner() { return *runner_; }
  const ir::Target& target() const { return target_; }
  const std::string& target_descriptor() const { return target_descriptor_; }
  const Options& options() const { return options_; }
  backends::BuildOptions build_options() const;

  // The kernel cost model every kernel tuning pass of this run shares ("xgboost" or "random"),
  // restored from the database's blob CostModelBlobName(kind) when present (one model per
  // target: "cost_model.<kind>.<hash of the target descriptor>"). A saved model that does not
  // load, or cannot score this version's features, is a warning (naming the database, the blob
  // and the reason) and the run goes on with a fresh model. SaveCostModel writes it back.
  CostModel& KernelCostModel(const std::string& kind);
  void SaveCostModels();
  std::string CostModelBlobName(const std::string& kind) const;

  std::function<void(const ProgressEvent&)> on_progress;
  // What apply-history-best did in this run: the Legalize pass gives these stats to its
  // HistoryBestProvider, and `tandem run` and `tandem tune` report the kernels whose stored
  // schedules no longer replay (NotReplayedNote).
  const std::shared_ptr<HistoryBestStats>& history_best_stats() const {
    return history_best_stats_;
  }

  // Receives each warning of the session (one line, without a "warning: " prefix); when unset,
  // warnings go to stderr as "warning: <text>".
  std::function<void(const std::string&)> on_warning;
  // Every warning of the session so far, in order.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Records `message` in warnings() and hands it to on_warning (stderr when unset).
  void Warn(const std::string& message);

 private:
  struct Reference {
    std::vector<ir::Tensor> inputs;
    std::vector<ir::Tensor> expected;
  };
  const Reference& ReferenceFor(const ir::IRModule& module);
  const Reference& KernelReferenceFor(const TuningTask& task);
  // Builds `modules` in parallel and measures the ones that built against the reference
  // `reference_for(k)` returns for module k (asked only for modules that built), in `rounds`
  // interleaved rounds whose runs are pooled, with `measure` (the session's options when null).
  // One result per module; build time goes into `counts`.
  std::vector<MeasureResult> BuildAndRun(
      const std::vector<ir::IRModule>& modules, const backends::BuildOptions& build,
      const std::function<const Reference&(size_t)>& reference_for, EvaluationCounts& counts,
      int rounds = 1, const MeasureOptions* measure = nullptr);
  // Counts a measurement in `counts` (as `confirmed` for a confirmation, which is not charged)
  // and commits `record` with its result.
  // `charged`: the measurement is charged to the trial budget (and so to the job).
  void CommitMeasurement(TuningRecord record, const MeasureResult& result, EvaluationCounts& counts,
                         bool confirmation = false, bool charged = true);

  ir::Target target_;
  std::string target_descriptor_;
  std::shared_ptr<Database> database_;
  std::shared_ptr<Builder> builder_;
  std::shared_ptr<Runner> runner_;
  Options options_;
  kernels::RandomState random_;
  std::map<std::string, EvaluationCounts> counts_;
  std::map<std::string, double> best_seconds_;             // per pass
  std::map<std::string, Reference> references_;            // by function signature
  std::map<std::string, ir::IRModule> reference_modules_;  // by signature, not yet computed
  std::map<std::string, Reference> kernel_references_;     // by workload hash
  std::vector<TuningDecision> decisions_;
  std::vector<KernelTuningCurve> kernel_curves_;
  std::vector<GraphCurvePoint> graph_curve_;
  std::vector<GraphEvaluation> graph_evaluations_;
  struct BudgetShare {
    int64_t measured_at_start = 0;  // charged measurements when pushed
    int64_t trials = 0;
  };
  std::vector<BudgetShare> budget_shares_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::map<std::string, std::unique_ptr<CostModel>> cost_models_;
  std::vector<std::string> warnings_;
  std::shared_ptr<HistoryBestStats> history_best_stats_ = std::make_shared<HistoryBestStats>();
  int64_t uncharged_measurements_ = 0;  // measured with charge_budget false
  std::string job_;                     // ContinueJob's job ("": none)
  std::set<std::string> job_trials_;    // the job's trials spent by earlier runs
  int64_t resumed_trials_ = 0;          // the job's trials spent by earlier runs
  // charge_first_answers: the candidates answered from the database so far, and how many of
  // those answers were charged.
  std::set<std::string> answered_;
  int64_t charged_answers_ = 0;
  int64_t ChargedMeasurements() const;
  // Appends to graph_evaluations_ the evaluation of `module` that the record (workload_hash,
  // candidate_hash) answers.
  void LogGraphEvaluation(const std::string& pass, const ir::IRModule& module,
                          const std::string& workload_hash, const std::string& candidate_hash,
                          bool reused);
  // New measurements allowed now: RemainingBudget, and for a job no more than its budget less
  // the trials its earlier runs spent and this run measured.
  int64_t MeasurementsLeft() const;
  // Counts an answer from the database for `key` (workload and candidate). False when,
  // replaying a fixture, this first answer stands for a measurement the budget no longer allows
  // (counted over budget, as the recorded run counted it).
  bool AcceptAnswer(const std::string& key, EvaluationCounts& counts);
};

// Holds a budget share (TuningSession::PushBudgetShare) for its lifetime, released also when an
// exception passes; holds none when `active` is false.
class BudgetShareScope {
 public:
  BudgetShareScope(TuningSession& session, int64_t trials, bool active = true)
      : session_(session), active_(active) {
    if (active_) session_.PushBudgetShare(trials);
  }
  ~BudgetShareScope() {
    if (active_) session_.PopBudgetShare();
  }
  BudgetShareScope(const BudgetShareScope&) = delete;
  BudgetShareScope& operator=(const BudgetShareScope&) = delete;

 private:
  TuningSession& session_;
  bool active_;
};

}  // namespace tandem::tuning
