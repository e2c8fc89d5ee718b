// The facts of one tuning run that the report and `tandem tune` show, read from the run and the
// database records it names: every latency here is the median of one record (found by its
// workload hash, the run's record key and its candidate hash), or a sum of such medians, so each
// number can be traced back to the database.
//
// Graph level: the run's evaluation log (tuning::GraphEvaluation) tells whole modules, the
// end-to-end candidates of the model being tuned, from pieces measured alone (a convolution, a
// placement piece); best-so-far curves use whole modules only. Kernel level: each search's
// tasks and batches give per-task best-so-far curves, and the weighted sum over tasks with an
// unmeasured task counted at its default schedule's latency (so the sum never rises). Runs
// recorded before the log existed have `logged` false and only their counts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuning/database/database.h"
#include "tuning/session/tuning_run.h"

namespace tandem::report {

// The record a number comes from (under the run's record key, tuning::TuningRun::target).
struct RecordRef {
  std::string workload_hash;
  std::string candidate_hash;  // "" for a graph module's first measurement

  // "<workload>/<candidate>" (tuning::JobTrialName).
  std::string Text() const;
  bool operator==(const RecordRef& other) const = default;
};

// A plotted point: `seconds` is the median of `record`.
struct PlotPoint {
  double x = 0;  // graph level: the run's graph-level evaluations so far; kernels: trials
  double elapsed_seconds = 0;  // since the tuning session began (graph level only)
  double seconds = 0;
  RecordRef record;
};

// One line of a chart: a pass's points.
struct PassPoints {
  std::string pass;
  std::vector<PlotPoint> points;
};

struct GraphFacts {
  bool logged = false;  // the run has an evaluation log (false: recorded by an older Tandem)
  // Per tuning pass: its best whole-module latency so far, a point each time it improved and one
  // at the pass's last whole-module evaluation.
  std::vector<PassPoints> end_to_end;
  // Per tuning pass: every measurement of a piece of the model (not best-so-far).
  std::vector<PassPoints> pieces;
  // Re-measurements of finalists together (ConfirmModules), per pass: their record's median.
  std::vector<PassPoints> confirmations;
  std::optional<PlotPoint> before;  // the "(before: ...)" measurement, when logged
  std::optional<PlotPoint> after;   // the "(after: ...)" measurement, when logged
  int64_t whole_modules = 0;        // distinct whole modules evaluated by tuning passes
  int64_t piece_modules = 0;        // distinct pieces evaluated by tuning passes
};

// Candidates of one pass that failed, grouped by reason (their records' error).
struct PassFailures {
  std::string pass;
  int64_t failed = 0;       // distinct failed records (or the run's count when not logged)
  int64_t over_budget = 0;  // requests refused for the budget (not measured, not failures)
  std::map<std::string, std::vector<RecordRef>> by_reason;  // empty when not logged
};

struct KernelTaskFacts {
  tuning::KernelSearchTask task;
  std::optional<PlotPoint> default_schedule;  // its default schedule's record, when measured
  std::vector<PlotPoint> best;          // best so far after each of its batches (x: search trials)
  std::optional<PlotPoint> best_point;  // the best record of this search (x: when found)
  int64_t measured = 0;                 // candidates with a record
  int64_t failed = 0;

  // FLOP/s of the best schedule (0 when none).
  double BestGflops() const;
};

struct KernelSearchFacts {
  std::string pass;
  bool logged = false;  // the run recorded tasks and batches
  std::vector<KernelTaskFacts> tasks;
  // sum_i w_i * min(default_i, best_i so far), at 0 trials and after every batch; tasks whose
  // default schedule has no successful record are left out (`left_out` says how many). Each
  // point's record is the measurement that last lowered the sum (the first default at 0).
  std::vector<PlotPoint> weighted;
  size_t left_out = 0;
  // Runs without tasks and batches: the recorded sums after every task had a measurement (from
  // there on the sum can only fall).
  std::vector<std::pair<int64_t, double>> recorded_complete;
};

struct RunFacts {
  GraphFacts graph;
  std::vector<PassFailures> failures;  // every pass with a failure or a refusal, in pass order
  std::vector<KernelSearchFacts> kernel_searches;
};

// Reads the facts of `run` from `database` (records it names but the database lacks are left
// out, as if never evaluated).
RunFacts CollectRunFacts(const tuning::TuningRun& run, const tuning::Database& database);

// The median of a record's run times, or nullopt when the database has no such record or it
// failed.
std::optional<double> RecordSeconds(const tuning::Database& database, const std::string& target,
                                    const RecordRef& ref);

}  // namespace tandem::report
