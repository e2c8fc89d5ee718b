#include "report/terminal_summary.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/evaluations_section.h"
#include "report/html_text.h"
#include "report/kernel_search_section.h"
#include "tuning/search/apply_history_best.h"

namespace tandem::report {

using tuning::EvaluationCounts;
using tuning::TuningRun;

namespace {

constexpr size_t kMaxKernelRows = 8;
constexpr size_t kMaxReasons = 3;

// `text` on one line, cut (with "...") or padded to exactly `width` characters.
std::string Cell(const std::string& text, size_t width, bool right = false) {
  std::string line = ShortReason(text, width);
  if (line.size() < width) {
    line = right ? std::string(width - line.size(), ' ') + line
                 : line + std::string(width - line.size(), ' ');
  }
  return line;
}

// Words of `text` in lines of at most `width` characters after `indent`.
std::string Wrap(const std::string& text, size_t width, const std::string& indent) {
  std::string out, line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    std::string word =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    while (word.size() > width) {  // a word longer than a line is cut in pieces
      out += indent + word.substr(0, width) + "\n";
      word = word.substr(width);
    }
    line += (line.empty() ? "" : " ") + word;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

std::string Ratio(double before, double after) {
  if (!(before > 0) || !(after > 0)) return "-";
  return fmt::format("{:.2f}x", before / after);
}

double MedianOf(const std::vector<double>& seconds) {
  return seconds.empty() ? 0 : tuning::MeasureResult::FromRunSeconds(seconds, 0).median_seconds;
}

std::string Rule() {
  return std::string(kSummaryColumns, '-') + "\n";
}

// A line of at most kSummaryColumns characters, without trailing blanks.
std::string Line(const std::string& text) {
  std::string line = Cell(text, kSummaryColumns);
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

// A decision's result: its latency, "failed: ..." or "-" when not measured (a pass that measures
// only parts, like TuneKernels, whose result is the confirmation in its instruction).
// The reason TuningPass gives a decision whose best candidate was not measured as a whole.
constexpr const char* kNotMeasured = "not measured end to end";

bool Failed(const tuning::MeasureResult& result) {
  return !result.ok() && !result.error.empty() && result.error != kNotMeasured;
}

std::string ResultText(const tuning::MeasureResult& result) {
  if (result.ok()) return FormatDuration(result.median_seconds);
  return Failed(result) ? "failed" : "-";
}

std::string Decisions(const TuningRun& run) {
  if (run.decisions.empty()) return "";
  std::string out = "\nwhat was decided and what it bought (input of the pass -> its best)\n";
  out += Cell("tuning pass", 58) + "  " + Cell("input", 11, true) + "  " + Cell("best", 11, true) +
         "  " + Cell("gain", 7, true) + "\n" + Rule();
  for (const tuning::TuningDecision& decision : run.decisions) {
    double best = decision.result.ok() ? decision.result.median_seconds : 0;
    out += Cell(decision.pass, 58) + "  " +
           Cell(FormatDuration(decision.baseline_seconds), 11, true) + "  " +
           Cell(ResultText(decision.result), 11, true) + "  " +
           Cell(Ratio(decision.baseline_seconds, best), 7, true) + "\n";
    out += Wrap("chose: " + DecisionSummary(decision.trace), kSummaryColumns - 4, "    ");
    if (Failed(decision.result)) {
      out +=
          Wrap("failed: " + ShortReason(decision.result.error, 200), kSummaryColumns - 4, "    ");
    }
  }
  return out;
}

std::string KernelSearches(const TuningRun& run, const RunFacts& facts) {
  std::string out;
  for (const KernelSearchFacts& search : facts.kernel_searches) {
    if (!search.logged || search.weighted.empty()) continue;
    double start = search.weighted.front().seconds, end = search.weighted.back().seconds;
    out += "\n" + Line(fmt::format("kernel search {}: weighted latency {} (default schedules) -> "
                                   "{} ({})",
                                   search.pass, FormatDuration(start), FormatDuration(end),
                                   Ratio(start, end)));
    if (search.left_out > 0) {
      out +=
          Line(fmt::format("  over the {} of {} tasks whose default schedule was measured (the "
                           "budget reached no other)",
                           search.tasks.size() - search.left_out, search.tasks.size()));
    }
    std::vector<const KernelTaskFacts*> tasks;
    for (const KernelTaskFacts& task : search.tasks) {
      if (task.default_schedule) tasks.push_back(&task);
    }
    auto work = [](const KernelTaskFacts* t) {
      return static_cast<double>(t->task.weight) * t->default_schedule->seconds;
    };
    std::stable_sort(tasks.begin(), tasks.end(),
                     [&](const auto* a, const auto* b) { return work(a) > work(b); });
    out += Cell("kernel", 34) + "  " + Cell("calls", 5, true) + "  " + Cell("default", 10, true) +
           "  " + Cell("best", 10, true) + "  " + Cell("gain", 6, true) + "  " +
           Cell("GFLOP/s", 23, true) + "\n" + Rule();
    for (size_t k = 0; k < tasks.size() && k < kMaxKernelRows; ++k) {
      const KernelTaskFacts& task = *tasks[k];
      double best = task.best_point ? task.best_point->seconds : 0;
      out += Cell(task.task.name, 34) + "  " + Cell(std::to_string(task.task.weight), 5, true) +
             "  " + Cell(FormatDuration(task.default_schedule->seconds), 10, true) + "  " +
             Cell(FormatDuration(best), 10, true) + "  " +
             Cell(Ratio(task.default_schedule->seconds, best), 6, true) + "  " +
             Cell(GflopsText(task.BestGflops(), run.fma_peak), 23, true) + "\n";
    }
    if (tasks.size() > kMaxKernelRows) {
      out += fmt::format("({} more kernels in `tandem report`)\n", tasks.size() - kMaxKernelRows);
    }
  }
  if (!out.empty() && run.fma_peak.measured()) {
    out += fmt::format("FMA peak measured with the run: {:.1f} GFLOP/s ({}, {} threads)\n",
                       run.fma_peak.gflops, run.fma_peak.unit, run.fma_peak.threads);
  }
  return out;
}

std::string Evaluations(const TuningRun& run) {
  std::string out = fmt::format(
      "\nevaluations (budget: {}{}; tuning took {:.1f} s)\n",
      run.trial_budget > 0 ? fmt::format("{} measurements", run.trial_budget) : "no trial limit",
      run.time_budget_seconds > 0 ? fmt::format(", {:.0f} s", run.time_budget_seconds) : "",
      run.tuning_seconds);
  out += Cell("pass", 40) + "  " + Cell("asked", 6, true) + "  " + Cell("from db", 7, true) + "  " +
         Cell("measured", 8, true) + "  " + Cell("failed", 6, true) + "  " +
         Cell("refused", 7, true) + "  " + Cell("confirmed", 9, true) + "\n" + Rule();
  auto row = [](const std::string& name, const EvaluationCounts& c) {
    return Cell(name, 40) + "  " + Cell(std::to_string(c.requested), 6, true) + "  " +
           Cell(std::to_string(c.reused), 7, true) + "  " +
           Cell(std::to_string(c.measured), 8, true) + "  " +
           Cell(std::to_string(c.failed), 6, true) + "  " +
           Cell(std::to_string(c.over_budget), 7, true) + "  " +
           Cell(std::to_string(c.confirmed), 9, true) + "\n";
  };
  EvaluationCounts total;
  for (const auto& [pass, counts] : run.counts) {
    out += row(pass, counts);
    total += counts;
  }
  return out + row("total", total);
}

std::string Failures(const RunFacts& facts) {
  std::string out = "\nfailed candidates\n";
  bool any = false;
  for (const PassFailures& pass : facts.failures) {
    if (pass.failed == 0) continue;
    any = true;
    out += Line(fmt::format("{}: {} failed", pass.pass, pass.failed));
    std::vector<std::pair<std::string, size_t>> reasons;
    for (const auto& [reason, records] : pass.by_reason)
      reasons.emplace_back(reason, records.size());
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (size_t k = 0; k < reasons.size() && k < kMaxReasons; ++k) {
      std::string count = fmt::format("  {:>4}x  ", reasons[k].second);
      out += count + ShortReason(reasons[k].first, kSummaryColumns - count.size()) + "\n";
    }
    if (reasons.size() > kMaxReasons) {
      out += fmt::format("  ({} more reasons in `tandem report`)\n", reasons.size() - kMaxReasons);
    }
  }
  return any ? out : "\nfailed candidates: none\n";
}

}  // namespace

std::string DecisionSummary(const ir::Trace& trace) {
  std::vector<std::string> parts;
  for (const ir::Instruction& instruction : trace.instructions()) {
    std::string decision =
        instruction.decision && std::holds_alternative<std::string>(*instruction.decision)
            ? std::get<std::string>(*instruction.decision)
            : "";
    // A decision confirmed by re-measuring its finalists together says so, with their times.
    std::string confirmed = instruction.attrs.Has("confirmed")
                                ? " [confirmed " + instruction.attrs.GetString("confirmed") + "]"
                                : "";
    if (tuning::CarriesSchedules(instruction)) {
      parts.push_back(fmt::format("{}: {} tuned kernel schedule(s){}", instruction.kind,
                                  tuning::ScheduleDecision(instruction).size(), confirmed));
      continue;
    }
    if (!confirmed.empty()) decision += confirmed;
    parts.push_back(decision == "apply" || decision.empty() ? instruction.kind
                                                            : instruction.kind + "=" + decision);
  }
  return parts.empty() ? "(none)" : fmt::format("{}", fmt::join(parts, ", "));
}

std::string TuningSummaryText(const TuningRun& run, const RunFacts& facts,
                              const std::string& pipeline_label) {
  int64_t measured = 0;
  for (const auto& [pass, counts] : run.counts) measured += counts.measured;
  // The run's own times (a replayed run's "after" is measured anew), else the logged records'.
  double before = !run.before_seconds.empty() ? MedianOf(run.before_seconds)
                  : facts.graph.before        ? facts.graph.before->seconds
                                              : 0;
  double after = !run.after_seconds.empty() ? MedianOf(run.after_seconds)
                 : facts.graph.after        ? facts.graph.after->seconds
                                            : 0;
  std::string out = "\n" + Rule();
  out += Line(fmt::format("tuning summary: {} (model hash {}), pipeline {}, {} measurements",
                          run.model, run.model_hash, pipeline_label, measured));
  std::string after_text =
      after > 0 ? FormatDuration(after)
                : "failed: " + (run.after_error.empty() ? std::string("not measured")
                                                        : ShortReason(run.after_error, 60));
  out += Line(fmt::format("latency before (default_heuristic) {}, after {}; speedup {}",
                          FormatDuration(before), after_text, Ratio(before, after)));
  out += Rule();
  out += Decisions(run) + KernelSearches(run, facts) + Evaluations(run) + Failures(facts);
  return out;
}

}  // namespace tandem::report
