// tandem_tune_bench: kernel schedule search on the MetaSchedule operator workloads, against
// oneDNN measured in the same run.
//
// For each workload the graph goes through the `default_tuning` pipeline with its TuneKernels
// given the trial budget (--trials measurements over the workload's kernels, in batches of
// --batch), measured through the shared builder and process runner, with the XGBoost cost model
// (and, with --compare-random, a second run from a fresh database with the random model). The
// module built from the best schedules then takes turns with the default schedules and oneDNN's
// programs (bench/interleaved_timing.h: best pass median of interleaved blocks); the table shows
// latency, GFLOP/s, tuning time and the ratio to oneDNN. Each workload's tuning curve (best
// weighted latency against trials) is written to OUT/<workload>.csv and plotted in
// OUT/<workload>.svg; OUT/summary.csv holds the table. "trials to 95%" is the number of
// measurements after which the curve first came within 5% of its final value (throughput at
// least 95% of the final best).
//
// The latencies the curve shows are the tuner's own measurements of each kernel alone in a
// worker process; the table's are the end-to-end interleaved measurements.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/llvm/codegen.h"
#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "bench/fma_peak.h"
#include "bench/interleaved_timing.h"
#include "bench/operator_workloads.h"
#include "ir/error.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "report/svg_line_chart.h"
#include "tuning/database/database.h"
#include "tuning/measure/builder.h"
#include "tuning/measure/runner.h"
#include "tuning/session/tuning_session.h"

namespace tandem::bench {
namespace {

struct Options {
  std::string workloads;
  int64_t trials = 256;
  int batch = 16;
  int threads = 2;
  uint64_t seed = 1;
  bool compare_random = false;
  std::string strategy = "evolutionary";
  std::string database;  // SQLite file for the XGBoost runs; empty: in memory
  std::string out_dir = "tune_bench_out";
  TimingOptions timing{.passes = 3};
};

struct TuneRun {
  std::string cost_model;
  double tuning_seconds = 0;
  ir::IRModule module;  // lowered with the best schedules found
  std::vector<tuning::CurvePoint> curve;
  tuning::EvaluationCounts counts;
  int64_t trials_to_95 = -1;
  double final_seconds = 0;  // the curve's last weighted latency
};

struct Row {
  std::string name, shapes, error;
  double flops = 0;
  size_t kernels = 0;
  TuneRun xgboost, random;
  Contender tuned, defaults, onednn;
  double relative_error = 0;
  std::string program;
};

// The measurements after which `curve` first came within 5% of its last value.
int64_t TrialsTo95(const std::vector<tuning::CurvePoint>& curve, double* final_seconds) {
  if (curve.empty() || !curve.back().all_tasks_measured) return -1;
  double last = curve.back().weighted_seconds;
  *final_seconds = last;
  for (const tuning::CurvePoint& point : curve) {
    if (point.all_tasks_measured && point.weighted_seconds <= last / 0.95) return point.trials;
  }
  return curve.back().trials;
}

std::string TuningPipelineText(const std::string& cost_model, const Options& options) {
  // The registered default_tuning pipeline, with this run's budget and cost model.
  std::string text = pipelines::PipelineRegistry::Global().Get("default_tuning").text;
  std::string tune = "TuneKernels";
  size_t at = text.find(tune);
  if (at == std::string::npos) throw ir::Error("default_tuning has no TuneKernels pass");
  size_t end = at + tune.size();
  if (end < text.size() && text[end] == '(') end = text.find(')', end) + 1;
  return text.substr(0, at) +
         fmt::format("TuneKernels(trials={}, batch={}, cost_model=\"{}\", strategy=\"{}\")",
                     options.trials, options.batch, cost_model, options.strategy) +
         text.substr(end);
}

TuneRun Tune(const Workload& workload, const std::string& cost_model,
             std::shared_ptr<tuning::Database> database, const Options& options) {
  TuneRun run;
  run.cost_model = cost_model;
  passes::PassContext context;
  context.target.num_threads = options.threads;
  context.seed = options.seed;
  tuning::TuningSession::Options session_options;
  session_options.seed = options.seed;
  session_options.measure.num_threads = options.threads;
  context.tuning = std::make_shared<tuning::TuningSession>(
      context.target, std::move(database), std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<tuning::ProcessRunner>(), session_options);
  tuning::TuningSession& session = *context.tuning;
  std::string name = workload.name;
  session.on_progress = [&name, &cost_model](const tuning::ProgressEvent& event) {
    std::cerr << fmt::format("\r{} [{}] {} trials of {} | best {:.1f} us        ", name, cost_model,
                             event.done, event.total, event.best_seconds * 1e6)
              << std::flush;
  };
  passes::PassPtr pipeline = passes::ParsePipeline(TuningPipelineText(cost_model, options));
  auto start = std::chrono::steady_clock::now();
  run.module = context.RunPipeline(*pipeline, workload.module);
  run.tuning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "\n";
  for (const tuning::KernelTuningCurve& curve : session.kernel_curves()) {
    run.curve.insert(run.curve.end(), curve.points.begin(), curve.points.end());
  }
  run.counts = session.TotalCounts();
  run.trials_to_95 = TrialsTo95(run.curve, &run.final_seconds);
  return run;
}

void WriteCurves(const Row& row, const Options& options) {
  std::filesystem::path dir(options.out_dir);
  std::ofstream csv(dir / (row.name + ".csv"));
  if (!csv) throw ir::Error(fmt::format("cannot write into '{}'", options.out_dir));
  csv << "cost_model,trials,best_us,elapsed_s,all_tasks_measured\n";
  report::LineChart chart;
  chart.title = fmt::format("{}: best latency found against trials", row.name);
  chart.x_label = "trials (measurements)";
  chart.y_label = "latency (us)";
  chart.y_is_seconds = false;
  chart.width = 640;
  chart.height = 400;
  for (const TuneRun* run : {&row.xgboost, &row.random}) {
    if (run->cost_model.empty()) continue;
    report::ChartSeries s;
    s.name = run->cost_model;
    s.color = run->cost_model == "xgboost" ? "#1f77b4" : "#d62728";
    s.step = true;
    for (const tuning::CurvePoint& p : run->curve) {
      csv << fmt::format("{},{},{:.3f},{:.2f},{}\n", run->cost_model, p.trials,
                         p.weighted_seconds * 1e6, p.elapsed_seconds, p.all_tasks_measured);
      if (p.all_tasks_measured) {
        s.points.emplace_back(static_cast<double>(p.trials), p.weighted_seconds * 1e6);
      }
    }
    chart.series.push_back(std::move(s));
  }
  if (row.onednn.block_medians.size() > 0) {
    double o = row.onednn.best() * 1e6;
    report::ChartSeries s;
    s.name = fmt::format("oneDNN {:.1f} us", o);
    s.color = "#2ca02c";
    s.points = {{0.0, o}, {static_cast<double>(options.trials), o}};
    chart.series.push_back(std::move(s));
  }
  std::ofstream svg(dir / (row.name + ".svg"));
  svg << report::RenderLineChart(chart);
}

Row RunWorkload(const std::string& name, OnednnContext& context, const Options& options) {
  Row row;
  row.name = name;
  Workload workload = MakeWorkload(name, context);
  row.shapes = workload.shapes;
  row.flops = workload.flops;

  std::shared_ptr<tuning::Database> database =
      options.database.empty()
          ? tuning::MakeInMemoryDatabase()
          : std::shared_ptr<tuning::Database>(tuning::OpenSqliteDatabase(options.database));
  row.xgboost = Tune(workload, "xgboost", database, options);
  if (options.compare_random) {
    row.random = Tune(workload, "random", tuning::MakeInMemoryDatabase(), options);
  }

  backends::BuildOptions build_options;
  build_options.legalize.schedule.num_threads = options.threads;
  std::unique_ptr<backends::Executable> tuned = backends::Build(row.xgboost.module, build_options);
  // The untuned contender is what a user gets without tuning: the default_heuristic pipeline
  // (constant weights packed, operators fused), then default schedules.
  passes::PassContext heuristic_context;
  heuristic_context.target.num_threads = options.threads;
  ir::IRModule heuristic = heuristic_context.RunPipeline(
      *pipelines::PipelineRegistry::Global().Create("default_heuristic", heuristic_context.target),
      workload.module);
  std::unique_ptr<backends::Executable> defaults = backends::Build(heuristic, build_options);
  row.kernels = tuned->num_kernel_calls();
  std::vector<ir::Tensor> tuned_out, default_out;
  for (const ir::TensorType& type : tuned->output_types()) tuned_out.emplace_back(type);
  for (const ir::TensorType& type : defaults->output_types()) default_out.emplace_back(type);
  row.tuned.run = [&] { tuned->RunInto(workload.inputs, tuned_out); };
  row.defaults.run = [&] { defaults->RunInto(workload.inputs, default_out); };

  row.tuned.run();
  OnednnContenders onednn = MakeOnednnContenders(workload, context, tuned_out[0]);
  std::vector<Contender*> contenders = {&row.tuned, &row.defaults};
  for (Contender& program : onednn.programs) contenders.push_back(&program);
  std::string plan;
  MeasureInTurns(contenders, options.timing, &plan);
  std::cerr << fmt::format("{}: measured {} passes of [tuned, default, oneDNN programs]:{}\n", name,
                           options.timing.passes, plan);
  size_t chosen = onednn.Best();
  row.onednn = onednn.programs[chosen];
  row.relative_error = onednn.errors[chosen];
  row.program = workload.onednn_programs[chosen].label();
  row.tuned.run = row.defaults.run = row.onednn.run = nullptr;  // they refer to locals
  WriteCurves(row, options);
  return row;
}

std::string Trials95(const TuneRun& run) {
  return run.trials_to_95 < 0 ? "-" : std::to_string(run.trials_to_95);
}

void PrintTable(const std::vector<Row>& rows, const Options& options,
                const std::string& load_at_start, const FmaPeak& peak) {
  const dnnl_version_t* version = dnnl_version();
  std::cout << fmt::format(
      "Tandem tuned ({} trials per workload, batch {}, {} search, XGBoost cost model) vs "
      "oneDNN {}.{}.{} ({} threads each; f32; latency = best of {} interleaved passes' medians; "
      "load average {} at start, {} at end)\n\n",
      options.trials, options.batch, options.strategy, version->major, version->minor,
      version->patch, options.threads, options.timing.passes, load_at_start, LoadAverage());
  if (Overloaded(load_at_start) || Overloaded(LoadAverage())) {
    std::cout << "WARNING: other processes competed for the cores during this run; rerun on a "
                 "quiet machine for numbers to publish.\n\n";
  }
  std::cout << fmt::format("FMA peak of this machine: {}; % peak = tuned GFLOP/s over it.\n\n",
                           peak.Describe(options.threads));
  std::cout << "| workload | MFLOP | tuned us | tuned GFLOP/s | % peak | default us | oneDNN us | "
               "oneDNN/tuned | tuning s | measured (failed) | trials to 95% (xgboost"
            << (options.compare_random ? " / random" : "") << ") | rel. error |\n"
            << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
               "|\n";
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::cout << fmt::format("| {} | | failed | | | | | | | | | |\n", r.name);
      continue;
    }
    double t = r.tuned.best(), o = r.onednn.best();
    std::string to95 = Trials95(r.xgboost);
    if (options.compare_random) to95 += " / " + Trials95(r.random);
    std::cout << fmt::format(
        "| {} | {:.2f} | {:.1f} | {:.1f} | {:.0f}% | {:.1f} | {:.1f} | {:.3f} | {:.0f} | {} ({}) | "
        "{} | {:.1e} |\n",
        r.name, r.flops / 1e6, t * 1e6, r.flops / t / 1e9,
        peak.gflops > 0 ? 100.0 * r.flops / t / 1e9 / peak.gflops : 0.0, r.defaults.best() * 1e6,
        o * 1e6, o / t, r.xgboost.tuning_seconds, r.xgboost.counts.measured,
        r.xgboost.counts.failed, to95, r.relative_error);
  }
  std::cout << "\noneDNN/tuned > 1 means Tandem is faster. default = Tandem's untuned default "
               "schedules. tuning s = wall time of the default_tuning pipeline (XGBoost run). "
               "rel. error = ||tuned - oneDNN|| / ||oneDNN||.\n";
  for (const Row& r : rows) {
    if (!r.error.empty()) std::cout << fmt::format("- {}: FAILED: {}\n", r.name, r.error);
  }
  std::cout << fmt::format("Curves: {}/<workload>.csv and .svg; table: {}/summary.csv\n",
                           options.out_dir, options.out_dir);
}

void WriteSummary(const std::vector<Row>& rows, const Options& options) {
  std::ofstream out(std::filesystem::path(options.out_dir) / "summary.csv");
  out << "workload,shapes,flops,tuned_us,default_us,onednn_us,onednn_over_tuned,tuning_s,"
         "measured,failed,trials_to_95_xgboost,trials_to_95_random,tuning_s_random,"
         "relative_error,onednn_program,error\n";
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      out << fmt::format("{},{},{},,,,,,,,,,,,,{}\n", r.name, CsvQuoted(r.shapes), r.flops,
                         CsvQuoted(r.error));
      continue;
    }
    out << fmt::format(
        "{},{},{},{:.3f},{:.3f},{:.3f},{:.4f},{:.1f},{},{},{},{},{:.1f},{:.2e},{},\n", r.name,
        CsvQuoted(r.shapes), r.flops, r.tuned.best() * 1e6, r.defaults.best() * 1e6,
        r.onednn.best() * 1e6, r.onednn.best() / r.tuned.best(), r.xgboost.tuning_seconds,
        r.xgboost.counts.measured, r.xgboost.counts.failed, r.xgboost.trials_to_95,
        r.random.trials_to_95, r.random.tuning_seconds, r.relative_error, CsvQuoted(r.program));
  }
}

int Main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "tandem_tune_bench: kernel schedule search on the MetaSchedule operator workloads, "
      "against oneDNN measured in the same run"};
  app.add_option("--workloads", options.workloads, "comma-separated workloads (default: all)");
  app.add_option("--trials", options.trials, "measurements per workload")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", options.batch, "programs measured per search round")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", options.threads, "threads for tuning, Tandem and oneDNN")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", options.seed, "seed of the search")->capture_default_str();
  app.add_option("--strategy", options.strategy, "evolutionary or replay (random sampling)")
      ->check(CLI::IsMember({"evolutionary", "replay"}))
      ->capture_default_str();
  app.add_flag("--compare-random", options.compare_random,
               "also tune each workload with the random cost model (from a fresh database) and "
               "report its trials to 95%");
  app.add_option("--db", options.database,
                 "SQLite tuning database for the XGBoost runs (default: in memory); a rerun "
                 "reuses its measurements");
  app.add_option("--out", options.out_dir, "folder for the curves (CSV, SVG) and summary.csv")
      ->capture_default_str();
  app.add_option("--passes", options.timing.passes, "interleaved timing passes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    std::vector<std::string> names = SelectedWorkloads(options.workloads);
    std::filesystem::create_directories(options.out_dir);
    std::string load_at_start = LoadAverage();
    omp_set_num_threads(options.threads);
    backends::ThreadPool::Global().SetNumThreads(options.threads);
    FmaPeak peak = MeasureFmaPeak(options.threads, backends::TargetVectorUnit("host").f32_lanes);
    OnednnContext context;
    std::vector<Row> rows = RunEachWorkload<Row>(
        names,
        [&](const std::string& name) {
          auto row = RunWorkload(name, context, options);
          peak.Remeasure(options.threads);
          return row;
        },
        [&](const std::vector<Row>& done) { WriteSummary(done, options); });
    PrintTable(rows, options, load_at_start, peak);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tandem::bench

int main(int argc, char** argv) {
  return tandem::bench::Main(argc, argv);
}
