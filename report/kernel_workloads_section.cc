#include "report/kernel_workloads_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "report/html_text.h"
#include "report/svg_line_chart.h"

namespace tandem::report {

using tuning::Database;
using tuning::TuningRecord;
using tuning::Workload;

std::string KernelWorkloadsHtml(const Database& database, const std::vector<Workload>& kernels,
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
    chart.kind = "kernel-workload";
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
        measured.point_records.push_back(
            tuning::JobTrialName(records[r].workload_hash, records[r].candidate_hash));
        best_here = std::min(best_here, seconds);
        best_so_far.points.emplace_back(static_cast<double>(r + 1), best_here);
      }
      best = std::min(best, best_here);
      chart.series.push_back(std::move(measured));
      chart.series.push_back(std::move(best_so_far));
    }
    html += FigureHtml(chart, fmt::format("{} <code>{}</code>: {} records, {} failed, best {}",
                                          HtmlEscape(name), HtmlEscape(entry.workload->hash),
                                          entry.records, failed, FormatDuration(best)));
  }
  return html + "</div></section>";
}

}  // namespace tandem::report
