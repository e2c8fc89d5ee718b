#include "tuning/apply_history_best.h"

#include <thread>

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
    for (const TuningRecord& record : database->Best(hash, target, 3)) {
      try {
        std::optional<kernels::Schedule> schedule =
            kernels::ReplayProgram(kernel, ir::Trace::FromJson(record.trace_json), space);
        if (schedule) {
          if (stats) ++stats->from_database;
          return schedule->function();
        }
      } catch (const ir::Error&) {
        // Not replayable any more: try the next record.
      }
    }
    if (stats) ++stats->default_schedule;
    return std::nullopt;
  };
}

kernels::ScheduleProvider TraceMapProvider(std::map<std::string, ir::Trace> traces,
                                           kernels::SearchSpace space) {
  return [traces = std::move(traces), space = std::move(space)](
             const ir::KernelFunction& kernel) -> std::optional<ir::KernelFunction> {
    auto it = traces.find(KernelWorkloadHash(kernel));
    if (it == traces.end()) return std::nullopt;
    std::optional<kernels::Schedule> schedule = kernels::ReplayProgram(kernel, it->second, space);
    if (!schedule) {
      throw ir::Error("the recorded schedule of kernel " + kernel.name + " no longer replays");
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
