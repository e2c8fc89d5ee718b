#include "tuning/session/tuning_session.h"
#include "tuning/session/record_reuse.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "backends/external/external_backend.h"
#include "backends/reference/interpreter.h"
#include "backends/target/resolved_target.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural.h"

namespace tandem::tuning {

namespace {

// The parameter and result types of a function: candidates with the same signature compute the
// same function (every pass preserves semantics), so they share one reference.
std::string Signature(const ir::IRModule& module, const std::string& function_name) {
  const ir::GraphFunction& function = module.Get(function_name);
  std::string text = function.name + "(";
  for (ir::ValueId p : function.params) text += ir::ToString(function.type_of(p)) + ",";
  text += ")->" + ir::ToString(function.type_of(function.output));
  if (module.attrs().Has(kReferenceKeyAttr))
    text += "#" + module.attrs().GetString(kReferenceKeyAttr);
  return text;
}

}  // namespace

std::string GraphWorkloadText(const ir::IRModule& module) {
  ir::PrintOptions options;
  options.max_constant_bytes = 256;
  return ir::PrintModule(module, options);
}

EvaluationCounts& EvaluationCounts::operator+=(const EvaluationCounts& other) {
  requested += other.requested;
  reused += other.reused;
  measured += other.measured;
  failed += other.failed;
  over_budget += other.over_budget;
  confirmed += other.confirmed;
  build_seconds += other.build_seconds;
  run_seconds += other.run_seconds;
  return *this;
}

TuningSession::TuningSession(ir::Target target, std::shared_ptr<Database> database,
                             std::shared_ptr<Builder> builder, std::shared_ptr<Runner> runner,
                             Options options)
    : target_(backends::ResolveTarget(target)),
      target_descriptor_(options.target_descriptor.empty() ? RecordKey(target_, options.measure)
                                                           : options.target_descriptor),
      database_(std::move(database)),
      builder_(std::move(builder)),
      runner_(std::move(runner)),
      options_(std::move(options)),
      random_(options_.seed) {
  if (target_.kind != "llvm") {
    throw ir::Error(
        fmt::format("tuning for the {} target is not supported yet (Tandem tunes "
                    "CPU code; {} kernels get their default schedules)",
                    target_.kind, target_.kind));
  }
  if (!database_ || !builder_ || !runner_) {
    throw ir::Error("TuningSession needs a database, a builder and a runner");
  }
  if (options_.measure.num_threads == 0) options_.measure.num_threads = target_.num_threads;
  ValidateMeasureOptions(options_.measure);
  // External libraries fix what follows the target (oneDNN's instruction set) once per process;
  // where this process already fixed it for another target, the session goes on (runs that
  // place nothing on that backend are unaffected) and says so. A build that runs that backend's
  // code for this target is then an error (backends::Build).
  const backends::ExternalBackendRegistry& registry = backends::ExternalBackendRegistry::Global();
  for (const std::string& name : registry.Names()) {
    try {
      registry.Get(name).PrepareForTarget(target_);
    } catch (const ir::Error& e) {
      Warn(e.message());
    }
  }
}

std::shared_ptr<TuningSession> TuningSession::MakeDefault(const ir::Target& target, uint64_t seed) {
  Options options;
  options.seed = seed;
  return std::make_shared<TuningSession>(target, MakeInMemoryDatabase(),
                                         std::make_shared<LocalBuilder>(),
                                         std::make_shared<ProcessRunner>(), options);
}

std::string TuningSession::CostModelBlobName(const std::string& kind) const {
  // Everything but the measurement options: the model predicts one target's code.
  std::string target = target_descriptor_.substr(0, target_descriptor_.find("|measure="));
  ir::StableHasher hasher;
  hasher.Update(target);
  return fmt::format("cost_model.{}.{}", kind, ir::HashToHex(hasher.Digest()));
}

backends::BuildOptions TuningSession::build_options() const {
  return backends::BuildOptionsFor(target_, options_.function);
}

EvaluationCounts TuningSession::TotalCounts() const {
  EvaluationCounts total;
  for (const auto& [pass, counts] : counts_) total += counts;
  return total;
}

namespace {
constexpr const char* kTimeBudgetSpent = "time budget spent";
constexpr const char* kTrialBudgetSpent = "trial budget spent";
}  // namespace

std::string TuningSession::BudgetSpentReason() const {
  return options_.max_seconds > 0 && ElapsedSeconds() >= options_.max_seconds ? kTimeBudgetSpent
                                                                              : kTrialBudgetSpent;
}

bool TuningSession::IsOverBudget(const MeasureResult& result) {
  return result.error == kTimeBudgetSpent || result.error == kTrialBudgetSpent;
}

bool TuningSession::BudgetSpent() const {
  return RemainingBudget() == 0;
}

void TuningSession::EnsureReference(const ir::IRModule& module) {
  std::string signature = Signature(module, options_.function);
  if (!references_.count(signature)) reference_modules_.emplace(signature, module);
}

const TuningSession::Reference& TuningSession::ReferenceFor(const ir::IRModule& module) {
  std::string signature = Signature(module, options_.function);
  auto it = references_.find(signature);
  if (it != references_.end()) return it->second;
  auto registered = reference_modules_.find(signature);
  const ir::IRModule& semantics =
      registered != reference_modules_.end() ? registered->second : module;
  Reference reference;
  reference.inputs = backends::RandomInputs(semantics.Get(options_.function), options_.seed);
  reference.expected = backends::RunReference(semantics, reference.inputs, options_.function);
  if (registered != reference_modules_.end()) reference_modules_.erase(registered);
  return references_.emplace(signature, std::move(reference)).first->second;
}

std::vector<MeasureResult> TuningSession::BuildAndRun(
    const std::vector<ir::IRModule>& modules, const backends::BuildOptions& build,
    const std::function<const Reference&(size_t)>& reference_for, EvaluationCounts& counts,
    int rounds, const MeasureOptions* measure) {
  std::vector<MeasureResult> results(modules.size());
  std::vector<BuildInput> build_inputs;
  for (const ir::IRModule& module : modules) build_inputs.push_back({module, build});
  std::vector<BuildOutput> built = builder_->Build(build_inputs);
  std::vector<RunInput> run_inputs;
  std::vector<size_t> run_index;
  for (size_t k = 0; k < modules.size(); ++k) {
    counts.build_seconds += built[k].seconds;
    if (!built[k].ok()) {
      results[k] = MeasureResult::Failure(built[k].error);
      continue;
    }
    const Reference& reference = reference_for(k);
    run_inputs.push_back({built[k].executable, reference.inputs, reference.expected});
    run_index.push_back(k);
  }
  rounds = std::max(rounds, 1);
  std::vector<RunInput> interleaved;
  for (int r = 0; r < rounds; ++r) {
    interleaved.insert(interleaved.end(), run_inputs.begin(), run_inputs.end());
  }
  std::vector<MeasureResult> measured =
      runner_->Run(interleaved, measure != nullptr ? *measure : options_.measure);
  // A failure of the measuring setup (invalid options, a worker that could not start, memory
  // exhausted while measuring) says nothing about the candidates: the run stops with it and
  // nothing of this batch is committed.
  for (const MeasureResult& result : measured) {
    if (result.setup_failure) {
      throw ir::Error(
          fmt::format("measuring failed for a reason outside the candidates: {} (nothing "
                      "of this batch was recorded)",
                      result.error));
    }
  }
  for (size_t k = 0; k < run_index.size(); ++k) {
    std::vector<double> pooled;
    double max_relative_error = 0;
    MeasureResult merged;
    for (int r = 0; r < rounds && merged.ok(); ++r) {
      const MeasureResult& one = measured[static_cast<size_t>(r) * run_index.size() + k];
      if (!one.ok()) merged = one;
      pooled.insert(pooled.end(), one.run_seconds.begin(), one.run_seconds.end());
      max_relative_error = std::max(max_relative_error, one.max_relative_error);
    }
    if (merged.ok()) merged = MeasureResult::FromRunSeconds(std::move(pooled), max_relative_error);
    results[run_index[k]] = std::move(merged);
  }
  return results;
}

void TuningSession::CommitMeasurement(TuningRecord record, const MeasureResult& result,
                                      EvaluationCounts& counts, bool confirmation, bool charged) {
  if (confirmation) {
    ++counts.confirmed;
  } else {
    ++counts.measured;
    if (!result.ok()) ++counts.failed;
  }
  for (double s : result.run_seconds) counts.run_seconds += s;
  record.target = target_descriptor_;
  record.run_seconds = result.run_seconds;
  record.error = result.error;
  record.measured_at = NowUtc();
  if (charged && !confirmation && !job_.empty()) {
    database_->CommitChargedRecord(record, job_);
  } else {
    database_->CommitRecord(record);
  }
}

int64_t TuningSession::ChargedMeasurements() const {
  return TotalCounts().measured - uncharged_measurements_ + charged_answers_;
}

bool TuningSession::AcceptAnswer(const std::string& key, EvaluationCounts& counts) {
  // Replaying a fixture, every first answer stands for a measurement; resuming a job, the first
  // answer of each of its earlier runs' trials does (the searches spend the budget as the
  // uninterrupted run would).
  bool charge = !answered_.count(key) && (options_.charge_first_answers || job_trials_.count(key));
  if (charge) {
    if (RemainingBudget() <= 0) {
      ++counts.over_budget;
      return false;
    }
    answered_.insert(key);
    ++charged_answers_;
  }
  ++counts.reused;
  return true;
}

int64_t TuningSession::RemainingBudget() const {
  if (options_.max_seconds > 0 && ElapsedSeconds() >= options_.max_seconds) return 0;
  int64_t charged = ChargedMeasurements();
  int64_t remaining = std::numeric_limits<int64_t>::max();
  if (options_.max_measurements > 0) remaining = options_.max_measurements - charged;
  for (const BudgetShare& share : budget_shares_) {
    remaining = std::min(remaining, share.trials - (charged - share.measured_at_start));
  }
  return std::max<int64_t>(0, remaining);
}

int64_t TuningSession::MeasurementsLeft() const {
  int64_t left = RemainingBudget();
  if (options_.max_measurements > 0 && !job_.empty()) {
    // New measurements never take the job past its budget, whatever the answers replayed.
    int64_t measured = TotalCounts().measured - uncharged_measurements_;
    left = std::min(left, options_.max_measurements - resumed_trials_ - measured);
  }
  return std::max<int64_t>(0, left);
}

int64_t TuningSession::ContinueJob(const std::string& job, bool restart) {
  EvaluationCounts total = TotalCounts();
  if (total.measured > 0 || total.confirmed > 0 || charged_answers_ > 0) {
    throw ir::Error(fmt::format("tuning job '{}' joined after this run measured candidates", job));
  }
  if (job.empty()) throw ir::Error("a tuning job needs a key");
  if (restart) database_->ResetJob(job);
  job_ = job;
  std::vector<std::string> trials = database_->JobTrials(job);
  job_trials_ = std::set<std::string>(trials.begin(), trials.end());
  resumed_trials_ = static_cast<int64_t>(job_trials_.size());
  return resumed_trials_;
}

void TuningSession::PushBudgetShare(int64_t trials) {
  budget_shares_.push_back({ChargedMeasurements(), trials});
}

void TuningSession::PopBudgetShare() {
  if (budget_shares_.empty()) throw ir::Error("PopBudgetShare without a PushBudgetShare");
  budget_shares_.pop_back();
}

double TuningSession::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::vector<MeasureResult> TuningSession::EvaluateModules(
    const std::vector<EvaluationRequest>& requests, const std::string& pass, bool charge_budget) {
  EvaluationCounts& counts = counts_[pass];
  std::vector<MeasureResult> results(requests.size());
  std::vector<std::string> hashes(requests.size());
  std::vector<size_t> to_measure;
  std::vector<int64_t> same_as(requests.size(), -1);  // a duplicate of an earlier request
  for (size_t i = 0; i < requests.size(); ++i) {
    ++counts.requested;
    hashes[i] = ir::HashToHex(ir::StructuralHash(requests[i].module));
    std::optional<TuningRecord> record = database_->FindRecord(hashes[i], target_descriptor_, "");
    if (record && RecordAnswersUnder(*record, options_.measure)) {
      if (!AcceptAnswer(JobTrialName(hashes[i], ""), counts)) {
        results[i] = MeasureResult::Failure(BudgetSpentReason());
        continue;
      }
      results[i] = record->ok() ? MeasureResult::FromRunSeconds(record->run_seconds, 0)
                                : MeasureResult::Failure(record->error);
      LogGraphEvaluation(pass, requests[i].module, hashes[i], "", /*reused=*/true);
      continue;
    }
    // The same module twice in one batch is measured once.
    for (size_t j : to_measure) {
      if (hashes[j] == hashes[i]) same_as[i] = static_cast<int64_t>(j);
    }
    if (same_as[i] >= 0) continue;
    if (charge_budget && MeasurementsLeft() <= static_cast<int64_t>(to_measure.size())) {
      ++counts.over_budget;
      results[i] = MeasureResult::Failure(BudgetSpentReason());
      continue;
    }
    to_measure.push_back(i);
  }

  if (!to_measure.empty()) {
    std::vector<ir::IRModule> modules;
    for (size_t i : to_measure) modules.push_back(requests[i].module);
    std::vector<MeasureResult> measured = BuildAndRun(
        modules, build_options(),
        [&](size_t k) -> const Reference& { return ReferenceFor(modules[k]); }, counts);
    std::string measured_by = MeasuredByJson("graph", options_.measure);
    if (!charge_budget) uncharged_measurements_ += static_cast<int64_t>(to_measure.size());
    for (size_t k = 0; k < to_measure.size(); ++k) {
      size_t i = to_measure[k];
      results[i] = std::move(measured[k]);
      database_->CommitWorkload({hashes[i], "graph", GraphWorkloadText(requests[i].module)});
      TuningRecord record;
      record.workload_hash = hashes[i];
      record.trace_json = requests[i].trace.ToJson();
      record.measured_by = measured_by;
      CommitMeasurement(std::move(record), results[i], counts, /*confirmation=*/false,
                        charge_budget);
      LogGraphEvaluation(pass, requests[i].module, hashes[i], "", /*reused=*/false);
    }
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (same_as[i] >= 0) {
      results[i] = results[static_cast<size_t>(same_as[i])];
      ++counts.reused;
    }
  }

  double& best = best_seconds_[pass];
  for (const MeasureResult& r : results) {
    if (r.ok() && (best == 0 || r.median_seconds < best)) best = r.median_seconds;
  }
  graph_curve_.push_back({pass, TotalCounts().measured, best, ElapsedSeconds()});
  if (on_progress) {
    on_progress(
        {pass, static_cast<int64_t>(requests.size()), static_cast<int64_t>(requests.size()), best});
  }
  return results;
}

void TuningSession::LogGraphEvaluation(const std::string& pass, const ir::IRModule& module,
                                       const std::string& workload_hash,
                                       const std::string& candidate_hash, bool reused) {
  graph_evaluations_.push_back({pass, workload_hash, candidate_hash,
                                module.attrs().Has(kReferenceKeyAttr), reused,
                                TotalCounts().measured, ElapsedSeconds()});
}

CostModel& TuningSession::KernelCostModel(const std::string& kind) {
  auto it = cost_models_.find(kind);
  if (it != cost_models_.end()) return *it->second;
  std::unique_ptr<CostModel> model;
  if (kind == "xgboost") {
    model = MakeXGBoostModel(options_.seed);
  } else if (kind == "random") {
    model = MakeRandomModel(options_.seed);
  } else {
    throw ir::Error(fmt::format("unknown cost model '{}' (expected xgboost or random)", kind));
  }
  std::string blob = CostModelBlobName(kind);
  if (std::optional<std::string> saved = database_->GetBlob(blob)) {
    try {
      model->Load(*saved);
      // A model trained on another version's features loads but cannot score this one's.
      model->Predict({std::vector<float>(NumFeatures(), 0.0f)});
    } catch (const std::exception& e) {
      Warn(fmt::format(
          "{}: the saved cost model (blob '{}') cannot be used: {}; tuning goes on with a fresh "
          "{} model (the measurements in the database are kept)",
          options_.database_name.empty() ? "the tuning database" : options_.database_name, blob,
          e.what(), kind));
      model = kind == "xgboost" ? MakeXGBoostModel(options_.seed) : MakeRandomModel(options_.seed);
    }
  }
  return *cost_models_.emplace(kind, std::move(model)).first->second;
}

void TuningSession::Warn(const std::string& message) {
  warnings_.push_back(message);
  if (on_warning) {
    on_warning(message);
  } else {
    std::cerr << "warning: " << message << "\n";
  }
}

void TuningSession::SaveCostModels() {
  for (const auto& [kind, model] : cost_models_)
    database_->PutBlob(CostModelBlobName(kind), model->Save());
}

}  // namespace tandem::tuning
