#include "report/html_text.h"

#include <fmt/format.h>

#include <cmath>

namespace tandem::report {

namespace {

// About three significant digits of a value in [1, 1000), without exponent notation.
std::string ThreeDigits(double value) {
  if (value < 10) return fmt::format("{:.2f}", value);
  if (value < 100) return fmt::format("{:.1f}", value);
  return fmt::format("{:.0f}", value);
}

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0) return "-";
  if (seconds < 1e-6) return fmt::format("{:.0f} ns", seconds * 1e9);
  if (seconds < 1e-3) return ThreeDigits(seconds * 1e6) + " us";
  if (seconds < 1) return ThreeDigits(seconds * 1e3) + " ms";
  if (seconds < 120) return ThreeDigits(seconds) + " s";
  return fmt::format("{}m {:02}s", static_cast<int64_t>(seconds) / 60,
                     static_cast<int64_t>(seconds) % 60);
}

std::string Shorten(const std::string& text, size_t max_length) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max_length && max_length > 3) line = line.substr(0, max_length - 3) + "...";
  return line;
}

}  // namespace tandem::report
