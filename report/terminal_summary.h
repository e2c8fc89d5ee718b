// The end-of-run summary `tandem tune` prints: the same facts as the tuning report (RunFacts), as
// plain-text tables no wider than 100 columns: the model and budget, the latency before and after
// tuning, what each top-level tuning pass decided and what it bought (its input's latency against
// its best candidate's), each kernel search's weighted latency from default schedules to tuned
// and its heaviest kernels with their GFLOP/s against the FMA peak, the evaluations per pass, and
// the failed candidates per pass with their reasons.
#pragma once

#include <string>

#include "report/run_facts.h"

namespace tandem::report {

inline constexpr size_t kSummaryColumns = 100;

// `pipeline_label`: how the pipeline is named ("joint", or "pipeline" for explicit text).
std::string TuningSummaryText(const tuning::TuningRun& run, const RunFacts& facts,
                              const std::string& pipeline_label);

// "TuneLayout=NHWC, FoldConstant, TuneKernels: 3 tuned kernel schedule(s)" from a trace.
std::string DecisionSummary(const ir::Trace& trace);

}  // namespace tandem::report
