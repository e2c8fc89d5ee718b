#include "report/svg_line_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/html_text.h"

namespace tandem::report {

namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr size_t kMaxLegendEntries = 6;

// Evenly spaced "nice" tick values (steps of 1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> Ticks(double lo, double hi) {
  double span = hi - lo;
  if (!(span > 0)) return {lo};
  double raw = span / 4;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power * (raw / power < 1.5   ? 1
                         : raw / power < 3.5 ? 2
                         : raw / power < 7.5 ? 5
                                             : 10);
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

std::string TickLabel(double value, bool seconds) {
  if (value == 0) return "0";
  if (seconds) return FormatDuration(value);
  if (value == std::floor(value) && std::abs(value) < 1e12) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  return fmt::format("{:.3g}", value);
}

}  // namespace

std::string RenderLineChart(const LineChart& chart) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  size_t named = 0;
  for (const ChartSeries& series : chart.series) {
    if (!series.name.empty()) ++named;
    for (const auto& [x, y] : series.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  bool legend = named > 1;
  size_t legend_lines = legend ? std::min(named, kMaxLegendEntries + 1) : 0;
  const double left = 64, right = 12, top = 26 + 14.0 * legend_lines, bottom = 40;
  const double width = chart.width, height = chart.height + 14.0 * legend_lines;
  const double plot_w = width - left - right, plot_h = height - top - bottom;

  std::string svg = fmt::format(
      "<svg class=\"chart\"{4} xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\"><title>{2}</title>"
      "<text x=\"{3}\" y=\"15\" class=\"chart-title\" font-size=\"13\" "
      "font-weight=\"bold\">{2}</text>",
      width, height, HtmlEscape(chart.title), left,
      chart.kind.empty() ? "" : " data-chart=\"" + HtmlEscape(chart.kind) + "\"");
  if (!std::isfinite(x_lo)) {
    return svg + fmt::format(
                     "<text x=\"{}\" y=\"{}\" class=\"no-data\" font-size=\"12\" "
                     "text-anchor=\"middle\">no data"
                     "</text></svg>",
                     width / 2, height / 2);
  }
  if (x_hi == x_lo) x_lo -= 1, x_hi += 1;
  double pad = (y_hi - y_lo) * 0.05;
  if (pad == 0) pad = std::abs(y_hi) * 0.05 + 1e-12;
  y_lo = std::max(0.0, y_lo - pad), y_hi += pad;
  auto px = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * plot_w; };
  auto py = [&](double y) { return top + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h; };

  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fbfbfb\" stroke=\"#bbb\"/>", left,
      top, plot_w, plot_h);
  for (double t : Ticks(y_lo, y_hi)) {
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" class=\"tick\" font-size=\"10\" "
        "text-anchor=\"end\">{5}</text>",
        left, left + plot_w, py(t), left - 4, py(t) + 4,
        HtmlEscape(TickLabel(t, chart.y_is_seconds)));
  }
  for (double t : Ticks(x_lo, x_hi)) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" class=\"tick\" font-size=\"10\" "
        "text-anchor=\"middle\">{4}</text>",
        px(t), top, top + plot_h, top + plot_h + 14, HtmlEscape(TickLabel(t, chart.x_is_seconds)));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"axis\" font-size=\"11\" text-anchor=\"middle\">{}</text>"
      "<text x=\"12\" y=\"{}\" class=\"axis\" font-size=\"11\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 12 {})\">{}</text>",
      left + plot_w / 2, height - 6, HtmlEscape(chart.x_label), top + plot_h / 2, top + plot_h / 2,
      HtmlEscape(chart.y_label));

  size_t legend_index = 0;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const ChartSeries& series = chart.series[s];
    std::string color = series.color.empty() ? kPalette[s % std::size(kPalette)] : series.color;
    std::string points;
    std::string markers;
    double last_y = 0;
    bool first = true;
    for (size_t p = 0; p < series.points.size(); ++p) {
      auto [x, y] = series.points[p];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (series.step && !first) points += fmt::format("{:.1f},{:.1f} ", px(x), py(last_y));
      points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      if (p < series.point_records.size()) {
        std::string value = chart.y_is_seconds ? FormatDuration(y) : fmt::format("{:.4g}", y);
        markers += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" {}=\"{:.17g}\" "
            "{}=\"{}\"><title>{}: {} ({} {})</title></circle>",
            px(x), py(y), series.markers || !series.line ? 2.5 : 1.8, color,
            series.values_are_sums ? "data-sum" : "data-seconds", y,
            series.values_are_sums ? "data-lowered-by" : "data-record",
            HtmlEscape(series.point_records[p]), HtmlEscape(series.name), value,
            series.values_are_sums ? "last lowered by record" : "record",
            HtmlEscape(series.point_records[p]));
      } else if (series.markers || !series.line || series.points.size() == 1) {
        markers += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", px(x),
                               py(y), color);
      }
      last_y = y, first = false;
    }
    if (points.empty()) continue;
    points.pop_back();
    if (series.line) {
      svg += fmt::format(
          "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\">"
          "<title>{}</title></polyline>",
          points, color, HtmlEscape(series.name));
    }
    svg += markers;
    if (legend && !series.name.empty()) {
      double y = 32 + 14.0 * legend_index;
      if (legend_index < kMaxLegendEntries) {
        svg += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"3\"/>"
            "<text x=\"{4}\" y=\"{5}\" class=\"legend\" font-size=\"11\">{6}</text>",
            left, left + 16, y - 4, color, left + 20, y, HtmlEscape(Shorten(series.name, 60)));
      } else if (legend_index == kMaxLegendEntries) {
        svg += fmt::format(
            "<text x=\"{}\" y=\"{}\" class=\"legend\" font-size=\"11\">and {} more</text>", left, y,
            named - kMaxLegendEntries);
      }
      ++legend_index;
    }
  }
  return svg + "</svg>";
}

std::string FigureHtml(const LineChart& chart, const std::string& caption) {
  return "<figure>" + RenderLineChart(chart) + "<figcaption>" + caption + "</figcaption></figure>";
}

}  // namespace tandem::report
