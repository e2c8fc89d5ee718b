// MeasureHere (shared by both runners) and InProcessRunner.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include "backends/runtime/thread_pool.h"
#include "ir/error.h"
#include "tuning/measure/runner.h"

namespace tandem::tuning {

namespace {

// Larger than the last-level cache of the CPUs Tandem targets.
constexpr size_t kFlushBytes = size_t{64} << 20;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Compares `outputs` with `expected`; on a mismatch returns the failure reason. Sets
// `max_relative_error` to the largest relative L2 error over the outputs.
std::optional<std::string> CheckOutputs(const std::vector<ir::Tensor>& outputs,
                                        const std::vector<ir::Tensor>& expected, double tolerance,
                                        double* max_relative_error) {
  *max_relative_error = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].shape() != expected[i].shape()) {
      return fmt::format("wrong result: output {} is {} but the expected output is {}", i,
                         ir::ToString(outputs[i].type()), ir::ToString(expected[i].type()));
    }
    double error = ir::RelativeError(outputs[i], expected[i]);
    // NaN compares false with everything: it is never accepted.
    if (!(error <= tolerance)) {
      *max_relative_error = error;
      return fmt::format("wrong result: relative error {:.3g} > {:g} on output {}", error,
                         tolerance, i);
    }
    *max_relative_error = std::max(*max_relative_error, error);
  }
  return std::nullopt;
}

// Evicts the caches by writing a buffer larger than the last-level cache.
void FlushCache(std::vector<unsigned char>& buffer, unsigned char value) {
  std::memset(buffer.data(), value, buffer.size());
  // Keeps the compiler from dropping the writes to a buffer that is never read.
  asm volatile("" : : "r"(buffer.data()) : "memory");
}

}  // namespace

MeasureResult MeasureHere(const RunInput& input, const MeasureOptions& options) {
  if (!input.executable) return MeasureResult::Failure("no executable to measure");
  if (auto problem = MeasureOptionsProblem(options)) {
    return MeasureResult::SetupFailure("invalid measure options: " + *problem);
  }
  try {
    backends::Executable& executable = *input.executable;
    std::vector<ir::Tensor> outputs;
    for (const ir::TensorType& type : executable.output_types()) outputs.emplace_back(type);
    if (!input.expected.empty() && input.expected.size() != outputs.size()) {
      return MeasureResult::Failure(
          fmt::format("wrong result: {} expected outputs were given but the candidate has {}",
                      input.expected.size(), outputs.size()));
    }
    double max_relative_error = 0;
    bool checked = input.expected.empty();
    // A wrong result is a failure that still reports its error.
    auto check = [&]() -> std::optional<MeasureResult> {
      checked = true;
      auto failure = CheckOutputs(outputs, input.expected, options.tolerance, &max_relative_error);
      if (!failure) return std::nullopt;
      MeasureResult result = MeasureResult::Failure(*failure);
      result.max_relative_error = max_relative_error;
      return result;
    };

    Clock::time_point warmup_start = Clock::now();
    for (int w = 0; w < options.warmup_runs ||
                    (w > 0 && SecondsSince(warmup_start) < options.min_warmup_seconds);
         ++w) {
      executable.RunInto(input.inputs, outputs);
      // A wrong result fails early, before the timed runs.
      if (!checked) {
        if (auto failure = check()) return *failure;
      }
    }
    std::vector<unsigned char> flush_buffer;
    if (options.flush_cache) flush_buffer.resize(kFlushBytes);
    std::vector<double> run_seconds;
    run_seconds.reserve(static_cast<size_t>(options.repeats));
    for (int r = 0; r < options.repeats; ++r) {
      if (options.flush_cache) FlushCache(flush_buffer, static_cast<unsigned char>(r + 1));
      int64_t runs = 0;
      Clock::time_point start = Clock::now();
      double elapsed = 0;
      do {
        executable.RunInto(input.inputs, outputs);
        ++runs;
        elapsed = SecondsSince(start);
      } while (elapsed < options.min_repeat_seconds);
      run_seconds.push_back(elapsed / static_cast<double>(runs));
    }
    if (!checked) {
      if (auto failure = check()) return *failure;
    }
    return MeasureResult::FromRunSeconds(std::move(run_seconds), max_relative_error);
  } catch (const std::bad_alloc&) {
    // Memory is a property of the machine at this moment (other processes, other workers), not
    // of the candidate: not its result.
    return MeasureResult::SetupFailure(
        "out of memory while measuring (the machine has too little free memory for this "
        "candidate's inputs, outputs and buffers)");
  } catch (const std::exception& e) {
    return MeasureResult::Failure(fmt::format("run failed: {}", e.what()));
  } catch (...) {
    return MeasureResult::Failure("run failed: unknown exception");
  }
}

std::vector<MeasureResult> InProcessRunner::Run(const std::vector<RunInput>& inputs,
                                                const MeasureOptions& options) {
  // options.num_threads applies while this batch runs; the pool's previous count comes back
  // afterwards.
  backends::ThreadPool& pool = backends::ThreadPool::Global();
  int previous_threads = pool.num_threads();
  if (!MeasureOptionsProblem(options)) {
    int threads = options.num_threads > 0
                      ? options.num_threads
                      : std::clamp<int>(static_cast<int>(std::thread::hardware_concurrency()), 1,
                                        backends::ThreadPool::kMaxThreads);
    pool.SetNumThreads(threads);
  }
  std::vector<MeasureResult> results;
  results.reserve(inputs.size());
  for (const RunInput& input : inputs) results.push_back(MeasureHere(input, options));
  pool.SetNumThreads(previous_threads);
  return results;
}

}  // namespace tandem::tuning
