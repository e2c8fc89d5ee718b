#include "report/graph_section.h"

#include <fmt/format.h>

#include "report/html_text.h"
#include "report/svg_line_chart.h"

namespace tandem::report {

namespace {

// One series per pass; with `time` the x axis is the elapsed time instead of the measurements.
ChartSeries Series(const PassPoints& line, bool time, bool step) {
  ChartSeries series{line.pass};
  series.step = step;
  series.markers = true;
  for (const PlotPoint& point : line.points) {
    series.points.emplace_back(time ? point.elapsed_seconds : point.x, point.seconds);
    series.point_records.push_back(point.record.Text());
  }
  return series;
}

// Confirmations of every pass as one series of hollow-looking grey markers.
ChartSeries Confirmations(const GraphFacts& facts, bool time) {
  ChartSeries series{"confirmation (finalists re-measured together)"};
  series.line = false;
  series.color = "#888";
  for (const PassPoints& line : facts.confirmations) {
    for (const PlotPoint& point : line.points) {
      series.points.emplace_back(time ? point.elapsed_seconds : point.x, point.seconds);
      series.point_records.push_back(point.record.Text());
    }
  }
  return series;
}

}  // namespace

std::string GraphSectionHtml(const tuning::TuningRun& run, const GraphFacts& facts) {
  if (!facts.logged) {
    return run.graph_curve.empty()
               ? ""
               : "<p class=\"muted\">Graph-level curves are not drawn for this run: it was "
                 "recorded by an older Tandem, which did not keep which measurements were whole "
                 "modules and which were pieces of the model.</p>";
  }
  std::string html;
  if (!facts.end_to_end.empty()) {
    LineChart by_count{"Graph-level tuning: best end-to-end latency", "graph-level evaluations",
                       "best latency"};
    by_count.kind = "graph-end-to-end";
    LineChart by_time{"Graph-level tuning: best end-to-end latency over time", "elapsed",
                      "best latency"};
    by_time.kind = "graph-end-to-end-time";
    by_time.x_is_seconds = true;
    for (const PassPoints& line : facts.end_to_end) {
      by_count.series.push_back(Series(line, false, true));
      by_time.series.push_back(Series(line, true, true));
    }
    size_t confirmations = 0;
    for (const PassPoints& line : facts.confirmations) confirmations += line.points.size();
    if (confirmations > 0) {
      by_count.series.push_back(Confirmations(facts, false));
      by_time.series.push_back(Confirmations(facts, true));
    }
    std::string caption = fmt::format(
        "Whole modules only: {} distinct candidate{} of the model, each point a recorded "
        "end-to-end latency (hover for its record); one line per tuning pass, best so far{}",
        facts.whole_modules, facts.whole_modules == 1 ? "" : "s",
        confirmations > 0 ? fmt::format("; grey dots: {} confirmation{} (the median of all rounds)",
                                        confirmations, confirmations == 1 ? "" : "s")
                          : "");
    html += FigureHtml(by_count, caption) + FigureHtml(by_time, caption);
  }
  if (!facts.pieces.empty()) {
    LineChart pieces{"Pieces of the model measured alone", "graph-level evaluations",
                     "latency of the piece"};
    pieces.kind = "graph-pieces";
    for (const PassPoints& line : facts.pieces) {
      ChartSeries series = Series(line, false, false);
      series.line = false;
      pieces.series.push_back(std::move(series));
    }
    html += FigureHtml(
        pieces, fmt::format("Not end-to-end: {} piece{} (single convolutions, placement pieces) "
                            "measured alone to guide a decision; every measurement a dot",
                            facts.piece_modules, facts.piece_modules == 1 ? "" : "s"));
  }
  return html;
}

}  // namespace tandem::report
