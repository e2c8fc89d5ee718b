// The kernel-search part of a run's section in the tuning report: per search, the weighted sum of
// its tasks' best latencies against trials (never rising: a task not measured yet counts at its
// default schedule's latency), and on demand (<details>) a table of the tasks, their default and
// best latencies and achieved GFLOP/s against the FMA peak measured with the run, and one
// best-so-far curve per task.
#pragma once

#include <string>
#include <vector>

#include "report/run_facts.h"

namespace tandem::report {

// "" when the run has no kernel search.
std::string KernelSearchSectionHtml(const tuning::TuningRun& run,
                                    const std::vector<KernelSearchFacts>& searches);

// "12.3 GFLOP/s (4.5% of the AVX2 peak)", or without the peak when it was not measured; "-"
// without FLOPs or latency.
std::string GflopsText(double gflops, const tuning::FmaPeakRecord& peak);

}  // namespace tandem::report
