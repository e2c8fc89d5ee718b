// Line charts as inline SVG, for the tuning report: tuning curves (latency against trials,
// measurements or time), drawn without scripts or external resources so that the page is one
// self-contained file.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tandem::report {

struct ChartSeries {
  std::string name;                               // legend label ("" for none)
  std::vector<std::pair<double, double>> points;  // (x, y), in drawing order
  bool line = true;      // false: markers only (a scatter of single measurements)
  bool step = false;     // horizontal then vertical segments (best-so-far curves)
  bool markers = false;  // a dot at every point
  std::string color;     // CSS color; "" takes the next of a fixed palette
  // Where each point's value comes from (the text of a report::RecordRef, parallel to `points`;
  // empty: not given). Given, every point gets a marker carrying data-record="..." and its exact
  // value as data-seconds="..." (and a tooltip), so a reader or a test finds its record.
  std::vector<std::string> point_records;
  // The values are sums over records, not one record's: the markers then carry data-sum="..."
  // and data-lowered-by="..." (the record that last changed the sum) instead.
  bool values_are_sums = false;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool x_is_seconds = false;  // tick labels as durations (else as numbers)
  bool y_is_seconds = true;
  int width = 420;
  int height = 240;
  std::vector<ChartSeries> series;
  std::string kind;  // the <svg>'s data-chart attribute ("" for none), e.g. "graph-end-to-end"
};

// One <svg> element: axes with ticks, a polyline per series (colored from a fixed palette) and a
// legend when more than one series is named. A chart without points says "no data". Every text
// is escaped.
std::string RenderLineChart(const LineChart& chart);

// The chart in a <figure> with `caption` (HTML, not escaped) as its <figcaption>.
std::string FigureHtml(const LineChart& chart, const std::string& caption);

}  // namespace tandem::report
