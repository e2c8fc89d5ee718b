#include "report/evaluations_section.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/html_text.h"

namespace tandem::report {

using tuning::EvaluationCounts;

namespace {

constexpr size_t kMaxRecordsListed = 20;

}  // namespace

std::string ShortReason(const std::string& reason, size_t max_length) {
  std::string line;
  for (char c : reason) line += c == '\n' || c == '\t' ? ' ' : c;
  return Shorten(line, max_length);
}

std::string EvaluationCountsHtml(const tuning::TuningRun& run) {
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
  return html + row(" class=\"total\"", "total", total) +
         "</tbody></table><p class=\"muted\">measured: real measurements of this run; confirmed: "
         "finalists re-measured together in interleaved rounds before a decision (not charged "
         "to the budget); over budget: candidates refused because the budget was spent (not "
         "measured, not failures).</p>";
}

std::string FailuresHtml(const std::vector<PassFailures>& failures) {
  if (failures.empty()) return "";
  std::string html = "<ul class=\"failures\">";
  for (const PassFailures& pass : failures) {
    std::string head = fmt::format(
        "<span class=\"pass\">{}</span>: {} failed candidate{}{}", HtmlEscape(pass.pass),
        pass.failed, pass.failed == 1 ? "" : "s",
        pass.over_budget > 0 ? fmt::format(", {} refused (budget spent)", pass.over_budget) : "");
    if (pass.by_reason.empty()) {
      html += "<li>" + head +
              (pass.failed > 0 ? " <span class=\"muted\">(reasons not recorded by this older "
                                 "run)</span>"
                               : "") +
              "</li>";
      continue;
    }
    html += "<li><details class=\"failures\"><summary>" + head +
            "</summary><table><thead><tr>"
            "<th>candidates</th><th>reason</th><th>records</th></tr></thead><tbody>";
    std::vector<std::pair<std::string, std::vector<RecordRef>>> reasons(pass.by_reason.begin(),
                                                                        pass.by_reason.end());
    std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) {
      return a.second.size() > b.second.size();
    });
    for (const auto& [reason, records] : reasons) {
      std::vector<std::string> listed;
      for (size_t k = 0; k < records.size() && k < kMaxRecordsListed; ++k) {
        listed.push_back("<code>" + HtmlEscape(records[k].Text()) + "</code>");
      }
      if (records.size() > kMaxRecordsListed) {
        listed.push_back(fmt::format("and {} more", records.size() - kMaxRecordsListed));
      }
      html += fmt::format("<tr><td class=\"num\">{}</td><td><pre>{}</pre></td><td>{}</td></tr>",
                          records.size(), HtmlEscape(reason), fmt::join(listed, " "));
    }
    html += "</tbody></table></details></li>";
  }
  return html + "</ul>";
}

}  // namespace tandem::report
