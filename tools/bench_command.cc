// `tandem bench`: one model (or the MetaSchedule operator workloads) under named configurations,
// built and timed in one run, so the ratios compare like with like:
//   all-own          default_heuristic: our code generator, default schedules
//   all-onednn       every subgraph oneDNN takes placed on oneDNN, the rest ours
//   all-own-tuned    default_tuning: our kernels tuned (TuneKernels, --trials) through --db
//   placement-tuned  TuneBackendPlacement(eval=[PackMatmulWeights, PackConvWeights, FuseOps,
//   TuneKernels(skip_tuned=1)]): placement
//                    by measurement against our kernels tuned (by all-own-tuned when it runs
//                    first: the configurations share one database)
// --external NAME=COMMAND adds an engine in another process (ONNX Runtime or OpenVINO through
// bench/engine_latency.py --serve) timed in the same turns (bench/external_contender.h).
// Any registered pipeline name is a configuration too (default_heuristic, default_tuning,
// sequential, joint, ...): a pipeline with tuning passes runs under a trial budget of --trials
// measurements, and its run is committed to the database as a tuning::TuningRun, so a second
// bench with the same database and budget replays its decisions instead of tuning again.
// Every configuration's outputs are checked against the reference interpreter before timing.
// Timing takes turns (a block of --repeat runs of each configuration per round, several rounds;
// bench/interleaved_timing.h) so that a change of machine load hits every configuration alike;
// the median of the blocks' medians is reported.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <fstream>
#include <iostream>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "bench/external_contender.h"
#include "bench/interleaved_timing.h"
#include "bench/operator_workloads.h"
#include "ir/error.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "passes/tuning_pass.h"
#include "pipelines/pipeline_registry.h"
#include "tools/commands.h"
#include "tools/option_checks.h"
#include "tuning/session/tuning_run.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tools {

namespace {

struct Configuration {
  std::string name;
  std::string pipeline;  // pipeline text
  bool tunes = false;
  bool budgeted = false;  // a registered pipeline: the run's trial budget is --trials
};

bool HasTuningPass(const passes::Pass& pass) {
  if (pass.info().is_tuning) return true;
  for (const passes::PassPtr& nested : pass.nested()) {
    if (HasTuningPass(*nested)) return true;
  }
  return false;
}

std::vector<Configuration> KnownConfigurations(int64_t trials) {
  std::string prefix = "InferType, SimplifyExpr, FoldConstant, CombineParallelMatmul, ";
  return {
      {"all-own", pipelines::PipelineRegistry::Global().Get("default_heuristic").text, false},
      {"all-onednn", pipelines::PipelineRegistry::Global().Get("all_onednn").text, false},
      {"all-own-tuned",
       prefix + fmt::format("PackMatmulWeights, PackConvWeights, FuseOps, DeadCodeElimination, "
                            "TuneKernels(trials={})",
                            trials),
       true},
      {"placement-tuned",
       prefix +
           fmt::format("TuneBackendPlacement(eval=[PackMatmulWeights, PackConvWeights, FuseOps, "
                       "TuneKernels(trials={}, "
                       "skip_tuned=1)]), DeadCodeElimination",
                       std::max<int64_t>(trials / 8, 1)),
       true},
  };
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Row {
  std::string subject;  // model or workload
  std::string configuration;
  double median_ms = 0;
  double tuning_seconds = 0;
  int64_t measurements = 0;  // real measurements the tuning took
  bool replayed = false;     // decisions replayed from an earlier run in the database
  int64_t extern_calls = 0;
  double error = 0;
  std::string failure;
  // The configuration that built the same optimized module (structurally equal), whose timing
  // this row shares: one program is timed once, so equal decisions give equal latencies.
  std::string same_module_as;
  std::string external;  // the command of an external engine's row
};

// An engine in another process timed in the same turns (--external NAME=COMMAND).
struct External {
  std::string name;
  std::string command;
};

// Builds `module` under each configuration, checks it, times all (and the external engines) in
// turns.
std::vector<Row> Measure(const std::string& subject, const ir::IRModule& module,
                         const std::vector<Configuration>& configurations,
                         const std::vector<External>& externals, double settle_seconds,
                         const std::string& database, bool isolate, int64_t trials, int repeat,
                         int rounds, uint64_t seed) {
  std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), seed);
  std::vector<ir::Tensor> reference = backends::RunReference(module, inputs);
  std::vector<Row> rows;
  // One database for the run: the tuned configurations share their measurements.
  std::shared_ptr<tuning::Database> shared_database =
      database.empty() ? tuning::MakeInMemoryDatabase() : tuning::OpenSqliteDatabase(database);
  std::string model_hash = ir::HashToHex(ir::StructuralHash(module));
  std::vector<tuning::TuningRun> runs;  // of the configurations tuned now
  std::vector<size_t> run_of_row;
  std::vector<std::unique_ptr<backends::Executable>> executables;
  std::vector<uint64_t> module_hashes;  // per row, of the module as built (0: none)
  std::vector<int64_t> timed_as;        // per row, the row whose timing it shares (-1: its own)
  for (const Configuration& configuration : configurations) {
    Row row{subject, configuration.name};
    std::unique_ptr<backends::Executable> exe;
    uint64_t hash = 0;
    int64_t same_as = -1;
    try {
      passes::PassContext context;
      passes::PassPtr pipeline = passes::ParsePipeline(configuration.pipeline);
      std::string pipeline_text = passes::PrintPipeline(*pipeline);
      std::optional<tuning::TuningRun> previous;
      if (configuration.tunes) {
        // The pipeline seed of `tandem tune` (0), so that bench and tune replay each other's
        // runs; `seed` only draws the inputs.
        tuning::TuningSession::Options options{.seed = 0, .database_name = database};
        if (configuration.budgeted) options.max_measurements = trials;
        if (isolate) {
          // Records under a descriptor of their own: no configuration reuses another's
          // measurements, so equal budgets buy equal numbers of measurements.
          options.target_descriptor =
              tuning::TargetDescriptor(context.target) + "|isolated=" + configuration.name;
        }
        context.tuning = std::make_shared<tuning::TuningSession>(
            context.target, shared_database, std::make_shared<tuning::LocalBuilder>(),
            std::make_shared<tuning::ProcessRunner>(), options);
        previous = tuning::LatestTuningRun(*shared_database, model_hash, pipeline_text,
                                           context.tuning->target_descriptor());
        if (previous && (previous->trial_budget != options.max_measurements ||
                         previous->seed != options.seed)) {
          previous.reset();
        }
      }
      auto start = std::chrono::steady_clock::now();
      ir::IRModule optimized;
      if (previous) {
        optimized = passes::ReplayTrace(module, previous->trace, context);
        row.replayed = true;
        row.tuning_seconds = previous->tuning_seconds;
        for (const auto& [pass, counts] : previous->counts) row.measurements += counts.measured;
      } else if (configuration.tunes) {
        passes::RecordedRun recorded = passes::RunPipelineRecorded(*pipeline, module, context);
        optimized = recorded.module;
        row.tuning_seconds = Seconds(start);
        row.measurements = context.tuning->TotalCounts().measured;
        runs.push_back(tuning::SummarizeTuningRun(*context.tuning, subject, model_hash,
                                                  pipeline_text, recorded.trace,
                                                  row.tuning_seconds));
        run_of_row.push_back(rows.size());
      } else {
        optimized = context.RunPipeline(*pipeline, module);
      }
      for (const ir::Node& node : optimized.Get("main").nodes) {
        row.extern_calls += node.kind == ir::NodeKind::kCallExtern;
      }
      // Compared as built: a pipeline that ends with Legalize and one that leaves it to Build
      // give the same program, which is timed once.
      ir::IRModule built = backends::LegalizeForBuild(optimized);
      hash = ir::StructuralHash(built);
      for (size_t r = 0; r < rows.size(); ++r) {
        if (module_hashes[r] == hash && executables[r]) {
          row.same_module_as = rows[r].configuration;
          row.error = rows[r].error;
          same_as = static_cast<int64_t>(r);
          break;
        }
      }
      if (same_as < 0) {
        exe = backends::Build(built);
        std::vector<ir::Tensor> outputs = exe->Run(inputs);
        for (size_t i = 0; i < outputs.size(); ++i) {
          row.error = std::max(row.error, ir::RelativeError(outputs[i], reference[i]));
        }
        if (!(row.error < 1e-3)) {
          row.failure = fmt::format("wrong result (relative error {:.2g})", row.error);
          exe.reset();
        }
      }
    } catch (const ir::Error& e) {
      row.failure = e.message();
    }
    std::cerr << fmt::format("{} / {}: {}\n", subject, configuration.name,
                             !row.failure.empty() ? row.failure
                             : same_as >= 0
                                 ? "the same module as " + row.same_module_as + " (timed once)"
                                 : std::string("built and checked"));
    module_hashes.push_back(exe ? hash : 0);
    timed_as.push_back(row.failure.empty() ? same_as : -1);
    executables.push_back(std::move(exe));
    rows.push_back(row);
  }
  // External engines: rows of their own, timed by themselves in the same turns.
  std::vector<std::unique_ptr<bench::ExternalContender>> engines(rows.size());
  for (const External& external : externals) {
    Row row{subject, external.name};
    row.external = external.command;
    try {
      engines.push_back(
          std::make_unique<bench::ExternalContender>(external.name, external.command));
    } catch (const ir::Error& e) {
      row.failure = e.message();
      engines.push_back(nullptr);
    }
    std::cerr << fmt::format("{} / {}: {}\n", subject, external.name,
                             row.failure.empty() ? "started (external)" : row.failure);
    module_hashes.push_back(0);
    timed_as.push_back(-1);
    executables.push_back(nullptr);
    rows.push_back(row);
  }
  // Fixed-size blocks of `repeat` runs, in turns (bench/interleaved_timing.h); the latency is
  // the median of the blocks' medians.
  bench::TimingOptions timing{.passes = rounds,
                              .min_time = 0,
                              .min_repeats = repeat,
                              .max_block_time = 1e9,
                              .settle_seconds = externals.empty() ? 0 : settle_seconds};
  std::vector<bench::Contender> contenders(executables.size());
  std::vector<bench::Contender*> turns;
  std::vector<std::vector<ir::Tensor>> outputs(executables.size());
  for (size_t c = 0; c < executables.size(); ++c) {
    if (engines[c]) {
      bench::ExternalContender* engine = engines[c].get();
      contenders[c].run_block = [engine](int n) { return engine->RunBlock(n); };
      turns.push_back(&contenders[c]);
      continue;
    }
    if (!executables[c]) continue;
    outputs[c] = executables[c]->Run(inputs);
    contenders[c].run = [&, c] { executables[c]->RunInto(inputs, outputs[c]); };
    turns.push_back(&contenders[c]);
  }
  bench::MeasureInTurns(turns, timing);
  for (size_t c = 0; c < rows.size(); ++c) {
    if (timed_as[c] >= 0) contenders[c] = contenders[static_cast<size_t>(timed_as[c])];
    if (!contenders[c].block_medians.empty()) {
      rows[c].median_ms = bench::Median(contenders[c].block_medians) * 1e3;
    }
  }
  // The tuning runs go to the database with the latencies measured here (before: all-own or
  // default_heuristic when it ran).
  std::vector<double> before;
  for (size_t c = 0; c < rows.size(); ++c) {
    if ((rows[c].configuration == "all-own" || rows[c].configuration == "default_heuristic") &&
        !contenders[c].block_medians.empty()) {
      before = contenders[c].block_medians;
    }
  }
  for (size_t k = 0; k < runs.size(); ++k) {
    const Row& row = rows[run_of_row[k]];
    runs[k].before_seconds = before;
    runs[k].after_seconds = contenders[run_of_row[k]].block_medians;
    runs[k].after_error = row.failure;
    tuning::CommitTuningRun(*shared_database, runs[k]);
  }
  return rows;
}

std::string Note(const Row& row) {
  std::vector<std::string> parts;
  if (row.replayed) parts.push_back("decisions replayed from the database");
  if (!row.same_module_as.empty()) parts.push_back("same module as " + row.same_module_as);
  if (!row.external.empty()) parts.push_back("external: " + row.external);
  if (!row.failure.empty()) parts.push_back(row.failure);
  return fmt::format("{}", fmt::join(parts, "; "));
}

void PrintTable(const std::vector<Row>& rows) {
  fmt::print("{:<14} {:<18} {:>11} {:>10} {:>10} {:>7} {:>9} {:>8}  {}\n", "subject",
             "configuration", "latency ms", "vs onednn", "vs own", "extern", "tuning s", "measured",
             "note");
  for (const Row& row : rows) {
    auto ratio_to = [&](const std::string& other) -> std::string {
      for (const Row& base : rows) {
        bool same = base.configuration == other ||
                    (other == "all-own" && base.configuration == "default_heuristic") ||
                    (other == "all-onednn" && base.configuration == "all_onednn");
        if (base.subject == row.subject && same && base.median_ms > 0 && row.median_ms > 0) {
          return fmt::format("{:.2f}x", base.median_ms / row.median_ms);
        }
      }
      return "-";
    };
    fmt::print(
        "{:<14} {:<18} {:>11} {:>10} {:>10} {:>7} {:>9} {:>8}  {}\n", row.subject,
        row.configuration,
        row.median_ms > 0 ? fmt::format("{:.3f}", row.median_ms) : std::string("-"),
        ratio_to("all-onednn"), ratio_to("all-own"), row.extern_calls,
        row.tuning_seconds > 0 ? fmt::format("{:.1f}", row.tuning_seconds) : std::string("-"),
        row.tuning_seconds > 0 ? fmt::format("{}", row.measurements) : std::string("-"), Note(row));
  }
  fmt::print("(vs X: X's latency / this one's; above 1 means faster than X)\n");
}

void WriteCsv(const std::vector<Row>& rows, std::ostream& out) {
  out << "subject,configuration,latency_ms,extern_calls,tuning_seconds,measurements,replayed,"
         "relative_error,failure,same_module_as\n";
  for (const Row& row : rows) {
    std::string failure = row.failure;
    std::replace(failure.begin(), failure.end(), '"', '\'');
    out << fmt::format("{},{},{:.6f},{},{:.3f},{},{},{:.3g},\"{}\",{}\n", row.subject,
                       row.configuration, row.median_ms, row.extern_calls, row.tuning_seconds,
                       row.measurements, row.replayed ? 1 : 0, row.error, failure,
                       row.same_module_as);
  }
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto shapes = std::make_shared<std::vector<std::string>>();
  auto workloads = std::make_shared<std::string>();
  auto configurations = std::make_shared<std::string>("all-own,all-onednn");
  auto database = std::make_shared<std::string>();
  auto csv = std::make_shared<std::string>();
  auto isolate = std::make_shared<bool>(false);
  auto trials = std::make_shared<int64_t>(64);
  auto repeat = std::make_shared<int>(10);
  auto rounds = std::make_shared<int>(5);
  auto threads = std::make_shared<int>(0);
  auto external_specs = std::make_shared<std::vector<std::string>>();
  auto settle = std::make_shared<double>(0.25);
  auto model_name = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "time a model or the operator workloads under named configurations (all-own, "
      "all-onednn, all-own-tuned, placement-tuned) in one run");
  cmd->add_option("model", *model, "ONNX model or Tandem IR text file (or use --workloads)");
  cmd->add_option("--input-shape", *shapes, "NAME=1,3,224,224 for symbolic input dimensions");
  cmd->add_option("--model-name", *model_name,
                  "the model's name in the table, the tuning database and reports (default: "
                  "the file's stem, or its folder's name for a file named model.onnx)");
  cmd->add_option("--workloads", *workloads,
                  "comma-separated MetaSchedule operator workloads (C1D,...,SFM) or \"all\"");
  cmd->add_option("--configs", *configurations,
                  "comma-separated: all-own, all-onednn, all-own-tuned, placement-tuned, a "
                  "registered pipeline name (default_tuning, sequential, joint, ...), or all")
      ->capture_default_str();
  cmd->add_option("--db", *database, "tuning database (SQLite) for the tuned configurations");
  cmd->add_option("--trials", *trials,
                  "TuneKernels trials of the tuned configurations; the trial budget of each "
                  "tuning pipeline")
      ->capture_default_str()
      ->check(IntegerIn(0));
  cmd->add_flag("--isolate", *isolate,
                "tuned configurations do not reuse each other's measurements (each keeps its "
                "records apart in the database), for comparing pipelines under equal budgets");
  cmd->add_option("--repeat", *repeat, "timed runs per configuration per round")
      ->capture_default_str()
      ->check(IntegerIn(1, INT_MAX));
  cmd->add_option("--rounds", *rounds, "rounds of taking turns")
      ->capture_default_str()
      ->check(IntegerIn(1, INT_MAX));
  cmd->add_option("--threads", *threads, "threads for parallel loops (0: all cores)")
      ->check(IntegerIn(0, backends::ThreadPool::kMaxThreads));
  cmd->add_option("--csv", *csv, "also write the rows as CSV to this file (- for stdout)");
  cmd->add_option("--external", *external_specs,
                  "NAME=COMMAND: an engine in another process timed in the same turns (the "
                  "line protocol of bench/external_contender.h; e.g. openvino=\"python3 "
                  "bench/engine_latency.py --engine openvino --serve MODEL_DIR\"); repeatable, "
                  "models only");
  cmd->add_option("--settle", *settle,
                  "with --external: seconds to pause after every block of runs, so that the idle "
                  "threads of one engine stop spinning before the next one's block")
      ->capture_default_str();
  return [=]() {
    if (!*cmd) return -1;
    if (model->empty() == workloads->empty()) {
      throw ir::Error("tandem bench: give either a model or --workloads");
    }
    if (*threads > 0) backends::ThreadPool::Global().SetNumThreads(*threads);
    std::vector<Configuration> known = KnownConfigurations(*trials), chosen;
    std::vector<std::string> names;
    for (const Configuration& c : known) names.push_back(c.name);
    std::string list =
        *configurations == "all" ? fmt::format("{}", fmt::join(names, ",")) : *configurations;
    std::stringstream stream(list);
    for (std::string name; std::getline(stream, name, ',');) {
      auto found = std::find_if(known.begin(), known.end(),
                                [&](const Configuration& c) { return c.name == name; });
      if (found != known.end()) {
        chosen.push_back(*found);
        continue;
      }
      std::vector<std::string> pipeline_names;
      for (const pipelines::PipelineDef& def : pipelines::PipelineRegistry::Global().List()) {
        pipeline_names.push_back(def.name);
        if (def.name != name) continue;
        passes::PassPtr pipeline = pipelines::PipelineRegistry::Global().Create(name);
        chosen.push_back({name, passes::PrintPipeline(*pipeline), HasTuningPass(*pipeline), true});
      }
      if (chosen.empty() || chosen.back().name != name) {
        throw ir::Error(fmt::format(
            "tandem bench: unknown configuration '{}' (known: {}, or a registered pipeline: {})",
            name, fmt::join(names, ", "), fmt::join(pipeline_names, ", ")));
      }
    }
    std::vector<External> externals;
    for (const std::string& spec : *external_specs) {
      size_t equals = spec.find('=');
      if (equals == 0 || equals == std::string::npos || equals + 1 == spec.size()) {
        throw ir::Error(fmt::format("tandem bench: --external '{}' is not NAME=COMMAND", spec));
      }
      externals.push_back({spec.substr(0, equals), spec.substr(equals + 1)});
    }
    if (!externals.empty() && model->empty()) {
      throw ir::Error("tandem bench: --external times engines on a model, not on --workloads");
    }
    std::vector<Row> rows;
    if (!model->empty()) {
      ModelOptions model_options{*model, *shapes, *model_name};
      ir::IRModule module = LoadModel(model_options);
      // Named as `tandem tune` names it, so that runs of both share one name in reports.
      rows = Measure(ModelName(model_options), module, chosen, externals, *settle, *database,
                     *isolate, *trials, *repeat, *rounds, 1);
    } else {
      std::vector<std::string> selected = bench::WorkloadNames();
      if (*workloads != "all") {
        selected.clear();
        std::stringstream w(*workloads);
        for (std::string name; std::getline(w, name, ',');) selected.push_back(name);
      }
      backends::OnednnContext context;
      for (const std::string& name : selected) {
        bench::Workload workload = bench::MakeWorkload(name, context);
        std::vector<Row> more = Measure(name, workload.module, chosen, {}, 0, *database, *isolate,
                                        *trials, *repeat, *rounds, 1);
        rows.insert(rows.end(), more.begin(), more.end());
      }
    }
    PrintTable(rows);
    bool failed =
        std::any_of(rows.begin(), rows.end(), [](const Row& row) { return !row.failure.empty(); });
    if (*csv == "-") {
      WriteCsv(rows, std::cout);
    } else if (!csv->empty()) {
      std::ofstream out(*csv);
      if (!out) throw ir::Error(fmt::format("cannot write {}", *csv));
      WriteCsv(rows, out);
      fmt::print("rows written to {}\n", *csv);
    }
    return failed ? 1 : 0;  // a configuration that failed to build or computed a wrong result
  };
}

}  // namespace tandem::tools
