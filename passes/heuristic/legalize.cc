// Legalize: lowers every op call into a kernel function (compute definition + default schedule)
// called through call_kernel; identical kernels are shared (kernels/legalize.h). When the run has
// a tuning session, a kernel whose workload has records in its database gets the best recorded
// schedule instead of the default one; the schedules it took are its database choice
// (PassContext::database_choice: nested traces by workload hash), so that replaying the pipeline
// trace applies exactly those, whatever the database holds then. Replaying a Legalize recorded
// as a plain "apply" (no session, or a trace of an older Tandem) consults the database as before.
#include "kernels/legalize.h"
#include "backends/llvm/codegen.h"
#include "passes/pass_declaration.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/session/tuning_session.h"

namespace tandem::passes {

void RegisterLegalize(PassRegistry& registry) {
  struct Options {
    bool default_schedule = true;
  };
  RegisterFunctionPass<Options>(
      registry,
      {.name = "Legalize",
       .summary = "Lower op calls to kernel functions with default schedules (call_kernel).",
       .arguments = {{"default_schedule", &Options::default_schedule,
                      "1: apply the default schedule to each new kernel; 0: leave it "
                      "unscheduled"}}},
      [](const ir::IRModule& module, PassContext& context, const Options& pass_options) {
        kernels::LegalizeOptions options;
        options.apply_default_schedule = pass_options.default_schedule;
        options.gpu = context.target.kind == "cuda";
        if (!options.gpu) options.schedule = backends::DefaultScheduleOptionsFor(context.target);
        const ir::Instruction* replaying = context.replaying;
        if (replaying && replaying->kind == "Legalize" && tuning::CarriesSchedules(*replaying)) {
          // Replay: exactly the schedules taken when the trace was recorded.
          options.schedule_provider = tuning::TraceMapProvider(
              tuning::ScheduleDecision(*replaying),
              tuning::SearchSpaceFor(context.target, tuning::TargetDescriptor(context.target)));
          return kernels::Legalize(module, options);
        }
        if (!context.tuning || options.gpu) return kernels::Legalize(module, options);
        // Apply-history-best: kernels with records in the run's database get their best
        // measured schedule, recorded as this pass's database choice.
        tuning::TuningSession& session = *context.tuning;
        auto stats = std::make_shared<tuning::HistoryBestStats>();
        options.schedule_provider = tuning::HistoryBestProvider(
            session.shared_database(), session.target_descriptor(),
            tuning::SearchSpaceFor(session.target(), session.target_descriptor()), stats);
        ir::IRModule legalized = kernels::Legalize(module, options);
        session.history_best_stats()->AddCounts(*stats);  // reported by run and tune
        ir::Instruction choice;
        choice.kind = "Legalize";
        tuning::SetScheduleDecision(choice, stats->taken);
        context.database_choice = std::move(choice);
        return legalized;
      });
}

}  // namespace tandem::passes
