// Apply-history-best: build a module with the best recorded schedule of each of its kernels.
//
// HistoryBestProvider is a kernels::ScheduleProvider for Legalize: for a kernel it looks up the
// records of its workload (KernelWorkloadHash) on the target in the database, replays the best
// trace that still replays and passes the postprocessors, and falls back to the default
// schedule (by returning nullopt) when the database has nothing usable. The stats count how
// many kernels were served from the database, and how many fell back to the default schedule
// although the database had schedules for them (none of which replays any more: a change of
// the compiler since they were recorded), with the first reason, so that the user hears of it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "kernels/legalize.h"
#include "kernels/search/search_space.h"
#include "tuning/database/database.h"

namespace tandem::tuning {

// What HistoryBestProvider did, over every kernel it was asked for. Not synchronized: one
// provider call at a time.
struct HistoryBestStats {
  int64_t from_database = 0;
  int64_t default_schedule = 0;  // including the not_replayed ones
  // Workloads (distinct kernels, however often asked for) with stored schedules none of which
  // replays or passes postprocessing any more; they got the default schedule.
  // `first_not_replayed` says why the first of them did not, naming the kernel.
  std::set<std::string> not_replayed;
  std::string first_not_replayed;
  std::map<std::string, ir::Trace> taken;  // the schedule served per workload hash
  // Stored records whose trace does not decode (DecodeRecordTrace: corrupt or tampered), by
  // workload and candidate; they were skipped. `first_undecodable` says why the first did not.
  std::set<std::string> undecodable;
  std::string first_undecodable;

  // Adds the counts and not-replayed workloads of `other` (the first reason kept); not `taken`.
  void AddCounts(const HistoryBestStats& other);
};

// "N stored schedules no longer replay (first: <reason>); their kernels use default schedules",
// and "N stored records do not decode and were skipped (first: <reason>)", or "" when neither
// happened: what `tandem run` and `tandem tune` print.
std::string NotReplayedNote(const HistoryBestStats& stats);

kernels::ScheduleProvider HistoryBestProvider(std::shared_ptr<const Database> database,
                                              std::string target_descriptor,
                                              kernels::SearchSpace space,
                                              std::shared_ptr<HistoryBestStats> stats = nullptr);

// A provider that replays given traces by workload hash (the decision of a TuneKernels
// instruction); kernels without a trace get the default schedule.
kernels::ScheduleProvider TraceMapProvider(std::map<std::string, ir::Trace> traces,
                                           kernels::SearchSpace space);

// Kernel schedules chosen per workload as an instruction carries them: one nested trace per
// workload, labelled by its hash, in hash order; the decision says how many ("1 kernel
// schedule", "3 kernel schedules"). Replaying the instruction (ScheduleDecision) gives back exactly
// these schedules.
void SetScheduleDecision(ir::Instruction& instruction,
                         const std::map<std::string, ir::Trace>& schedules);
// Whether the instruction carries kernel schedules (either form ScheduleDecision reads).
bool CarriesSchedules(const ir::Instruction& instruction);
// The schedules an instruction carries: its nested traces, or, in instructions recorded before
// schedules were nested, the decision's JSON object mapping each workload hash to a trace's JSON.
// Error when neither form is there.
std::map<std::string, ir::Trace> ScheduleDecision(const ir::Instruction& instruction);

// The search space for a target: for "cuda", the GPU space of its architecture
// (kernels::DefaultGpuSearchSpace); otherwise the CPU space (vector width from its features or
// vector_bits, cores from its thread count).
kernels::SearchSpace SearchSpaceFor(const ir::Target& target, const std::string& descriptor);

}  // namespace tandem::tuning
