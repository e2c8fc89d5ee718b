#include "tuning/apply_history_best.h"

#include <fmt/format.h>

#include <exception>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "tuning/task.h"

namespace tandem::tuning {

kernels::ScheduleProvider HistoryBestProvider(std::shared_ptr<const Database> database,
                                              std::string target_descriptor,
                                              kernels::SearchSpace space,
                                              std::shared_ptr<HistoryBestStats> stats) {
  return [database = std::move(database), target = std::move(target_descriptor),
          space = std::move(space), stats = std::move(stats)](
             const ir::KernelFunction& kernel) -> std::optional<ir::KernelFunction> {
    std::string hash = KernelWorkloadHash(kernel);
    std::vector<TuningRecord> records = database->Best(hash, target, 3);
    std::string first_reason;  // why the best record does not replay
    for (const TuningRecord& record : records) {
      std::string reason;
      try {
        std::optional<kernels::Schedule> schedule =
            kernels::ReplayProgram(kernel, ir::Trace::FromJson(record.trace_json), space, &reason);
        if (schedule) {
          if (stats) ++stats->from_database;
          return schedule->function();
        }
      } catch (const std::exception& e) {
        reason = e.what();  // a trace that does not parse any more
      }
      if (first_reason.empty()) first_reason = reason;  // and try the next record
    }
    if (stats) {
      ++stats->default_schedule;
      if (!records.empty() && stats->not_replayed.insert(hash).second &&
          stats->not_replayed.size() == 1) {
        stats->first_not_replayed =
            fmt::format("kernel {} (workload {}): {}", kernel.name, hash, first_reason);
      }
    }
    return std::nullopt;
  };
}

std::string NotReplayedNote(const HistoryBestStats& stats) {
  if (stats.not_replayed.empty()) return "";
  return fmt::format(
      "{} stored schedules no longer replay (first: {}); their kernels use default schedules",
      stats.not_replayed.size(), stats.first_not_replayed);
}

kernels::ScheduleProvider TraceMapProvider(std::map<std::string, ir::Trace> traces,
                                           kernels::SearchSpace space) {
  return [traces = std::move(traces), space = std::move(space)](
             const ir::KernelFunction& kernel) -> std::optional<ir::KernelFunction> {
    auto it = traces.find(KernelWorkloadHash(kernel));
    if (it == traces.end()) return std::nullopt;
    std::string why;
    std::optional<kernels::Schedule> schedule =
        kernels::ReplayProgram(kernel, it->second, space, &why);
    if (!schedule) {
      throw ir::Error("the recorded schedule of kernel " + kernel.name +
                      " no longer replays: " + why);
    }
    return schedule->function();
  };
}

kernels::SearchSpace SearchSpaceFor(const ir::Target& target, const std::string& descriptor) {
  kernels::SearchTarget search;
  if (target.vector_bits > 0) {
    search.vector_lanes = target.vector_bits / 32;
  } else {
    search.vector_lanes = descriptor.find("avx512f") != std::string::npos ? 16 : 8;
  }
  search.num_cores = target.num_threads > 0
                         ? target.num_threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return kernels::DefaultCpuSearchSpace(search);
}

}  // namespace tandem::tuning
