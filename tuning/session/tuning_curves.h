// What a tuning session keeps of its course, for tuning runs, the report and `tandem tune`'s
// summary: the curves of graph-level tuning and of kernel searches, and the log of which
// database record answered each evaluation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::tuning {

// A point of a kernel tuning curve, taken after every measured batch: the trials so far, the
// weighted latency sum_i w_i * best_i over the tasks (w_i: calls per run of the model, best_i:
// the task's best measured latency so far) and the seconds since the run began.
// `all_tasks_measured` is false while some task has no successful measurement yet (its term is
// missing from the sum).
struct CurvePoint {
  int64_t trials = 0;
  double weighted_seconds = 0;
  double elapsed_seconds = 0;
  bool all_tasks_measured = false;
};

// A point of a graph-level tuning curve, taken after every evaluated batch of graph candidates:
// the pass, the real measurements of the whole run so far, the pass's best latency so far (0:
// none yet) and the seconds since the session began.
struct GraphCurvePoint {
  std::string pass;
  int64_t measured = 0;
  double best_seconds = 0;
  double elapsed_seconds = 0;

  bool operator==(const GraphCurvePoint& other) const = default;
};

// One graph-level evaluation of a run that a database record answers (a measurement of this run
// or an answer from an earlier one), in the order they happened: what the report plots, each
// point traceable to its record (workload_hash, the run's record key, candidate_hash). Requests
// refused for the budget and duplicates within one batch are not listed.
struct GraphEvaluation {
  std::string pass;            // the tuning pass's text, or a label like "(before: ...)"
  std::string workload_hash;   // the structural hash of the evaluated module
  std::string candidate_hash;  // "" for a first measurement; the group key of a confirmation
  // A part of the model measured alone (a convolution, a placement piece: the module carries
  // kReferenceKeyAttr), not the whole module being tuned.
  bool piece = false;
  bool reused = false;   // answered from the database instead of measured
  int64_t measured = 0;  // real measurements of the run so far, this one included
  double elapsed_seconds = 0;

  bool confirmation() const { return !candidate_hash.empty(); }
  bool operator==(const GraphEvaluation& other) const = default;
};

// A task of a kernel search as the report needs it.
struct KernelSearchTask {
  std::string workload_hash;
  std::string name;
  int64_t weight = 1;
  double flops = 0;  // per call (EstimateFlops)
  // The candidate hash of the task's default schedule (offered in its first batch; "" when it
  // has none).
  std::string default_candidate;

  bool operator==(const KernelSearchTask& other) const = default;
};

// One batch of a kernel search: the task, the search's trials after it, and the candidates a
// record answers (measured now or before; those refused for the budget left out).
struct KernelSearchBatch {
  size_t task = 0;
  int64_t trials = 0;
  std::vector<std::string> candidates;

  bool operator==(const KernelSearchBatch& other) const = default;
};

// The tuning curve of one kernel search (one TuneKernels run over one module's tasks).
// `tasks` and `batches` (empty in runs recorded before they existed) say which record answered
// each trial, so that per-task curves can be drawn from the database.
struct KernelTuningCurve {
  std::string pass;  // the pass's pipeline text
  size_t num_tasks = 0;
  std::vector<CurvePoint> points;
  std::vector<KernelSearchTask> tasks;
  std::vector<KernelSearchBatch> batches;
};

}  // namespace tandem::tuning
