#include "report/tuning_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "ir/error.h"
#include "report/decision_tree_html.h"
#include "report/html_text.h"
#include "report/svg_line_chart.h"
#include "tuning/session/tuning_run.h"

namespace tandem::report {

using tuning::CurvePoint;
using tuning::Database;
using tuning::EvaluationCounts;
using tuning::GraphCurvePoint;
using tuning::KernelTuningCurve;
using tuning::TuningRecord;
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
)";

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

std::string PipelineLabel(const TuningRun& run, const ReportOptions& options) {
  auto known = options.pipeline_names.find(run.pipeline);
  if (known != options.pipeline_names.end()) return known->second;
  // The tuning passes tell pipelines apart better than the heuristic ones around them.
  std::vector<std::string> tuning = TuningPassNames(PipelineStructure(run.pipeline));
  return tuning.empty() ? Shorten(run.pipeline, 40) : fmt::format("{}", fmt::join(tuning, ", "));
}

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

std::string RunsTable(const std::vector<TuningRun>& runs, const ReportOptions& options,
                      const std::vector<std::string>& targets) {
  std::string html =
      "<table class=\"runs\"><thead><tr><th>#</th><th>model</th><th>pipeline</th>"
      "<th>target</th><th>measured / trial budget</th><th>tuning time</th><th>latency before</th>"
      "<th>latency after</th><th>speedup</th><th>when</th></tr></thead><tbody>";
  for (size_t k = 0; k < runs.size(); ++k) {
    const TuningRun& run = runs[k];
    int64_t measured = 0;
    for (const auto& [pass, counts] : run.counts) measured += counts.measured;
    double before = Median(run.before_seconds), after = Median(run.after_seconds);
    std::string speedup = "-";
    if (before > 0 && after > 0) {
      double ratio = before / after;
      speedup = fmt::format("<span class=\"{}\">{:.2f}x</span>",
                            ratio >= 1.005   ? "speedup"
                            : ratio <= 0.995 ? "slowdown"
                                             : "same",
                            ratio);
    }
    size_t target = std::find(targets.begin(), targets.end(), run.target) - targets.begin();
    html += fmt::format(
        "<tr><td><a href=\"#run-{0}\">{0}</a></td><td>{1}</td><td><details class=\"pipeline\">"
        "<summary>{2}</summary><code>{3}</code></details></td><td title=\"{4}\">T{5}</td>"
        "<td class=\"num\">{6} / {7}</td><td class=\"num\">{8}</td><td class=\"num\">{9}</td>"
        "<td class=\"num\">{10}</td><td class=\"num\">{11}</td><td>{12}</td></tr>",
        k + 1, HtmlEscape(run.model), HtmlEscape(PipelineLabel(run, options)),
        HtmlEscape(run.pipeline), HtmlEscape(run.target), target + 1, measured,
        run.trial_budget > 0 ? std::to_string(run.trial_budget) : "no limit",
        FormatDuration(run.tuning_seconds), FormatDuration(before),
        after > 0 ? FormatDuration(after)
                  : "<span class=\"slowdown\" title=\"" + HtmlEscape(run.after_error) +
                        "\">failed</span>",
        speedup, HtmlEscape(run.measured_at));
  }
  return html + "</tbody></table>";
}

std::string TargetList(const std::vector<std::string>& targets) {
  std::string html = "<p>Target descriptors:</p><ul class=\"targets\">";
  for (size_t k = 0; k < targets.size(); ++k) {
    html += fmt::format("<li>T{}: <code>{}</code></li>", k + 1, HtmlEscape(targets[k]));
  }
  return html + "</ul>";
}

std::string Figure(const LineChart& chart, const std::string& caption) {
  return "<figure>" + RenderLineChart(chart) + "<figcaption>" + caption + "</figcaption></figure>";
}

std::string RunCurves(const TuningRun& run) {
  std::string html = "<div class=\"charts\">";
  if (!run.graph_curve.empty()) {
    LineChart by_count{"Graph-level tuning: best latency", "measurements", "best latency"};
    LineChart by_time{"Graph-level tuning: best latency over time", "elapsed", "best latency"};
    by_time.x_is_seconds = true;
    for (const GraphCurvePoint& point : run.graph_curve) {
      if (!(point.best_seconds > 0)) continue;
      auto series = std::find_if(by_count.series.begin(), by_count.series.end(),
                                 [&](const ChartSeries& s) { return s.name == point.pass; });
      if (series == by_count.series.end()) {
        by_count.series.push_back({point.pass, {}, true, true, true});
        by_time.series.push_back({point.pass, {}, true, true, true});
        series = by_count.series.end() - 1;
      }
      size_t index = series - by_count.series.begin();
      series->points.emplace_back(static_cast<double>(point.measured), point.best_seconds);
      by_time.series[index].points.emplace_back(point.elapsed_seconds, point.best_seconds);
    }
    std::string caption =
        fmt::format("{} evaluated batches; one line per tuning pass", run.graph_curve.size());
    html += Figure(by_count, caption) + Figure(by_time, caption);
  }
  if (!run.kernel_curves.empty()) {
    LineChart chart{"Kernel search: weighted latency", "trials", "sum of weight x best latency"};
    bool partial = false;
    for (const KernelTuningCurve& curve : run.kernel_curves) {
      ChartSeries complete{fmt::format("{} ({} tasks)", curve.pass, curve.num_tasks)};
      complete.markers = true;
      ChartSeries incomplete{""};
      incomplete.line = false, incomplete.color = "#aaa";
      for (const CurvePoint& point : curve.points) {
        (point.all_tasks_measured ? complete : incomplete)
            .points.emplace_back(static_cast<double>(point.trials), point.weighted_seconds);
      }
      partial = partial || !incomplete.points.empty();
      chart.series.push_back(std::move(complete));
      if (!incomplete.points.empty()) chart.series.push_back(std::move(incomplete));
    }
    size_t searches = run.kernel_curves.size();
    html += Figure(chart, fmt::format("{} kernel search{}{}", searches, searches == 1 ? "" : "es",
                                      partial ? "; grey dots: sums over the tasks measured so "
                                                "far, before every task had a measured schedule"
                                              : ""));
  }
  if (run.graph_curve.empty() && run.kernel_curves.empty()) {
    html += "<p class=\"muted\">No tuning curve was recorded for this run.</p>";
  }
  return html + "</div>";
}

std::string CountsTable(const TuningRun& run) {
  if (run.counts.empty()) return "<p class=\"muted\">No evaluations were recorded.</p>";
  std::string html =
      "<table class=\"counts\"><thead><tr><th>pass</th><th>requested</th><th>from database</th>"
      "<th>measured</th><th>failed</th><th>over budget</th><th>confirmed</th><th>build s</th>"
      "<th>run s</th>"
      "</tr></thead><tbody>";
  auto row = [](const std::string& cls, const std::string& name, const EvaluationCounts& c) {
    return fmt::format(
        "<tr{}><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}"
        "</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{:.1f}</td><td class=\"num\">{:.1f}</td></tr>",
        cls, HtmlEscape(name), c.requested, c.reused, c.measured, c.failed, c.over_budget,
        c.confirmed, c.build_seconds, c.run_seconds);
  };
  EvaluationCounts total;
  for (const auto& [pass, counts] : run.counts) {
    html += row("", pass, counts);
    total += counts;
  }
  return html + row(" class=\"total\"", "total", total) + "</tbody></table>";
}

std::string RunSection(const TuningRun& run, size_t index, const Database& database,
                       const ReportOptions& options) {
  return fmt::format(
      "<section class=\"run\" id=\"run-{0}\"><h2>Run {0}: {1} &middot; {2}</h2>"
      "<p class=\"meta\">seed {3} &middot; time budget {4} &middot; {5}</p>"
      "<h3>Tuning curves</h3>{6}<h3>Decisions</h3>{7}<h3>Evaluations per pass</h3>{8}"
      "</section>",
      index + 1, HtmlEscape(run.model), HtmlEscape(PipelineLabel(run, options)), run.seed,
      run.time_budget_seconds > 0 ? FormatDuration(run.time_budget_seconds) : "none",
      HtmlEscape(run.measured_at), RunCurves(run), DecisionTreeHtml(run, &database),
      CountsTable(run));
}

std::string KernelSection(const Database& database, const std::vector<Workload>& kernels,
                          const ReportOptions& options, std::vector<std::string>& targets) {
  struct Entry {
    const Workload* workload;
    std::vector<std::pair<std::string, std::vector<TuningRecord>>> by_target;
    size_t records = 0;
  };
  std::vector<Entry> entries;
  for (const Workload& workload : kernels) {
    Entry entry{&workload, {}, 0};
    for (const std::string& target : database.Targets(workload.hash)) {
      entry.by_target.emplace_back(target, database.Records(workload.hash, target));
      entry.records += entry.by_target.back().second.size();
      if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
        targets.push_back(target);
      }
    }
    entries.push_back(std::move(entry));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.records > b.records; });
  size_t shown = std::min(entries.size(), options.max_kernel_charts);
  std::string html = fmt::format(
      "<section id=\"kernels\"><h2>Kernel workloads</h2><p>{} kernel workload{}{}; best-so-far "
      "latency against the record index (commit order), measured schedules as dots.</p>"
      "<div class=\"charts\">",
      entries.size(), entries.size() == 1 ? "" : "s",
      shown < entries.size() ? fmt::format(", the {} with the most records shown", shown) : "");
  for (size_t k = 0; k < shown; ++k) {
    const Entry& entry = entries[k];
    const std::string& text = entry.workload->text;
    std::string name =
        text.rfind("kernel @", 0) == 0 ? text.substr(7, text.find('(') - 7) : Shorten(text, 40);
    LineChart chart{Shorten(name, 36), "record", "latency"};
    chart.width = 320, chart.height = 190;
    size_t failed = 0;
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [target, records] : entry.by_target) {
      size_t t = std::find(targets.begin(), targets.end(), target) - targets.begin() + 1;
      ChartSeries best_so_far{fmt::format("best on T{}", t)}, measured{""};
      best_so_far.step = true;
      measured.line = false, measured.color = "#bbb";
      double best_here = std::numeric_limits<double>::infinity();
      for (size_t r = 0; r < records.size(); ++r) {
        if (!records[r].ok()) {
          ++failed;
          continue;
        }
        double seconds = records[r].median_seconds();
        measured.points.emplace_back(static_cast<double>(r + 1), seconds);
        best_here = std::min(best_here, seconds);
        best_so_far.points.emplace_back(static_cast<double>(r + 1), best_here);
      }
      best = std::min(best, best_here);
      chart.series.push_back(std::move(measured));
      chart.series.push_back(std::move(best_so_far));
    }
    html += Figure(chart, fmt::format("{} <code>{}</code>: {} records, {} failed, best {}",
                                      HtmlEscape(name), HtmlEscape(entry.workload->hash),
                                      entry.records, failed, FormatDuration(best)));
  }
  return html + "</div></section>";
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

  std::string body;
  std::vector<std::string> targets;
  for (const TuningRun& run : runs) {
    if (std::find(targets.begin(), targets.end(), run.target) == targets.end()) {
      targets.push_back(run.target);
    }
  }
  // Kernel charts first: they add the targets of kernel records to the list shown with the runs.
  std::string kernel_html =
      kernels.empty() ? "" : KernelSection(database, kernels, options, targets);
  if (runs.empty() && kernels.empty()) {
    body =
        "<p class=\"empty\">This tuning database is empty: it holds no tuning runs and no "
        "measured kernels. <code>tandem tune MODEL --db FILE</code> fills it.</p>";
  } else {
    body += "<section id=\"runs\"><h2>Tuning runs</h2>";
    body += runs.empty() ? "<p class=\"muted\">No tuning runs are recorded (only kernel "
                           "measurements).</p>"
                         : RunsTable(runs, options, targets);
    body += TargetList(targets) + "</section>";
    for (size_t k = 0; k < runs.size(); ++k) body += RunSection(runs[k], k, database, options);
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
