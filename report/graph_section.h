// The graph-level part of a run's section in the tuning report: best whole-module latency
// against measurements and time (end-to-end candidates of the model only, confirmations marked),
// and the measurements of pieces of the model in a chart of their own.
#pragma once

#include <string>

#include "report/run_facts.h"

namespace tandem::report {

// The charts and their captions (a note instead when the run has no graph-level evaluation, or
// was recorded before Tandem logged which evaluations were whole modules).
std::string GraphSectionHtml(const tuning::TuningRun& run, const GraphFacts& facts);

}  // namespace tandem::report
