// What a measurement of a candidate is and how it is taken.
//
// A MeasureResult is a value in every case: a candidate that fails to build, crashes, hangs or
// computes a wrong result gives a result with ok() false and a reason; tuning never stops
// because of one candidate.
#pragma once

#include <string>
#include <vector>

namespace tandem::tuning {

struct MeasureOptions {
  int warmup_runs = 1;                // untimed runs before the repeats, at least
  double min_warmup_seconds = 0.05;   // and untimed runs until this much time passed, for the
                                      // first candidate a worker process measures: a fresh
                                      // worker runs its first tens of milliseconds slower
                                      // (copy-on-write faults, new thread pools)
  int repeats = 5;                    // timed repeats; the median is the candidate's latency
  double min_repeat_seconds = 0.002;  // each repeat loops the program until this much time passed
  bool flush_cache = false;           // overwrite a buffer larger than the last-level cache
                                      // before every repeat
  double timeout_seconds = 30;        // per candidate, including warm-up; then it is killed
  double tolerance = 1e-4;            // largest accepted relative L2 error against the expected
                                      // outputs
  int num_threads = 0;                // threads for parallel loops; 0: every core

  bool operator==(const MeasureOptions& other) const = default;
};

// The outcome of measuring one candidate.
struct MeasureResult {
  // Empty when the candidate was measured; otherwise why not ("build failed: ...",
  // "crashed: signal 11 (SIGSEGV)", "timed out after 30 s", "wrong result: relative error
  // 0.31 > 0.0001 on output 0").
  std::string error;
  std::vector<double> run_seconds;  // seconds per run of each repeat
  double median_seconds = 0;
  double stddev_seconds = 0;
  double max_relative_error = 0;  // against the expected outputs (0 when none were given)

  bool ok() const { return error.empty(); }
  static MeasureResult Failure(std::string reason);
  // Fills median_seconds and stddev_seconds from run_seconds.
  static MeasureResult FromRunSeconds(std::vector<double> run_seconds, double max_relative_error);
};

}  // namespace tandem::tuning
