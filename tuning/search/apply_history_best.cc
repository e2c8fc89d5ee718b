#include "tuning/search/apply_history_best.h"

#include <fmt/format.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "tuning/database/record_trace.h"
#include "tuning/search/task.h"

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
        ir::Trace trace;
        try {
          trace = DecodeRecordTrace(record);
        } catch (const ir::Error& e) {
          if (stats && stats->undecodable.insert(hash + "/" + record.candidate_hash).second &&
              stats->undecodable.size() == 1) {
            stats->first_undecodable = e.message();
          }
          throw;
        }
        std::optional<kernels::Schedule> schedule =
            kernels::ReplayProgram(kernel, trace, space, &reason);
        if (schedule) {
          if (stats) {
            ++stats->from_database;
            stats->taken[hash] = std::move(trace);
          }
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
  std::string note;
  if (!stats.not_replayed.empty()) {
    note = fmt::format(
        "{} stored schedules no longer replay (first: {}); their kernels use default schedules",
        stats.not_replayed.size(), stats.first_not_replayed);
  }
  if (!stats.undecodable.empty()) {
    note +=
        fmt::format("{}{} stored records do not decode and were skipped (first: {})",
                    note.empty() ? "" : "; ", stats.undecodable.size(), stats.first_undecodable);
  }
  return note;
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

namespace {

// "0 kernel schedules", "1 kernel schedule", "2 kernel schedules".
std::string SchedulesDecision(size_t count) {
  return fmt::format("{} kernel schedule{}", count, count == 1 ? "" : "s");
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void HistoryBestStats::AddCounts(const HistoryBestStats& other) {
  from_database += other.from_database;
  default_schedule += other.default_schedule;
  not_replayed.insert(other.not_replayed.begin(), other.not_replayed.end());
  if (first_not_replayed.empty()) first_not_replayed = other.first_not_replayed;
  undecodable.insert(other.undecodable.begin(), other.undecodable.end());
  if (first_undecodable.empty()) first_undecodable = other.first_undecodable;
}

void SetScheduleDecision(ir::Instruction& instruction,
                         const std::map<std::string, ir::Trace>& schedules) {
  instruction.nested.clear();
  for (const auto& [hash, trace] : schedules) {
    instruction.nested.push_back({hash, trace.instructions()});
  }
  instruction.decision = ir::AttrValue(SchedulesDecision(schedules.size()));
}

bool CarriesSchedules(const ir::Instruction& instruction) {
  if (!instruction.decision || !std::holds_alternative<std::string>(*instruction.decision)) {
    return false;
  }
  const std::string& decision = std::get<std::string>(*instruction.decision);
  return (!decision.empty() && decision.front() == '{') || EndsWith(decision, " kernel schedule") ||
         EndsWith(decision, " kernel schedules");
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
    if (SchedulesDecision(schedules.size()) != decision) {
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
  if (target.kind == "cuda") {
    return kernels::DefaultGpuSearchSpace(kernels::GpuSearchTarget(
        target.arch.empty() ? ir::CudaArchitectures().front() : target.arch));
  }
  kernels::SearchTarget search;
  if (target.vector_bits > 0) {
    search.vector_lanes = target.vector_bits / 32;
  } else if (std::string bits = DescriptorField(descriptor, "vector-bits"); !bits.empty()) {
    search.vector_lanes = std::stoi(bits) / 32;
  } else {
    // A descriptor written before they named the vector width: the enabled features.
    search.vector_lanes = descriptor.find("+avx512f") != std::string::npos ? 16 : 8;
  }
  search.core = backends::DefaultScheduleOptionsFor(target).core;
  search.num_cores = target.num_threads > 0
                         ? target.num_threads
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return kernels::DefaultCpuSearchSpace(search);
}

}  // namespace tandem::tuning
