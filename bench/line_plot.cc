#include "bench/line_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::bench {

namespace {

std::string Escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `count` ticks over `span`.
double TickStep(double span, int count) {
  if (span <= 0) return 1;
  double raw = span / count;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

}  // namespace

std::string LinePlotSvg(const std::vector<PlotSeries>& series, const PlotOptions& options) {
  const double left = 70, right = 20, top = 40, bottom = 50;
  const double plot_w = options.width - left - right, plot_h = options.height - top - bottom;
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min;
  double y_min = x_min, y_max = -x_min;
  for (const PlotSeries& s : series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_min = std::min(x_min, x), x_max = std::max(x_max, x);
      y_min = std::min(y_min, y), y_max = std::max(y_max, y);
    }
  }
  if (!std::isfinite(x_min)) x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  y_min = std::min(0.0, y_min);
  if (x_max <= x_min) x_max = x_min + 1;
  if (y_max <= y_min) y_max = y_min + 1;
  y_max *= 1.05;
  auto px = [&](double x) { return left + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return top + plot_h - (y - y_min) / (y_max - y_min) * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{3}</text>\n",
      options.width, options.height, options.width / 2, Escaped(options.title));
  // Grid, ticks and axes.
  double x_step = TickStep(x_max - x_min, 8), y_step = TickStep(y_max - y_min, 6);
  for (double x = std::ceil(x_min / x_step) * x_step; x <= x_max + 1e-9; x += x_step) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
        px(x), top, top + plot_h, top + plot_h + 16, x);
  }
  for (double y = std::ceil(y_min / y_step) * y_step; y <= y_max + 1e-9; y += y_step) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        left, py(y), left + plot_w, left - 6, py(y) + 4, y);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n"
      "<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      left, top, plot_w, plot_h, left + plot_w / 2, options.height - 12, Escaped(options.x_label),
      top + plot_h / 2, Escaped(options.y_label));
  // Series and legend.
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    std::string path;
    double last_y = 0;
    bool first = true;
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (first) {
        path += fmt::format("M{:.1f},{:.1f}", px(x), py(y));
      } else {
        if (options.steps) path += fmt::format(" L{:.1f},{:.1f}", px(x), py(last_y));
        path += fmt::format(" L{:.1f},{:.1f}", px(x), py(y));
      }
      first = false;
      last_y = y;
    }
    if (!path.empty()) {
      svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path,
                         s.color);
    }
    double ly = top + 14 + 16 * static_cast<double>(k);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
        left + plot_w - 150, ly, left + plot_w - 130, s.color, left + plot_w - 124, ly + 4,
        Escaped(s.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tandem::bench
