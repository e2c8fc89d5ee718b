#include "tuning/measure/measure.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tandem::tuning {

MeasureResult MeasureResult::Failure(std::string reason) {
  MeasureResult result;
  result.error = reason.empty() ? "failed (no reason given)" : std::move(reason);
  return result;
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
