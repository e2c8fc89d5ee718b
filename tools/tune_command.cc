// `tandem tune`: runs a pipeline with tuning passes on a model, measuring candidates through the
// shared builder and runner and recording every measurement in a database file, with progress on
// standard error and, at the end, the decisions taken, how the evaluations were spent, and the
// latency before (default_heuristic) and after.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/pipeline_text.h"
#include "passes/tuning_pass.h"
#include "pipelines/pipeline_registry.h"
#include "tools/commands.h"
#include "tuning/tuning_session.h"

namespace tandem::tools {

namespace {

struct TuneOptions {
  ModelOptions model;
  PipelineOptions pipeline;
  int64_t trials = 0;
  int repeats = 5;
  int warmup = 1;
  double min_warmup_ms = 50;
  double min_repeat_ms = 2;
  double timeout = 60;
  bool flush_cache = false;
  int threads = 0;
  int build_workers = 0;
  bool in_process = false;
  std::string output;
  std::string trace_file;
};

std::string Milliseconds(double seconds) {
  return fmt::format("{:.3f} ms", seconds * 1e3);
}

// "TuneLayout=NHWC, FoldConstant, TuneFusion=fuse" from a trace.
std::string DecisionSummary(const ir::Trace& trace) {
  std::vector<std::string> parts;
  for (const ir::Instruction& instruction : trace.instructions()) {
    std::string decision =
        instruction.decision && std::holds_alternative<std::string>(*instruction.decision)
            ? std::get<std::string>(*instruction.decision)
            : "";
    if (!decision.empty() && decision.front() == '{') {
      // TuneKernels: a map from workload to schedule trace.
      size_t schedules = std::count(decision.begin(), decision.end(), ':') > 0
                             ? nlohmann::json::parse(decision, nullptr, false).size()
                             : 0;
      parts.push_back(fmt::format("{}: {} tuned kernel schedule(s)", instruction.kind, schedules));
      continue;
    }
    parts.push_back(decision == "apply" || decision.empty() ? instruction.kind
                                                            : instruction.kind + "=" + decision);
  }
  return parts.empty() ? "(none)" : fmt::format("{}", fmt::join(parts, ", "));
}

tuning::MeasureResult MeasureOne(tuning::TuningSession& session, const ir::IRModule& module,
                                 const std::string& label) {
  return session.EvaluateModules({{module, ir::Trace()}}, label, /*charge_budget=*/false).front();
}

int RunTune(TuneOptions& options) {
  ir::IRModule model = LoadModel(options.model);
  passes::PassContext context;
  std::shared_ptr<passes::TimingInstrument> timing;
  passes::PassPtr pipeline = PreparePipeline(options.pipeline, context, timing);

  std::shared_ptr<tuning::Database> database;
  if (context.tuning) {
    database = context.tuning->shared_database();
  } else {
    std::cerr << "warning: no --db: measurements are kept in memory and lost at exit\n";
    database = tuning::MakeInMemoryDatabase();
  }
  tuning::TuningSession::Options session_options;
  session_options.seed = context.seed;
  session_options.max_measurements = options.trials;
  session_options.measure.repeats = options.repeats;
  session_options.measure.warmup_runs = options.warmup;
  session_options.measure.min_warmup_seconds = options.min_warmup_ms / 1e3;
  session_options.measure.min_repeat_seconds = options.min_repeat_ms * 1e-3;
  session_options.measure.timeout_seconds = options.timeout;
  session_options.measure.flush_cache = options.flush_cache;
  session_options.measure.num_threads = options.threads;
  std::shared_ptr<tuning::Runner> runner;
  if (options.in_process) {
    runner = std::make_shared<tuning::InProcessRunner>();
  } else {
    runner = std::make_shared<tuning::ProcessRunner>();
  }
  context.tuning = std::make_shared<tuning::TuningSession>(
      context.target, database, std::make_shared<tuning::LocalBuilder>(options.build_workers),
      runner, session_options);
  tuning::TuningSession& session = *context.tuning;
  session.on_progress = [&session](const tuning::ProgressEvent& event) {
    tuning::EvaluationCounts total = session.TotalCounts();
    std::cerr << fmt::format("[{}] {}/{} | best {} | measured {}, from database {}, failed {}\n",
                             event.pass, event.done, event.total,
                             event.best_seconds > 0 && std::isfinite(event.best_seconds)
                                 ? Milliseconds(event.best_seconds)
                                 : "-",
                             total.measured, total.reused, total.failed);
  };

  std::cerr << "pipeline: " << passes::PrintPipeline(*pipeline) << "\n";
  std::cerr << "target: " << session.target_descriptor() << "\n";
  std::cerr << "computing reference outputs on the reference interpreter...\n";
  session.EnsureReference(model);
  passes::PassContext baseline_context;
  baseline_context.target = context.target;
  ir::IRModule baseline = baseline_context.RunPipeline(
      *pipelines::PipelineRegistry::Global().Create("default_heuristic", context.target), model);
  tuning::MeasureResult before = MeasureOne(session, baseline, "(before: default_heuristic)");

  ir::IRModule tuned = context.RunPipeline(*pipeline, model);
  if (timing) std::cerr << timing->Report();
  tuning::MeasureResult after = MeasureOne(session, tuned, "(after: tuned module)");

  std::cout << "\ndecisions:\n\n| tuning pass | decisions of the best candidate | its latency |\n"
               "| --- | --- | ---: |\n";
  for (const tuning::TuningDecision& decision : session.decisions()) {
    std::cout << fmt::format(
        "| {} | {} | {} |\n", decision.pass, DecisionSummary(decision.trace),
        decision.result.ok() ? Milliseconds(decision.result.median_seconds) : "-");
  }
  std::cout << "\nevaluations:\n\n| pass | requested | from database | measured | failed | "
               "over budget | build s | run s |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | "
               "---: |\n";
  auto row = [](const std::string& name, const tuning::EvaluationCounts& c) {
    return fmt::format("| {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f} |\n", name, c.requested,
                       c.reused, c.measured, c.failed, c.over_budget, c.build_seconds,
                       c.run_seconds);
  };
  for (const auto& [pass, counts] : session.counts()) std::cout << row(pass, counts);
  std::cout << row("total", session.TotalCounts());
  std::cout << "\n";
  auto latency = [](const tuning::MeasureResult& r) {
    return r.ok() ? fmt::format("{} (+-{:.3f})", Milliseconds(r.median_seconds),
                                r.stddev_seconds * 1e3)
                  : "failed: " + r.error;
  };
  std::cout << "latency before (default_heuristic): " << latency(before) << "\n";
  std::cout << "latency after ("
            << (options.pipeline.text.empty() ? options.pipeline.name : "pipeline")
            << "): " << latency(after) << "\n";
  if (before.ok() && after.ok() && after.median_seconds > 0) {
    std::cout << fmt::format("speedup: {:.2f}x\n", before.median_seconds / after.median_seconds);
  }
  if (!options.pipeline.database.empty()) {
    std::cout << fmt::format("database: {} ({} records)\n", options.pipeline.database,
                             database->NumRecords());
  }
  if (!options.output.empty()) {
    std::ofstream out(options.output);
    out << ir::PrintModule(tuned);
    if (!out) throw ir::Error(fmt::format("cannot write {}", options.output));
  }
  if (!options.trace_file.empty()) {
    std::ofstream out(options.trace_file);
    for (const tuning::TuningDecision& decision : session.decisions()) {
      out << decision.trace.ToJson() << "\n";
    }
    if (!out) throw ir::Error(fmt::format("cannot write {}", options.trace_file));
  }
  return after.ok() ? 0 : 1;
}

}  // namespace

Command AddTuneCommand(CLI::App& app) {
  auto options = std::make_shared<TuneOptions>();
  options->pipeline.name = "graph_tuning";
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "tune a model with a pipeline of tuning passes, recording measurements in a database");
  AddModelOptions(cmd, options->model);
  AddPipelineOptions(cmd, options->pipeline);
  cmd->add_option("--trials", options->trials, "most real measurements in this run (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--repeats", options->repeats, "timed repeats per candidate")
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup, "untimed runs before the repeats")
      ->capture_default_str();
  cmd->add_option("--min-warmup-ms", options->min_warmup_ms,
                  "and untimed runs until this much time passed (a fresh worker runs slower)")
      ->capture_default_str();
  cmd->add_option("--min-repeat-ms", options->min_repeat_ms,
                  "each repeat loops the program for at least this long")
      ->capture_default_str();
  cmd->add_option("--timeout", options->timeout, "seconds before a candidate is killed")
      ->capture_default_str();
  cmd->add_flag("--flush-cache", options->flush_cache, "flush the caches before every repeat");
  cmd->add_option("--threads", options->threads, "threads for parallel loops (0: all cores)");
  cmd->add_option("--build-workers", options->build_workers,
                  "candidates compiled at once (0: one per core)");
  cmd->add_flag("--in-process", options->in_process,
                "measure in this process (no crash isolation; for debugging)");
  cmd->add_option("--output", options->output, "write the tuned module's IR text here");
  cmd->add_option("--save-trace", options->trace_file,
                  "write each tuning pass's winning trace (JSON, one per line) here");
  return [cmd, options] {
    if (!*cmd) return -1;
    return RunTune(*options);
  };
}

}  // namespace tandem::tools
