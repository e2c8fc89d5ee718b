// What a measurement of a candidate is and how it is taken.
//
// A MeasureResult is a value in every case: a candidate that fails to build, crashes, hangs or
// computes a wrong result gives a result with ok() false and a reason; tuning never stops
// because of one candidate.
#pragma once

#include <optional>
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

// Why `options` cannot measure anything, naming the field and its rule ("repeats is 0 (must be
// >= 1)"); nullopt when they can. The rules: warmup_runs >= 0, min_warmup_seconds >= 0,
// repeats >= 1, min_repeat_seconds >= 0, timeout_seconds > 0, tolerance > 0, every number
// finite, num_threads in [0, backends::ThreadPool::kMaxThreads].
std::optional<std::string> MeasureOptionsProblem(const MeasureOptions& options);
// Throws ir::Error("invalid measure options: ...") when MeasureOptionsProblem finds a problem:
// called before anything is measured, so that a bad option is one error, not a failure of every
// candidate.
void ValidateMeasureOptions(const MeasureOptions& options);

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
  // The failure was caused by the measuring setup (invalid options, a worker process that could
  // not be started, memory exhausted while measuring), not by the candidate: it says nothing about
  // the candidate, so it is never committed as the candidate's result (TuningSession turns it into
  // a run error).
  bool setup_failure = false;

  bool ok() const { return error.empty(); }
  static MeasureResult Failure(std::string reason);
  static MeasureResult SetupFailure(std::string reason);
  // Fills median_seconds and stddev_seconds from run_seconds.
  static MeasureResult FromRunSeconds(std::vector<double> run_seconds, double max_relative_error);
};

}  // namespace tandem::tuning
