#include "report/tuning_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "ir/error.h"
#include "report/decision_tree_html.h"
#include "report/evaluations_section.h"
#include "report/graph_section.h"
#include "report/html_text.h"
#include "report/kernel_search_section.h"
#include "report/kernel_workloads_section.h"
#include "report/run_facts.h"
#include "report/runs_table.h"
#include "tuning/session/tuning_run.h"

namespace tandem::report {

using tuning::Database;
using tuning::TuningRun;
using tuning::Workload;

namespace {

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 24px; color: #222; max-width: 1400px; }
h1 { margin-bottom: 4px; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }
.meta, .muted { color: #777; } .muted { font-size: 90%; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: bold; }
.speedup { font-weight: bold; color: #1a7f37; } .slowdown { font-weight: bold; color: #b42318; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; } figcaption { font-size: 85%; color: #555; max-width: 320px; }
.chart text { fill: #333; font-family: inherit; }
ul.tree, ul.tree ul { list-style: none; padding-left: 18px; border-left: 1px dotted #bbb; }
ul.tree { padding-left: 4px; border-left: none; } ul.tree li { margin: 3px 0; }
.pass { font-weight: 600; } .result { color: #1a7f37; } .kernel { color: #555; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 90%; }
pre { background: #f7f7f7; padding: 6px; overflow-x: auto; max-height: 400px; }
summary { cursor: pointer; } ul.targets code { overflow-wrap: anywhere; } details.pipeline code { white-space: pre-wrap; }
.empty { font-size: 120%; color: #555; }
code.hash { color: #666; font-size: 80%; } details.tasks, ul.failures { margin: 8px 0; }
ul.failures pre { max-height: 120px; margin: 0; white-space: pre-wrap; }
)";

// The kernel workloads a run's kernel searches scheduled (their decisions' keys).
void ScheduledKernels(const TuningRun& run, std::set<std::string>& hashes) {
  for (const ir::Instruction& instruction : run.trace.instructions()) {
    if (!instruction.decision) continue;
    const auto* text = std::get_if<std::string>(&*instruction.decision);
    if (!text || text->empty() || text->front() != '{') continue;
    nlohmann::json map = nlohmann::json::parse(*text, nullptr, false);
    if (!map.is_object()) continue;
    for (const auto& item : map.items()) hashes.insert(item.key());
  }
}

std::string RunCurves(const TuningRun& run, const RunFacts& facts) {
  std::string graph = GraphSectionHtml(run, facts.graph);
  std::string kernels = KernelSearchSectionHtml(run, facts.kernel_searches);
  if (graph.empty() && kernels.empty()) {
    return "<p class=\"muted\">No tuning curve was recorded for this run.</p>";
  }
  return "<div class=\"charts\">" + graph + "</div>" + kernels;
}

std::string RunSection(const TuningRun& run, const RunFacts& facts, size_t index,
                       const Database& database, const ReportOptions& options) {
  std::string failures = FailuresHtml(facts.failures);
  return fmt::format(
      "<section class=\"run\" id=\"run-{0}\"><h2>Run {0}: {1} <code class=\"hash\">{2}</code> "
      "&middot; {3}</h2><p class=\"meta\">seed {4} &middot; time budget {5} &middot; {6}</p>"
      "<h3>Tuning curves</h3>{7}<h3>Decisions</h3>{8}<h3>Evaluations per pass</h3>{9}"
      "<h3>Failed candidates</h3>{10}</section>",
      index + 1, HtmlEscape(run.model), HtmlEscape(run.model_hash),
      HtmlEscape(PipelineLabel(run, options)), run.seed,
      run.time_budget_seconds > 0 ? FormatDuration(run.time_budget_seconds) : "none",
      HtmlEscape(run.measured_at), RunCurves(run, facts), DecisionTreeHtml(run, &database),
      EvaluationCountsHtml(run),
      failures.empty() ? "<p class=\"muted\">None: every measured candidate ran and matched "
                         "the reference.</p>"
                       : failures);
}

}  // namespace

std::string TuningReportHtml(const Database& database, const ReportOptions& options) {
  std::vector<TuningRun> runs = TuningRuns(database);
  std::vector<Workload> kernels;
  for (const Workload& workload : database.Workloads()) {
    if (workload.kind == "kernel") kernels.push_back(workload);
  }
  if (!options.model.empty()) {
    std::set<std::string> models, scheduled;
    std::vector<TuningRun> selected;
    for (TuningRun& run : runs) {
      models.insert(run.model);
      if (run.model != options.model) continue;
      ScheduledKernels(run, scheduled);
      selected.push_back(std::move(run));
    }
    if (selected.empty()) {
      throw ir::Error(
          fmt::format("no tuning run of model '{}' in the database{}", options.model,
                      models.empty() ? " (it has no tuning runs)"
                                     : fmt::format("; its models: {}", fmt::join(models, ", "))),
          {.file = options.source});
    }
    runs = std::move(selected);
    std::erase_if(kernels, [&](const Workload& w) { return !scheduled.count(w.hash); });
  }

  std::vector<RunFacts> facts;
  for (const TuningRun& run : runs) facts.push_back(CollectRunFacts(run, database));
  std::string body;
  std::vector<std::string> targets;
  for (const TuningRun& run : runs) {
    if (std::find(targets.begin(), targets.end(), run.target) == targets.end()) {
      targets.push_back(run.target);
    }
  }
  // Kernel charts first: they add the targets of kernel records to the list shown with the runs.
  std::string kernel_html =
      kernels.empty() ? "" : KernelWorkloadsHtml(database, kernels, options, targets);
  if (runs.empty() && kernels.empty()) {
    body =
        "<p class=\"empty\">This tuning database is empty: it holds no tuning runs and no "
        "measured kernels. <code>tandem tune MODEL --db FILE</code> fills it.</p>";
  } else {
    body += "<section id=\"runs\"><h2>Tuning runs</h2>";
    body += runs.empty() ? "<p class=\"muted\">No tuning runs are recorded (only kernel "
                           "measurements).</p>"
                         : RunsTableHtml(runs, facts, options, targets);
    body += TargetListHtml(targets) + "</section>";
    for (size_t k = 0; k < runs.size(); ++k) {
      body += RunSection(runs[k], facts[k], k, database, options);
    }
    body += kernel_html;
  }
  size_t graphs = 0;
  for (const Workload& workload : database.Workloads()) graphs += workload.kind == "graph";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>Tandem tuning report</title><style>{}</style></head><body>"
      "<h1>Tandem tuning report</h1><p class=\"meta\">{}{} tuning run{} &middot; {} kernel "
      "workloads &middot; {} graph workloads &middot; {} records</p>{}</body></html>\n",
      kStyle,
      options.source.empty() ? "" : "<code>" + HtmlEscape(options.source) + "</code> &middot; ",
      runs.size(), runs.size() == 1 ? "" : "s", kernels.size(), graphs, database.NumRecords(),
      body);
}

}  // namespace tandem::report
