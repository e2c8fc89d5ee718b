// How a run spent its evaluations, for the tuning report: the counts per tuning pass (requested,
// answered from the database, measured, failed, refused for the budget, confirmed), and the
// failed candidates per pass with their reasons, folded (<details>) with the records of each.
#pragma once

#include <string>
#include <vector>

#include "report/run_facts.h"

namespace tandem::report {

std::string EvaluationCountsHtml(const tuning::TuningRun& run);

// "" when nothing failed and nothing was refused.
std::string FailuresHtml(const std::vector<PassFailures>& failures);

// A failure reason on one line, cut to `max_length` characters.
std::string ShortReason(const std::string& reason, size_t max_length);

}  // namespace tandem::report
