// TuneKernels: kernel schedule search for every kernel of the module, then lowering with the
// best schedules found (it replaces Legalize).
//
// The module's kernels become tuning tasks (deduplicated by workload hash, weighted by calls);
// the task scheduler spends `trials` measurements over them with evolutionary search (or random
// replay) guided by the session's shared cost model; then the module is legalized with, for each
// kernel, the best schedule recorded in the database for this target (measurements of earlier
// runs count), falling back to the default schedule. The instruction recorded in the trace holds
// the chosen schedule of each workload as a nested trace labelled by its hash
// (tuning::SetScheduleDecision), so a replay rebuilds the same kernels without searching. Used as
// an eval pass (e.g. TuneLayout(eval=[TuneKernels])), it tunes the kernels of each candidate; the
// same kernel under two candidates is one workload, measured once.
#include <fmt/format.h>

#include <limits>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "kernels/legalize.h"
#include "passes/pass_declaration.h"
#include "passes/tuning_pass.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/search/task_scheduler.h"

namespace tandem::passes {

namespace {

struct TuneKernelsOptions {
  int64_t trials = 0;
  int64_t batch = 16;
  std::string strategy = "evolutionary";
  std::string scheduler = "gradient";
  std::string cost_model = "xgboost";
  bool skip_tuned = false;
};

class TuneKernels : public TuningPass {
 public:
  TuneKernels(PassInfo info, PassArguments arguments, std::vector<PassPtr> eval,
              TuneKernelsOptions options)
      : TuningPass(std::move(info), std::move(arguments), std::move(eval)),
        options_(std::move(options)) {}

  bool MeasuresItsResult() const override { return false; }

  Candidate Tune(const Candidate& candidate, PassContext& context) const override {
    tuning::TuningSession& session = context.Tuning();
    kernels::SearchSpace space =
        tuning::SearchSpaceFor(session.target(), session.target_descriptor());
    std::vector<tuning::TuningTask> tasks = tuning::ExtractTasks(candidate.output);
    tuning::SearchOptions search;
    search.evolutionary =
        ParseChoice("strategy", options_.strategy, {"evolutionary", "replay"}) == "evolutionary";
    search.offer_default_schedule = true;
    search.default_schedule = ScheduleOptions(context);
    tuning::SchedulerOptions scheduler;
    scheduler.gradient =
        ParseChoice("scheduler", options_.scheduler, {"gradient", "round_robin"}) == "gradient";
    scheduler.max_trials = options_.trials;
    if (scheduler.max_trials == 0) {
      // The run's remaining trial budget (tandem tune --trials), or 64 without one.
      int64_t remaining = session.RemainingBudget();
      scheduler.max_trials = remaining == std::numeric_limits<int64_t>::max() ? 64 : remaining;
    }
    scheduler.batch_size = static_cast<int>(options_.batch);
    if (scheduler.max_trials < 0 || scheduler.batch_size < 1) {
      throw ir::Error(fmt::format("TuneKernels: trials must be >= 0 and batch >= 1"));
    }
    tuning::CostModel& model = session.KernelCostModel(
        ParseChoice("cost_model", options_.cost_model, {"xgboost", "random"}));
    // With skip_tuned, kernels the database already has a measured schedule for are not searched
    // again (a tuning pass above evaluates many candidates that share most kernels).
    std::vector<tuning::TuningTask> to_search;
    for (const tuning::TuningTask& task : tasks) {
      bool tuned = options_.skip_tuned && session.HasMeasuredSchedule(task.workload_hash);
      if (!tuned) to_search.push_back(task);
    }
    if (scheduler.max_trials > 0 && !to_search.empty()) {
      tuning::TaskScheduler run(to_search, session, model, space, search, scheduler,
                                DecisionText());
      run.Run();
      session.SaveCostModels();
    }
    // The best recorded schedule of every task (this run's or an earlier one's).
    std::map<std::string, ir::Trace> traces;
    for (const tuning::TuningTask& task : tasks) {
      for (const tuning::TuningRecord& record :
           session.database().Best(task.workload_hash, session.target_descriptor(), 3)) {
        ir::Trace trace = ir::Trace::FromJson(record.trace_json);
        if (kernels::ReplayProgram(task.kernel, trace, space)) {
          traces.emplace(task.workload_hash, trace);
          break;
        }
      }
    }
    Candidate next = candidate;
    ir::Instruction instruction;
    instruction.kind = name();
    instruction.attrs.Set("pass", DecisionText());
    tuning::SetScheduleDecision(instruction, traces);
    next.trace.Append(std::move(instruction));
    next.result.reset();
    bool any_tuned = !traces.empty();
    next.output = Lower(candidate.output, std::move(traces), space, context);
    if (any_tuned) ConfirmAgainstDefaults(candidate, next, context);
    return next;
  }

  ir::IRModule ApplyDecision(const ir::IRModule& module, const ir::Instruction& instruction,
                             PassContext& context) const override {
    std::map<std::string, ir::Trace> traces = tuning::ScheduleDecision(instruction);
    ir::Target target = context.target;
    kernels::SearchSpace space = tuning::SearchSpaceFor(target, tuning::TargetDescriptor(target));
    return Lower(module, std::move(traces), space, context);
  }

 private:
  static std::string ParseChoice(const std::string& key, const std::string& value,
                                 const std::vector<std::string>& allowed) {
    for (const std::string& a : allowed) {
      if (a == value) return value;
    }
    throw ir::Error(fmt::format("TuneKernels: {}=\"{}\" is not one of: {}", key, value,
                                fmt::join(allowed, ", ")));
  }

  // Kernels are measured alone; a schedule faster alone can be slower in the model (caches,
  // threads), and small differences are noise. So the tuned module is confirmed end to end
  // against the same module with default schedules (TuningSession::ConfirmModules: measured
  // together, interleaved); unless the tuned module is faster by at least the session's
  // minimum_gain (TuningSession::ConfirmedGain), the decision becomes the empty map, which replays
  // to the defaults. The instruction records both latencies ("confirmed").
  void ConfirmAgainstDefaults(const Candidate& candidate, Candidate& tuned,
                              PassContext& context) const {
    tuning::TuningSession& session = context.Tuning();
    if (session.options().confirm_rounds < 2) return;
    kernels::SearchSpace space =
        tuning::SearchSpaceFor(session.target(), session.target_descriptor());
    Candidate defaults = candidate;
    ir::Instruction instruction = tuned.trace.instructions().back();
    tuning::SetScheduleDecision(instruction, {});
    defaults.trace.Append(instruction);
    defaults.result.reset();
    try {
      defaults.output = Lower(candidate.output, {}, space, context);
    } catch (const ir::Error&) {
      return;
    }
    std::vector<tuning::MeasureResult> confirmed = session.ConfirmModules(
        {{tuned.output, tuned.trace}, {defaults.output, defaults.trace}}, DecisionText());
    if (confirmed.size() != 2 || !confirmed[0].ok()) return;
    bool defaults_win = !tuning::TuningSession::ConfirmedGain(confirmed[0], confirmed[1],
                                                              session.options().confirm_rounds,
                                                              session.options().minimum_gain);
    std::string text =
        fmt::format("tuned:{:.1f}us,default:{}", confirmed[0].median_seconds * 1e6,
                    confirmed[1].ok() ? fmt::format("{:.1f}us", confirmed[1].median_seconds * 1e6)
                                      : std::string("failed"));
    if (defaults_win) tuned = std::move(defaults);
    tuned.trace.mutable_instructions().back().attrs.Set("confirmed", text);
  }

  static kernels::DefaultScheduleOptions ScheduleOptions(const PassContext& context) {
    return backends::DefaultScheduleOptionsFor(context.target);
  }

  static ir::IRModule Lower(const ir::IRModule& module, std::map<std::string, ir::Trace> traces,
                            const kernels::SearchSpace& space, PassContext& context) {
    kernels::LegalizeOptions options;
    options.schedule = ScheduleOptions(context);
    options.schedule_provider = tuning::TraceMapProvider(std::move(traces), space);
    return kernels::Legalize(module, options);
  }

  TuneKernelsOptions options_;
};

}  // namespace

void RegisterTuneKernels(PassRegistry& registry) {
  using Options = TuneKernelsOptions;
  RegisterTuningPass<TuneKernels>(
      registry,
      PassDeclaration<Options>{
          .name = "TuneKernels",
          .summary = "Search schedules for every kernel (evolutionary search, cost model, task "
                     "scheduler), then lower with the best ones found.",
          .required = {"InferType"},
          .arguments = {{"trials", &Options::trials,
                         "measurements over all kernels (0: the run's remaining budget, or 64)"},
                        {"batch", &Options::batch, "programs measured per round"},
                        {"strategy", &Options::strategy,
                         "evolutionary or replay (random sampling)"},
                        {"scheduler", &Options::scheduler, "gradient or round_robin"},
                        {"cost_model", &Options::cost_model, "xgboost or random"},
                        {"skip_tuned", &Options::skip_tuned,
                         "1: do not search kernels that already have a measured schedule in the "
                         "database"}}},
      /*takes_eval_passes=*/false);
}

}  // namespace tandem::passes
