#include "tuning/apply_history_best.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
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
          if (stats) {
            ++stats->from_database;
            stats->taken[hash] = ir::Trace::FromJson(record.trace_json);
          }
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

namespace {

constexpr const char* kSchedulesSuffix = " kernel schedules";

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void SetScheduleDecision(ir::Instruction& instruction,
                         const std::map<std::string, ir::Trace>& schedules) {
  instruction.nested.clear();
  for (const auto& [hash, trace] : schedules) {
    instruction.nested.push_back({hash, trace.instructions()});
  }
  instruction.decision = ir::AttrValue(fmt::format("{}{}", schedules.size(), kSchedulesSuffix));
}

bool CarriesSchedules(const ir::Instruction& instruction) {
  if (!instruction.decision || !std::holds_alternative<std::string>(*instruction.decision)) {
    return false;
  }
  const std::string& decision = std::get<std::string>(*instruction.decision);
  return (!decision.empty() && decision.front() == '{') || EndsWith(decision, kSchedulesSuffix);
}

std::map<std::string, ir::Trace> ScheduleDecision(const ir::Instruction& instruction) {
  if (!CarriesSchedules(instruction)) {
    throw ir::Error(
        fmt::format("{}: the instruction carries no kernel schedules", instruction.kind));
  }
  const std::string& decision = std::get<std::string>(*instruction.decision);
  std::map<std::string, ir::Trace> schedules;
  if (decision.front() != '{') {
    for (const ir::NestedTrace& nested : instruction.nested) {
      schedules.emplace(nested.label, ir::Trace(nested.instructions));
    }
    if (fmt::format("{}{}", schedules.size(), kSchedulesSuffix) != decision) {
      throw ir::Error(
          fmt::format("{}: the decision reads '{}' but {} distinct schedules are nested",
                      instruction.kind, decision, schedules.size()));
    }
    return schedules;
  }
  nlohmann::json map = nlohmann::json::parse(decision, nullptr, false);
  if (!map.is_object()) {
    throw ir::Error(fmt::format("{}: the decision is not a schedule map", instruction.kind));
  }
  for (const auto& [hash, trace] : map.items()) {
    if (!trace.is_string()) {
      throw ir::Error(fmt::format("{}: the schedule of {} is not a trace", instruction.kind, hash));
    }
    schedules.emplace(hash, ir::Trace::FromJson(trace.get<std::string>()));
  }
  return schedules;
}

kernels::SearchSpace SearchSpaceFor(const ir::Target& target, const std::string& descriptor) {
  kernels::SearchTarget search;
  if (target.vector_bits > 0) {
    search.vector_lanes = target.vector_bits / 32;
  } else if (std::string bits = DescriptorField(descriptor, "vector-bits"); !bits.empty()) {
    search.vector_lanes = std::stoi(bits) / 32;
  } else {
    // A descriptor written before they named the vector width: the enabled features.
    search.vector_lanes = descriptor.find("+avx512f") != std::string::npos ? 16 : 8;
  }
  search.num_cores = target.num_threads > 0
                         ? target.num_threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return kernels::DefaultCpuSearchSpace(search);
}

}  // namespace tandem::tuning
