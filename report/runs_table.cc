#include "report/runs_table.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/decision_tree_html.h"
#include "report/html_text.h"

namespace tandem::report {

using tuning::TuningRun;

namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The tuning passes of a pipeline, nested ones in parentheses: "TuneLayout(TuneKernels)".
std::vector<std::string> TuningPassNames(const std::vector<PipelineNode>& nodes) {
  std::vector<std::string> names;
  for (const PipelineNode& node : nodes) {
    std::vector<std::string> inner = TuningPassNames(node.eval);
    if (node.name.rfind("Tune", 0) != 0) {
      names.insert(names.end(), inner.begin(), inner.end());
    } else if (inner.empty()) {
      names.push_back(node.name);
    } else {
      names.push_back(fmt::format("{}({})", node.name, fmt::join(inner, ", ")));
    }
  }
  return names;
}

// A latency cell naming the record the latency is the median of.
std::string LatencyCell(double seconds, const RecordRef& record) {
  return fmt::format(
      "<td class=\"num\" data-seconds=\"{:.17g}\" data-record=\"{}\" "
      "title=\"record {}\">{}</td>",
      seconds, HtmlEscape(record.Text()), HtmlEscape(record.Text()), FormatDuration(seconds));
}

}  // namespace

std::string PipelineLabel(const TuningRun& run, const ReportOptions& options) {
  auto known = options.pipeline_names.find(run.pipeline);
  if (known != options.pipeline_names.end()) return known->second;
  // The tuning passes tell pipelines apart better than the heuristic ones around them.
  std::vector<std::string> tuning = TuningPassNames(PipelineStructure(run.pipeline));
  return tuning.empty() ? Shorten(run.pipeline, 40) : fmt::format("{}", fmt::join(tuning, ", "));
}

std::string RunsTableHtml(const std::vector<TuningRun>& runs, const std::vector<RunFacts>& facts,
                          const ReportOptions& options, const std::vector<std::string>& targets) {
  std::string html =
      "<table class=\"runs\"><thead><tr><th>#</th><th>model</th><th>pipeline</th>"
      "<th>target</th><th>measured / trial budget</th><th>tuning time</th><th>latency before</th>"
      "<th>latency after</th><th>speedup</th><th>when</th></tr></thead><tbody>";
  for (size_t k = 0; k < runs.size(); ++k) {
    const TuningRun& run = runs[k];
    const GraphFacts& graph = facts[k].graph;
    int64_t measured = 0;
    for (const auto& [pass, counts] : run.counts) measured += counts.measured;
    double before = graph.before ? graph.before->seconds : Median(run.before_seconds);
    double after = graph.after ? graph.after->seconds : Median(run.after_seconds);
    std::string speedup = "-";
    if (before > 0 && after > 0) {
      double ratio = before / after;
      speedup = fmt::format("<span class=\"{}\">{:.2f}x</span>",
                            ratio >= 1.005   ? "speedup"
                            : ratio <= 0.995 ? "slowdown"
                                             : "same",
                            ratio);
    }
    std::string before_cell = graph.before
                                  ? LatencyCell(before, graph.before->record)
                                  : "<td class=\"num\">" + FormatDuration(before) + "</td>";
    // The run's own record holds the tuned module's run times.
    RecordRef run_record{tuning::TuningRunKey(run.model_hash, run.pipeline), ""};
    std::string after_cell =
        after > 0 ? LatencyCell(after, graph.after ? graph.after->record : run_record)
        : run.after_error.empty() ? "<td class=\"num muted\">not measured</td>"
                                  : "<td class=\"num\"><span class=\"slowdown\" title=\"" +
                                        HtmlEscape(run.after_error) + "\">failed</span></td>";
    size_t target = std::find(targets.begin(), targets.end(), run.target) - targets.begin();
    html += fmt::format(
        "<tr><td><a href=\"#run-{0}\">{0}</a></td><td>{1}<br><code class=\"hash\" title=\"the "
        "model's structural hash\">{2}</code></td><td><details class=\"pipeline\">"
        "<summary>{3}</summary><code>{4}</code></details></td><td title=\"{5}\">T{6}</td>"
        "<td class=\"num\">{7} / {8}</td><td class=\"num\">{9}</td>{10}{11}"
        "<td class=\"num\">{12}</td><td>{13}</td></tr>",
        k + 1, HtmlEscape(run.model), HtmlEscape(run.model_hash),
        HtmlEscape(PipelineLabel(run, options)), HtmlEscape(run.pipeline), HtmlEscape(run.target),
        target + 1, measured, run.trial_budget > 0 ? std::to_string(run.trial_budget) : "no limit",
        FormatDuration(run.tuning_seconds), before_cell, after_cell, speedup,
        HtmlEscape(run.measured_at));
  }
  return html + "</tbody></table>";
}

std::string TargetListHtml(const std::vector<std::string>& targets) {
  std::string html = "<p>Target descriptors:</p><ul class=\"targets\">";
  for (size_t k = 0; k < targets.size(); ++k) {
    html += fmt::format("<li>T{}: <code>{}</code></li>", k + 1, HtmlEscape(targets[k]));
  }
  return html + "</ul>";
}

}  // namespace tandem::report
