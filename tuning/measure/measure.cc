#include "tuning/measure/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "backends/runtime/thread_pool.h"
#include "ir/error.h"

namespace tandem::tuning {

MeasureResult MeasureResult::Failure(std::string reason) {
  MeasureResult result;
  result.error = reason.empty() ? "failed (no reason given)" : std::move(reason);
  return result;
}

MeasureResult MeasureResult::SetupFailure(std::string reason) {
  MeasureResult result = Failure(std::move(reason));
  result.setup_failure = true;
  return result;
}

std::optional<std::string> MeasureOptionsProblem(const MeasureOptions& options) {
  auto number = [](const char* name, double value,
                   bool zero_allowed) -> std::optional<std::string> {
    if (std::isfinite(value) && (zero_allowed ? value >= 0 : value > 0)) return std::nullopt;
    return fmt::format("{} is {} (must be a finite number {} 0)", name, value,
                       zero_allowed ? ">=" : ">");
  };
  if (options.warmup_runs < 0) {
    return fmt::format("warmup_runs is {} (must be >= 0)", options.warmup_runs);
  }
  if (options.repeats < 1) return fmt::format("repeats is {} (must be >= 1)", options.repeats);
  if (auto problem = number("min_warmup_seconds", options.min_warmup_seconds, true)) return problem;
  if (auto problem = number("min_repeat_seconds", options.min_repeat_seconds, true)) return problem;
  if (auto problem = number("timeout_seconds", options.timeout_seconds, false)) return problem;
  if (auto problem = number("tolerance", options.tolerance, false)) return problem;
  if (options.num_threads < 0 || options.num_threads > backends::ThreadPool::kMaxThreads) {
    return fmt::format("num_threads is {} (must be in [0, {}])", options.num_threads,
                       backends::ThreadPool::kMaxThreads);
  }
  return std::nullopt;
}

void ValidateMeasureOptions(const MeasureOptions& options) {
  if (auto problem = MeasureOptionsProblem(options)) {
    throw ir::Error("invalid measure options: " + *problem);
  }
}

MeasureResult MeasureResult::FromRunSeconds(std::vector<double> run_seconds,
                                            double max_relative_error) {
  MeasureResult result;
  result.max_relative_error = max_relative_error;
  if (run_seconds.empty()) {
    result.error = "no timed runs";
    return result;
  }
  std::vector<double> sorted = run_seconds;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  result.median_seconds = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  double mean = 0;
  for (double s : sorted) mean += s;
  mean /= static_cast<double>(n);
  double variance = 0;
  for (double s : sorted) variance += (s - mean) * (s - mean);
  result.stddev_seconds = n > 1 ? std::sqrt(variance / static_cast<double>(n - 1)) : 0.0;
  result.run_seconds = std::move(run_seconds);
  return result;
}

}  // namespace tandem::tuning
