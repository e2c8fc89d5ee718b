// `tandem tune`: runs a pipeline with tuning passes on a model, measuring candidates through the
// shared builder and runner and recording every measurement in a database file, with progress on
// standard error and, at the end, the decisions taken, how the evaluations were spent, and the
// latency before (default_heuristic) and after. The run itself is committed to the database as a
// tuning::TuningRun (its replayable trace included); run again with the same budget, the command
// replays it instead of tuning. A run killed before it finished is resumed by the same command:
// the job's spent trials are kept in the database and only the rest of the budget is measured.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <ranges>

#include "backends/reference/interpreter.h"
#include "backends/runtime/thread_pool.h"
#include "bench/fma_peak.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "passes/tuning_pass.h"
#include "pipelines/pipeline_registry.h"
#include "report/run_facts.h"
#include "report/terminal_summary.h"
#include "tools/commands.h"
#include "tools/option_checks.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/session/tuning_run.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tools {

namespace fs = std::filesystem;

namespace {

std::string Milliseconds(double seconds) {
  return fmt::format("{:.3f} ms", seconds * 1e3);
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw ir::Error(fmt::format("cannot write {}", path));
}

// --save-trace: the run's whole trace as a trace file (`tandem run|compile --trace` rebuilds the
// tuned model from it with no database).
void SaveTrace(const std::string& path, const tuning::TuningRun& run) {
  if (path.empty()) return;
  passes::WriteTraceFile({run.model, run.model_hash, run.pipeline, run.target, run.trace}, path);
  std::cerr << fmt::format("trace: {} ({} instructions)\n", path, run.trace.size());
}

tuning::MeasureResult MeasureOne(tuning::TuningSession& session, const ir::IRModule& module,
                                 const std::string& label) {
  return session.EvaluateModules({{module, ir::Trace()}}, label, /*charge_budget=*/false).front();
}

// The run's facts as `tandem report` shows them, in the terminal (report::TuningSummaryText).
void PrintRun(const tuning::TuningRun& run, const tuning::Database& database,
              const std::string& pipeline_label) {
  std::cout << report::TuningSummaryText(run, report::CollectRunFacts(run, database),
                                         pipeline_label);
}

// The machine's FMA peak on the measurements' threads with the target's vector width, recorded
// with the run (about 0.2 s).
tuning::FmaPeakRecord MeasurePeak(const tuning::TuningSession& session) {
  int lanes = 16;
  try {
    lanes = std::stoi(tuning::DescriptorField(session.target_descriptor(), "vector-bits")) / 32;
  } catch (const std::exception&) {
    // No vector width in the descriptor: the widest unit the CPU has.
  }
  int threads = session.options().measure.num_threads;
  bench::FmaPeak peak = bench::MeasureFmaPeak(threads, lanes);
  return {peak.unit, peak.lanes, std::max(threads, 1), peak.gflops};
}

}  // namespace

TunedModel TuneModel(const ir::IRModule& model, const TuneOptions& options,
                     const TuneProgress& progress) {
  // 1. The pipeline, the database and the session (runner, builder, measurement options).
  passes::PassContext context;
  std::shared_ptr<passes::TimingInstrument> timing;
  passes::PassPtr pipeline = PreparePipeline(options.pipeline, context, timing);
  std::string pipeline_text = passes::PrintPipeline(*pipeline);
  TunedModel result;
  result.pipeline_label =
      options.pipeline.text.empty() ? options.pipeline.name : std::string("pipeline");

  std::shared_ptr<tuning::Database> database;
  if (context.tuning) {
    database = context.tuning->shared_database();
  } else {
    std::cerr << "warning: no database: measurements are kept in memory and lost at exit\n";
    database = tuning::MakeInMemoryDatabase();
  }
  result.database = database;
  tuning::TuningSession::Options session_options;
  session_options.seed = context.seed;
  session_options.database_name = options.pipeline.database;
  session_options.max_measurements = options.trials;
  session_options.max_seconds = options.time_budget;
  session_options.measure.repeats = options.repeats;
  session_options.measure.warmup_runs = options.warmup;
  session_options.measure.min_warmup_seconds = options.min_warmup_ms / 1e3;
  session_options.measure.min_repeat_seconds = options.min_repeat_ms * 1e-3;
  session_options.measure.timeout_seconds = options.timeout;
  session_options.measure.flush_cache = options.flush_cache;
  session_options.measure.num_threads = options.threads;
  session_options.confirm_rounds = options.confirm_rounds;
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
  session.on_progress = [&session, progress](const tuning::ProgressEvent& event) {
    tuning::EvaluationCounts total = session.TotalCounts();
    if (progress) {
      progress(event, total, session.ElapsedSeconds());
      return;
    }
    std::cerr << fmt::format(
        "[{}] {}/{} | best {} | measured {}, from database {}, failed {} | "
        "{:.0f} s\n",
        event.pass, event.done, event.total,
        event.best_seconds > 0 && std::isfinite(event.best_seconds)
            ? Milliseconds(event.best_seconds)
            : "-",
        total.measured, total.reused, total.failed, session.ElapsedSeconds());
  };

  std::cerr << "pipeline: " << pipeline_text << "\n";
  std::cerr << "target: " << session.target_descriptor() << "\n";
  std::string model_hash = ir::HashToHex(ir::StructuralHash(model));

  // 2. A run of this pipeline on this model under the same budget is in the database: replay
  //    its decisions instead of tuning again (retune tunes anyway; measurements are still
  //    reused).
  std::vector<std::string> skipped;
  std::optional<tuning::TuningRun> previous =
      options.retune ? std::nullopt
                     : tuning::LatestTuningRun(*database, model_hash, pipeline_text,
                                               session.target_descriptor(), &skipped);
  WarnOfSkippedRuns(session, skipped);
  if (previous && previous->trial_budget == options.trials &&
      previous->time_budget_seconds == options.time_budget && previous->seed == context.seed &&
      !previous->after_seconds.empty()) {
    std::cerr << fmt::format(
        "reusing the tuning run of {} from the database (same model, pipeline and budget; "
        "--retune tunes again): replaying its {} decisions\n",
        previous->measured_at, previous->trace.size());
    result.module = passes::ReplayTrace(model, previous->trace, context);
    WarnOfSchedulesNotReplayed(session);
    tuning::MeasureResult after = MeasureOne(session, result.module, "(after: tuned module)");
    previous->after_seconds = after.run_seconds;
    previous->after_error = after.error;
    result.run = std::move(*previous);
    result.replayed = true;
    result.ok = after.ok();
    return result;
  }

  // 3. The job (model, pipeline, record key, budget) keeps its spent trials in the database: a
  //    run killed part-way and started again spends only what is left (retune starts over).
  int64_t spent = session.ContinueJob(
      tuning::TuningJobKey(model_hash, pipeline_text, session.target_descriptor(), options.trials,
                           options.time_budget, context.seed),
      options.retune);
  if (spent > 0) {
    std::string budget = options.trials > 0 ? fmt::format("{}", options.trials) : "unlimited";
    std::cerr << fmt::format("resuming: {} of {} trials already spent\n", spent, budget);
    if (options.trials > 0 && spent >= options.trials) {
      std::cerr << "the trial budget is spent: the pipeline decides on the measurements in the "
                   "database (nothing more is measured for it)\n";
    }
  }

  // 4. Measure default_heuristic, tune, measure the result, and commit the run.
  std::cerr << "computing reference outputs on the reference interpreter...\n";
  session.EnsureReference(model);
  passes::PassContext baseline_context;
  baseline_context.target = context.target;
  ir::IRModule baseline = baseline_context.RunPipeline(
      *pipelines::PipelineRegistry::Global().Create("default_heuristic", context.target), model);
  tuning::MeasureResult before = MeasureOne(session, baseline, "(before: default_heuristic)");

  double tuning_start = session.ElapsedSeconds();
  passes::RecordedRun recorded = passes::RunPipelineRecorded(*pipeline, model, context);
  double tuning_seconds = session.ElapsedSeconds() - tuning_start;
  if (timing) std::cerr << timing->Report();
  WarnOfSchedulesNotReplayed(session);
  tuning::MeasureResult after = MeasureOne(session, recorded.module, "(after: tuned module)");

  tuning::TuningRun run = tuning::SummarizeTuningRun(session, ModelName(options.model), model_hash,
                                                     pipeline_text, recorded.trace, tuning_seconds);
  run.before_seconds = before.run_seconds;
  run.after_seconds = after.run_seconds;
  run.after_error = after.error;
  run.fma_peak = MeasurePeak(session);
  tuning::CommitTuningRun(*database, run);
  result.module = std::move(recorded.module);
  result.run = std::move(run);
  result.ok = after.ok();
  return result;
}

namespace {

// Median latency of the bucketed build at the symbols' sizes `sizes`, on random inputs.
double DynamicLatency(backends::BucketedExecutable& executable, const ModelOptions& model,
                      const std::vector<int64_t>& sizes) {
  ir::IRModule at_n = LoadModel(model, kernels::SymbolSizes(executable.ranges(), sizes));
  std::vector<ir::Tensor> inputs = backends::RandomInputs(at_n.Get("main"), 0);
  std::vector<double> times;
  for (int r = 0; r < 11; ++r) {
    auto start = std::chrono::steady_clock::now();
    executable.Run(inputs);
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// `tandem tune --dynamic`: steps atop.
//   1. Each bucket's kernels are tuned on the model bound to the bucket's bound, any other
//      symbols at theirs (a tuning run of the pipeline, which must end with TuneKernels, under
//      the whole --trials budget).
//   2. The dynamic build by buckets takes their best schedules from the database; its latency
//      at each bucket's ends is printed.
//   3. --save-trace writes the buckets and their schedules (a dynamic bucket trace).
int RunTuneDynamic(TuneOptions& options) {
  kernels::DynamicRanges ranges = ParseDynamicOptions(options.dynamic);
  const kernels::DynamicRange& range = ranges.front();
  std::vector<kernels::DynamicRanges> buckets =
      kernels::ParseDynamicBucketGrid(options.dynamic.buckets, ranges);
  if (options.pipeline.database.empty()) {
    throw ir::Error(
        "tune --dynamic needs --db: each bucket's schedules are recorded there and the dynamic "
        "build reads them");
  }
  if (!options.output.empty() || !options.pipeline.trace.empty()) {
    throw ir::Error("tune --dynamic takes no --output or --trace (use --save-trace)");
  }
  // The symbols' sizes with the first at `n`, the others at their bounds.
  auto with_first = [&](int64_t n) {
    std::vector<int64_t> sizes = kernels::BoundsOf(ranges);
    sizes.front() = n;
    return sizes;
  };
  bool ok = true;
  std::string records_target;  // the tuning runs' target descriptor (measurement settings too)
  for (const kernels::DynamicRanges& bucket : buckets) {
    std::map<std::string, int64_t> symbols =
        kernels::SymbolSizes(ranges, kernels::BoundsOf(bucket));
    std::string at =
        fmt::format("{}", fmt::join(symbols | std::views::transform([](const auto& symbol) {
                                      return fmt::format("{}={}", symbol.first, symbol.second);
                                    }),
                                    ","));
    std::cerr << fmt::format("bucket {}: tuning the model at {}\n", kernels::ToString(bucket), at);
    TuneOptions at_bound = options;
    at_bound.model.name = fmt::format("{}@{}", ModelName(options.model), at);
    TunedModel tuned = TuneModel(LoadModel(options.model, symbols), at_bound);
    PrintRun(tuned.run, *tuned.database, tuned.pipeline_label);
    ok = ok && tuned.ok;
    records_target = tuned.run.target;
  }
  DynamicModel built =
      BuildDynamicModel(options.model, options.pipeline, options.dynamic, records_target);
  fmt::print("dynamic build with the tuned schedules ({}):\n", options.pipeline.database);
  bool first_only = built.executable->SplitsFirstSymbolOnly();
  for (const auto& bucket : built.executable->buckets()) {
    if (first_only) {
      for (int64_t n : {bucket->range().minimum, bucket->range().bound}) {
        fmt::print("  {}={:<6} bucket [{}, {}]  {:.3f} ms\n", range.symbol, n,
                   bucket->range().minimum, bucket->range().bound,
                   DynamicLatency(*built.executable, options.model, with_first(n)) * 1e3);
      }
      continue;
    }
    // A bucket of a grid: at all its minimums, then all its bounds.
    std::vector<int64_t> minimums;
    for (const kernels::DynamicRange& r : bucket->ranges()) minimums.push_back(r.minimum);
    for (const std::vector<int64_t>& sizes : {minimums, kernels::BoundsOf(bucket->ranges())}) {
      fmt::print("  {:<24} bucket {}  {:.3f} ms\n", kernels::SizesText(ranges, sizes),
                 kernels::ToString(bucket->ranges()),
                 DynamicLatency(*built.executable, options.model, sizes) * 1e3);
    }
  }
  if (!options.trace_file.empty()) {
    ir::IRModule at_bound =
        LoadModel(options.model, kernels::SymbolSizes(ranges, kernels::BoundsOf(ranges)));
    passes::WriteTraceFile({ModelName(options.model), ir::HashToHex(ir::StructuralHash(at_bound)),
                            built.pipeline, built.target, built.trace},
                           options.trace_file);
    std::cerr << fmt::format("trace: {} ({} buckets)\n", options.trace_file, built.trace.size());
  }
  return ok ? 0 : 1;
}

int RunTune(TuneOptions& options) {
  if (options.dynamic.enabled()) return RunTuneDynamic(options);
  ir::IRModule model = LoadModel(options.model);
  TunedModel tuned = TuneModel(model, options);
  PrintRun(tuned.run, *tuned.database, tuned.pipeline_label);
  if (!tuned.replayed && !options.pipeline.database.empty()) {
    std::cout << fmt::format("database: {} ({} records)\n", options.pipeline.database,
                             tuned.database->NumRecords());
  }
  if (!options.output.empty()) WriteText(options.output, ir::PrintModule(tuned.module));
  SaveTrace(options.trace_file, tuned.run);
  return tuned.ok ? 0 : 1;
}

}  // namespace

Command AddTuneCommand(CLI::App& app) {
  auto options = std::make_shared<TuneOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "tune a model with a pipeline of tuning passes, recording measurements in a database");
  AddModelOptions(cmd, options->model);
  AddModelNameOption(cmd, options->model);
  AddPipelineOptions(cmd, options->pipeline);
  cmd->add_option("--trials", options->trials,
                  "most real measurements of this tuning job; the same command after a kill "
                  "measures only what is left (0: no limit)")
      ->capture_default_str()
      ->check(IntegerIn(0));
  cmd->add_option("--time-budget", options->time_budget,
                  "seconds the run may spend measuring (0: no limit)")
      ->capture_default_str()
      ->check(FiniteNumber(0, /*inclusive=*/true));
  cmd->add_flag("--retune", options->retune,
                "tune even when the database has a run of this pipeline on this model with the "
                "same budget (by default its decisions are replayed), with the whole budget "
                "(by default a run killed part-way is resumed with what is left of it)");
  cmd->add_option("--repeats", options->repeats, "timed repeats per candidate")
      ->capture_default_str()
      ->check(IntegerIn(1, INT_MAX));
  cmd->add_option("--warmup", options->warmup, "untimed runs before the repeats")
      ->capture_default_str()
      ->check(IntegerIn(0, INT_MAX));
  cmd->add_option("--min-warmup-ms", options->min_warmup_ms,
                  "and untimed runs until this much time passed (a fresh worker runs slower)")
      ->capture_default_str()
      ->check(FiniteNumber(0, /*inclusive=*/true));
  cmd->add_option("--min-repeat-ms", options->min_repeat_ms,
                  "each repeat loops the program for at least this long")
      ->capture_default_str()
      ->check(FiniteNumber(0, /*inclusive=*/true));
  cmd->add_option("--timeout", options->timeout, "seconds before a candidate is killed")
      ->capture_default_str()
      ->check(FiniteNumber(0, /*inclusive=*/false));
  cmd->add_flag("--flush-cache", options->flush_cache, "flush the caches before every repeat");
  cmd->add_option("--confirm-rounds", options->confirm_rounds,
                  "each decision's finalists are re-measured together in this many interleaved "
                  "rounds (0: decide on the first measurements)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  cmd->add_option("--threads", options->threads, "threads for parallel loops (0: all cores)")
      ->check(IntegerIn(0, backends::ThreadPool::kMaxThreads));
  cmd->add_option("--build-workers", options->build_workers,
                  "candidates compiled at once (0: one per core)")
      ->check(IntegerIn(0, INT_MAX));
  cmd->add_flag("--in-process", options->in_process,
                "measure in this process (no crash isolation; for debugging)");
  cmd->add_option("--output", options->output, "write the tuned module's IR text here");
  cmd->add_option("--save-trace", options->trace_file,
                  "write the tuned model's decisions (the whole pipeline trace, kernel schedules "
                  "included) to this trace file; `tandem run|compile --trace` rebuilds the model "
                  "from it with no database");
  AddDynamicOptions(cmd, options->dynamic);
  return [cmd, options] {
    if (!*cmd) return -1;
    return RunTune(*options);
  };
}

}  // namespace tandem::tools
