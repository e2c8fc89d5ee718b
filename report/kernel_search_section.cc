#include "report/kernel_search_section.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/html_text.h"
#include "report/svg_line_chart.h"

namespace tandem::report {

namespace {

constexpr size_t kMaxTaskCharts = 12;

std::string SearchLabel(const KernelSearchFacts& search) {
  return fmt::format("{} ({} task{})", search.pass, search.tasks.size(),
                     search.tasks.size() == 1 ? "" : "s");
}

std::string RecordCell(const std::optional<PlotPoint>& point) {
  if (!point) return "<td class=\"num\">-</td>";
  return fmt::format("<td class=\"num\" data-seconds=\"{:.17g}\" data-record=\"{}\">{}</td>",
                     point->seconds, HtmlEscape(point->record.Text()),
                     FormatDuration(point->seconds));
}

std::string TaskTable(const KernelSearchFacts& search, const tuning::FmaPeakRecord& peak) {
  std::string html =
      "<table class=\"tasks\"><thead><tr><th>kernel</th><th>workload</th><th>calls</th>"
      "<th>default schedule</th><th>best</th><th>gain</th><th>best GFLOP/s</th>"
      "<th>measured</th><th>failed</th></tr></thead><tbody>";
  for (const KernelTaskFacts& task : search.tasks) {
    std::string gain = "-";
    if (task.default_schedule && task.best_point) {
      gain = fmt::format("{:.2f}x", task.default_schedule->seconds / task.best_point->seconds);
    }
    html += fmt::format(
        "<tr><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td>{}{}<td "
        "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td></tr>",
        HtmlEscape(task.task.name), HtmlEscape(task.task.workload_hash), task.task.weight,
        RecordCell(task.default_schedule), RecordCell(task.best_point), gain,
        GflopsText(task.BestGflops(), peak), task.measured, task.failed);
  }
  return html + "</tbody></table>";
}

std::string TaskCharts(const KernelSearchFacts& search) {
  std::vector<const KernelTaskFacts*> tasks;
  for (const KernelTaskFacts& task : search.tasks) {
    if (!task.best.empty()) tasks.push_back(&task);
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const auto* a, const auto* b) { return a->measured > b->measured; });
  std::string html = "<div class=\"charts\">";
  for (size_t k = 0; k < tasks.size() && k < kMaxTaskCharts; ++k) {
    const KernelTaskFacts& task = *tasks[k];
    LineChart chart{Shorten(task.task.name, 36), "trials of the search", "best latency"};
    chart.kind = "kernel-task";
    chart.width = 320, chart.height = 190;
    ChartSeries best{"best so far"};
    best.step = true;
    best.markers = true;
    if (task.default_schedule) {
      best.points.emplace_back(0, task.default_schedule->seconds);
      best.point_records.push_back(task.default_schedule->record.Text());
    }
    for (const PlotPoint& point : task.best) {
      best.points.emplace_back(point.x, point.seconds);
      best.point_records.push_back(point.record.Text());
    }
    chart.series.push_back(std::move(best));
    html += FigureHtml(chart, fmt::format("{} x{}: {} measured, {} failed (at 0: its default "
                                          "schedule)",
                                          HtmlEscape(task.task.name), task.task.weight,
                                          task.measured, task.failed));
  }
  if (tasks.size() > kMaxTaskCharts) {
    html += fmt::format("<p class=\"muted\">and {} more tasks (in the table)</p>",
                        tasks.size() - kMaxTaskCharts);
  }
  return html + "</div>";
}

}  // namespace

std::string GflopsText(double gflops, const tuning::FmaPeakRecord& peak) {
  if (!(gflops > 0)) return "-";
  if (!peak.measured()) return fmt::format("{:.1f}", gflops);
  return fmt::format("{:.1f} ({:.0f}% of peak)", gflops, 100 * gflops / peak.gflops);
}

std::string KernelSearchSectionHtml(const tuning::TuningRun& run,
                                    const std::vector<KernelSearchFacts>& searches) {
  if (searches.empty()) return "";
  LineChart chart{"Kernel search: weighted best latency", "trials", "sum of calls x best latency"};
  chart.kind = "kernel-weighted";
  bool old = false;
  size_t left_out = 0;
  for (const KernelSearchFacts& search : searches) {
    ChartSeries series{SearchLabel(search)};
    series.step = true;
    series.markers = true;
    series.values_are_sums = true;
    if (search.logged) {
      for (const PlotPoint& point : search.weighted) {
        series.points.emplace_back(point.x, point.seconds);
        series.point_records.push_back(point.record.Text());
      }
      left_out += search.left_out;
    } else {
      old = true;
      for (const auto& [trials, seconds] : search.recorded_complete) {
        series.points.emplace_back(static_cast<double>(trials), seconds);
      }
    }
    chart.series.push_back(std::move(series));
  }
  std::string caption =
      "Per trial count, the sum over the tasks of calls per run x the task's best latency so far, "
      "a task not measured yet at its default schedule's latency (so the line never rises); the "
      "point at 0 trials is the default schedules'";
  if (left_out > 0) {
    caption += fmt::format("; {} task{} without a measured default schedule left out", left_out,
                           left_out == 1 ? "" : "s");
  }
  if (old) {
    caption +=
        "; searches recorded by an older Tandem show their recorded sums from the point every "
        "task had a measurement";
  }
  std::string peak =
      run.fma_peak.measured()
          ? fmt::format(
                "FMA peak of the machine, measured with the run: {:.1f} GFLOP/s ({}, {} "
                "lanes, {} thread{}).",
                run.fma_peak.gflops, HtmlEscape(run.fma_peak.unit), run.fma_peak.lanes,
                run.fma_peak.threads, run.fma_peak.threads == 1 ? "" : "s")
          : "The FMA peak was not measured with this run (GFLOP/s shown without it).";
  std::string html = "<div class=\"charts\">" + FigureHtml(chart, caption) + "</div>";
  html += "<p class=\"muted\">" + peak + "</p>";
  for (const KernelSearchFacts& search : searches) {
    if (!search.logged) continue;
    html += fmt::format(
        "<details class=\"tasks\"><summary>Tasks of {}: default and best latency, GFLOP/s, "
        "per-task curves</summary>{}{}</details>",
        HtmlEscape(SearchLabel(search)), TaskTable(search, run.fma_peak), TaskCharts(search));
  }
  return html;
}

}  // namespace tandem::report
