// The tuning report: one self-contained HTML page (inline CSS and SVG, no scripts, no external
// resources) that shows what a tuning database holds, for `tandem report`.
//
// Layout: a table of the tuning runs (model, pipeline, measurements and budget, tuning time,
// latency before and after, speedup) with the target descriptors they ran on; then per run its
// tuning curves (graph-level best latency against measurements and time, kernel searches'
// weighted latency against trials), its decision tree (DecisionTreeHtml) and its evaluation
// counts per pass; then the kernel workloads with the most records as small multiples of their
// best-so-far latency against the record index.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "tuning/database/database.h"

namespace tandem::report {

struct ReportOptions {
  std::string source;  // where the database came from (shown in the header)
  std::string model;   // only runs of this model, and the kernels they scheduled ("": all)
  size_t max_kernel_charts = 12;
  // Names of known pipelines by their text, to label runs ("default_tuning" rather than text).
  std::map<std::string, std::string> pipeline_names;
};

// The page. An empty database gives a page that says so. Throws ir::Error when `model` names no
// stored run (the message lists the models that have runs) or a stored run is malformed.
std::string TuningReportHtml(const tuning::Database& database, const ReportOptions& options);

}  // namespace tandem::report
