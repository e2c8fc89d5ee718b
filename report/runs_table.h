// The table of tuning runs at the top of the tuning report: per run its model (name and hash),
// pipeline, target, measurements against the budget, tuning time, latency before and after with
// the records they come from, and the speedup; then the target descriptors.
#pragma once

#include <string>
#include <vector>

#include "report/run_facts.h"
#include "report/tuning_report.h"

namespace tandem::report {

// How a run's pipeline is labelled: its registered name, or its tuning passes with the nested
// ones in parentheses ("TuneLayout(TuneKernels)").
std::string PipelineLabel(const tuning::TuningRun& run, const ReportOptions& options);

// `facts[k]` are the facts of `runs[k]`; `targets` numbers the target descriptors (T1, T2, ...).
std::string RunsTableHtml(const std::vector<tuning::TuningRun>& runs,
                          const std::vector<RunFacts>& facts, const ReportOptions& options,
                          const std::vector<std::string>& targets);

// The list of target descriptors, numbered as in the table.
std::string TargetListHtml(const std::vector<std::string>& targets);

}  // namespace tandem::report
