// The kernel workloads section of the tuning report: the workloads with the most records as
// small multiples of their best-so-far latency against the record index (commit order), each
// measured schedule a dot naming its record.
#pragma once

#include <string>
#include <vector>

#include "report/tuning_report.h"
#include "tuning/database/database.h"

namespace tandem::report {

// Adds the targets of the kernels' records to `targets` (numbered T1, T2, ... in the page).
std::string KernelWorkloadsHtml(const tuning::Database& database,
                                const std::vector<tuning::Workload>& kernels,
                                const ReportOptions& options, std::vector<std::string>& targets);

}  // namespace tandem::report
