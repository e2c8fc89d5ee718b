#include "tools/option_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tandem::tools {

CLI::Validator IntegerIn(int64_t min, int64_t max) {
  std::string rule = max == INT64_MAX ? fmt::format("an integer >= {}", min)
                                      : fmt::format("an integer in [{}, {}]", min, max);
  return CLI::Validator(
      [min, max, rule](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error == std::errc::result_out_of_range) {
          return fmt::format("must be {} (at most {}), got '{}'", rule, max, text);
        }
        if (error != std::errc() || stop != end || value < min || value > max) {
          return fmt::format("must be {}, got '{}'", rule, text);
        }
        return "";
      },
      rule);
}

CLI::Validator FiniteNumber(double min, bool inclusive) {
  std::string rule = fmt::format("a finite number {} {:g}", inclusive ? ">=" : ">", min);
  return CLI::Validator(
      [min, inclusive, rule](std::string& text) -> std::string {
        char* stop = nullptr;
        double value = std::strtod(text.c_str(), &stop);
        bool parsed = !text.empty() && stop == text.c_str() + text.size();
        if (!parsed || !std::isfinite(value) || (inclusive ? value < min : value <= min)) {
          return fmt::format("must be {}, got '{}'", rule, text);
        }
        return "";
      },
      rule);
}

}  // namespace tandem::tools
