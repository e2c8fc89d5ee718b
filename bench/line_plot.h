// A minimal SVG line chart for tuning curves (best latency against trials): self-contained
// markup, no scripts or external resources, so a browser or an image viewer shows it as is.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tandem::bench {

struct PlotSeries {
  std::string label;
  std::string color;                              // any SVG colour ("#1f77b4")
  std::vector<std::pair<double, double>> points;  // (x, y), x increasing
};

struct PlotOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  int width = 640;
  int height = 400;
  bool steps = true;  // draw each series as a step function (best-so-far curves)
};

// The chart as an SVG document. Series without points are listed in the legend only; an empty
// chart (no points at all) still renders its axes and title.
std::string LinePlotSvg(const std::vector<PlotSeries>& series, const PlotOptions& options);

}  // namespace tandem::bench
