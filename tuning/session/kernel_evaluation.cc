// TuningSession::EvaluateKernels: measuring scheduled programs of one kernel task.
#include <fmt/format.h>

#include "backends/llvm/codegen.h"
#include "backends/reference/interpreter.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "ir/structural.h"
#include "kernels/default_schedule.h"
#include "tuning/session/record_reuse.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tuning {

std::string TuningSession::CandidateHash(const ir::KernelFunction& scheduled) {
  ir::KernelFunction unnamed = scheduled;
  unnamed.name = "";
  return ir::HashToHex(ir::StructuralHash(unnamed));
}

const TuningSession::Reference& TuningSession::KernelReferenceFor(const TuningTask& task) {
  auto it = kernel_references_.find(task.workload_hash);
  if (it != kernel_references_.end()) return it->second;
  // The default-scheduled kernel, compiled, is the reference: the kernel interpreter would take
  // minutes on the large convolutions, and the default schedules are checked against the
  // reference interpreter by the test suite.
  kernels::DefaultScheduleOptions defaults = backends::DefaultScheduleOptionsFor(target_);
  ir::IRModule module =
      SingleKernelModule(kernels::ApplyDefaultSchedule(task.kernel, defaults).function());
  Reference reference;
  reference.inputs = backends::RandomInputs(module.Get("main"), options_.seed);
  backends::BuildOptions build = build_options();
  build.function = "main";
  reference.expected = backends::Build(module, build)->Run(reference.inputs);
  return kernel_references_.emplace(task.workload_hash, std::move(reference)).first->second;
}

bool TuningSession::HasMeasuredSchedule(const std::string& workload_hash) const {
  return !database_->Best(workload_hash, target_descriptor_, 1).empty();
}

std::vector<MeasureResult> TuningSession::EvaluateKernels(
    const TuningTask& task, const std::vector<KernelCandidate>& candidates,
    const std::string& pass) {
  EvaluationCounts& counts = counts_[pass];
  std::vector<MeasureResult> results(candidates.size());
  std::vector<std::string> hashes(candidates.size());
  std::vector<size_t> to_measure;
  for (size_t i = 0; i < candidates.size(); ++i) {
    ++counts.requested;
    hashes[i] =
        candidates[i].hash.empty() ? CandidateHash(candidates[i].scheduled) : candidates[i].hash;
    std::optional<TuningRecord> record =
        database_->FindRecord(task.workload_hash, target_descriptor_, hashes[i]);
    if (record && RecordAnswersUnder(*record, options_.measure)) {
      if (!AcceptAnswer(JobTrialName(task.workload_hash, hashes[i]), counts)) {
        results[i] = MeasureResult::Failure(BudgetSpentReason());
        continue;
      }
      results[i] = record->ok() ? MeasureResult::FromRunSeconds(record->run_seconds, 0)
                                : MeasureResult::Failure(record->error);
      continue;
    }
    if (MeasurementsLeft() <= static_cast<int64_t>(to_measure.size())) {
      ++counts.over_budget;
      results[i] = MeasureResult::Failure(BudgetSpentReason());
      continue;
    }
    to_measure.push_back(i);
  }
  if (to_measure.empty()) return results;

  const Reference& reference = KernelReferenceFor(task);
  backends::BuildOptions build = build_options();
  build.function = "main";
  std::vector<ir::IRModule> modules;
  for (size_t i : to_measure) modules.push_back(SingleKernelModule(candidates[i].scheduled));
  std::vector<MeasureResult> measured = BuildAndRun(
      modules, build, [&](size_t) -> const Reference& { return reference; }, counts);

  database_->CommitWorkload({task.workload_hash, "kernel", ir::PrintKernel(task.kernel)});
  std::string measured_by = MeasuredByJson("kernel", options_.measure);
  for (size_t k = 0; k < to_measure.size(); ++k) {
    size_t i = to_measure[k];
    results[i] = std::move(measured[k]);
    TuningRecord record;
    record.workload_hash = task.workload_hash;
    record.candidate_hash = hashes[i];
    record.trace_json = candidates[i].trace.ToJson();
    record.measured_by = measured_by;
    CommitMeasurement(std::move(record), results[i], counts);
  }
  return results;
}

}  // namespace tandem::tuning
