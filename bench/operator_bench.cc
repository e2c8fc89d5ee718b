// tandem_operator_bench: Tandem's default (untuned) schedules against oneDNN on the operator
// workloads of the MetaSchedule paper (see bench/operator_workloads.h for the shapes and FLOP
// counts), printed as one table.
//
// Timing method: the contenders take turns in blocks of repeats and each reports its best pass
// median (bench/interleaved_timing.h).
//
// Contention. When other processes keep the cores busy (load average above the core count) the
// method cannot find a quiet window: OpenMP's team threads are descheduled between calls and
// each oneDNN call then waits for the scheduler (whole 4 ms ticks were observed: a 40 us softmax
// took 20-24 ms with two threads), while Tandem's calling thread runs any chunk no worker has
// claimed and never waits. The table then carries a warning; `--threads 1` compares the
// kernels without that effect.
//
// Fairness. Both contenders take every tensor (weights included) as a per-call input in the
// plain layout and return the plain layout. oneDNN's weights are reordered into the layout its
// primitive prefers once, at setup, outside the timed region (as is CBR's batch-norm folding
// into the filter and a bias); reorders of activations into and out of a blocked layout are
// inside the timed region. For each workload oneDNN gets several programs (plain vs blocked
// activations, packed vs plain GEMM operand ...); each takes its turns like a contender and the
// one with the best pass median is reported (a small bias in oneDNN's favour under noise).
// The MM-* workloads are the exception: their weights are graph constants, as in a model, so
// Tandem's pipelines may pack them at compile time (run with --pipeline default_heuristic).
// Tandem runs Build's default schedules through Executable::RunInto with preallocated outputs.
// Both use the same number of threads (--threads, default 2): oneDNN (OpenMP) through
// omp_set_num_threads, Tandem through ThreadPool::Global().SetNumThreads.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/llvm/codegen.h"
#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "bench/fma_peak.h"
#include "bench/interleaved_timing.h"
#include "bench/operator_workloads.h"
#include "ir/error.h"
#include "passes/pass.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::bench {
namespace {

struct Options {
  std::string workloads;
  TimingOptions timing;
  int threads = 2;
  std::string csv;
  std::string pipeline;  // empty: Build alone (Legalize with default schedules)
};

struct Row {
  std::string name, shapes, error;
  double flops = 0;
  Contender tandem;
  Contender onednn;                // the oneDNN program with the best pass median
  double relative_error = 0;       // Tandem against that program
  double worst_program_error = 0;  // against any of the workload's oneDNN programs
  std::string program, implementation;
  double build_seconds = 0;
  size_t kernel_calls = 0;
};

Row RunWorkload(const std::string& name, OnednnContext& context, const Options& options) {
  Row row;
  row.name = name;
  Workload workload = MakeWorkload(name, context);
  row.shapes = workload.shapes;
  row.flops = workload.flops;

  std::cerr << fmt::format("{}: building {} ...\n", name, workload.shapes);
  backends::BuildOptions build_options;
  build_options.legalize.schedule.num_threads = options.threads;
  auto start = std::chrono::steady_clock::now();
  ir::IRModule module = workload.module;
  if (!options.pipeline.empty()) {
    passes::PassContext pass_context;
    module = pass_context.RunPipeline(
        *pipelines::PipelineRegistry::Global().Create(options.pipeline, pass_context.target),
        module);
  }
  std::unique_ptr<backends::Executable> executable = backends::Build(module, build_options);
  row.build_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.kernel_calls = executable->num_kernel_calls();
  std::vector<ir::Tensor> outputs;
  for (const ir::TensorType& type : executable->output_types()) outputs.emplace_back(type);
  row.tandem.run = [&] { executable->RunInto(workload.inputs, outputs); };

  // Correctness once: Tandem against every oneDNN program.
  row.tandem.run();
  OnednnContenders onednn = MakeOnednnContenders(workload, context, outputs[0]);
  row.worst_program_error = onednn.WorstError();

  // Warm-up, then every contender (each oneDNN program too) takes its turns.
  std::cerr << fmt::format("{}: warming up ...\n", name);
  std::vector<Contender*> contenders = {&row.tandem};
  for (Contender& program : onednn.programs) contenders.push_back(&program);
  std::string plan;
  MeasureInTurns(contenders, options.timing, &plan);
  std::cerr << fmt::format("{}: measured {} passes of [Tandem, oneDNN programs]:{}\n", name,
                           options.timing.passes, plan);

  size_t chosen = onednn.Best();
  row.onednn = onednn.programs[chosen];
  row.relative_error = onednn.errors[chosen];
  row.program = workload.onednn_programs[chosen].label();
  row.implementation = workload.onednn_programs[chosen].Implementations();
  row.tandem.run = nullptr;  // the closures refer to locals of this function
  row.onednn.run = nullptr;
  return row;
}

std::string ErrorText(double error) {
  return fmt::format("{:.1e}{}", error, error > 1e-3 ? " (!)" : "");
}

void PrintTable(const std::vector<Row>& rows, const Options& options,
                const std::string& load_at_start, const FmaPeak& peak) {
  const dnnl_version_t* version = dnnl_version();
  std::cout << fmt::format(
      "Tandem default schedules{} vs oneDNN {}.{}.{} ({} threads each; f32; latency = best of {} "
      "passes' medians; load average {} at start, {} at end)\n\n",
      options.pipeline.empty() ? "" : " after pipeline " + options.pipeline, version->major,
      version->minor, version->patch, options.threads, options.timing.passes, load_at_start,
      LoadAverage());
  double cores = std::thread::hardware_concurrency();
  if (Overloaded(load_at_start) || Overloaded(LoadAverage())) {
    std::cout << fmt::format(
        "WARNING: the load average exceeded the {} cores, so other processes competed for them. "
        "oneDNN's OpenMP threads then wait at barriers for a descheduled team member, which "
        "hits its short kernels much harder than Tandem's pool (whose calling thread runs the "
        "chunks no worker has claimed). Rerun on a quiet machine for numbers to publish.\n\n",
        cores);
  }
  std::cout << fmt::format("FMA peak of this machine: {}; % peak = Tandem GFLOP/s over it.\n\n",
                           peak.Describe(options.threads));
  std::cout << "| workload | shapes | MFLOP | Tandem us | Tandem GFLOP/s | % peak | oneDNN us | "
               "oneDNN GFLOP/s | oneDNN/Tandem | rel. error |\n";
  std::cout << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::cout << fmt::format("| {} | {} | | failed | | | | | | |\n", r.name, r.shapes);
      continue;
    }
    double t = r.tandem.best(), o = r.onednn.best();
    std::cout << fmt::format(
        "| {} | {} | {:.2f} | {:.1f} | {:.2f} | {:.0f}% | {:.1f} | {:.2f} | {:.3f} | {} |\n",
        r.name, r.shapes, r.flops / 1e6, t * 1e6, r.flops / t / 1e9,
        peak.gflops > 0 ? 100.0 * r.flops / t / 1e9 / peak.gflops : 0.0, o * 1e6, r.flops / o / 1e9,
        o / t, ErrorText(r.relative_error));
  }
  std::cout << "\noneDNN/Tandem > 1 means Tandem is faster. rel. error = ||Tandem - oneDNN|| / "
               "||oneDNN|| on one random input, (!) when above 1e-3.\n"
               "oneDNN weights are reordered once outside the timed region (CBR: batch norm "
               "folded into the filter and a bias at setup); activation reorders are timed.\n\n"
               "Per workload: the oneDNN program reported (best of its programs) and its "
               "implementation; "
               "spread = worst / best pass median; Tandem build time and kernel calls.\n";
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::cout << fmt::format("- {}: FAILED: {}\n", r.name, r.error);
      continue;
    }
    std::cout << fmt::format(
        "- {}: oneDNN {} [{}]; spread Tandem {:.2f}x ({} repeats), oneDNN {:.2f}x ({} repeats); "
        "Tandem build {:.2f} s, {} kernel call(s){}\n",
        r.name, r.program, r.implementation, r.tandem.worst() / r.tandem.best(), r.tandem.repeats,
        r.onednn.worst() / r.onednn.best(), r.onednn.repeats, r.build_seconds, r.kernel_calls,
        r.worst_program_error > 1e-3
            ? fmt::format("; another oneDNN program differs by {:.1e}", r.worst_program_error)
            : "");
  }
}

void WriteCsv(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw ir::Error(fmt::format("cannot write the CSV file '{}'", path));
  out << "workload,shapes,flops,tandem_us,tandem_gflops,onednn_us,onednn_gflops,"
         "onednn_over_tandem,relative_error,tandem_worst_pass_us,onednn_worst_pass_us,"
         "tandem_repeats,onednn_repeats,onednn_program,onednn_implementation,error\n";
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      out << fmt::format("{},{},{},,,,,,,,,,,,,{}\n", r.name, CsvQuoted(r.shapes), r.flops,
                         CsvQuoted(r.error));
      continue;
    }
    double t = r.tandem.best(), o = r.onednn.best();
    out << fmt::format(
        "{},{},{},{:.3f},{:.4f},{:.3f},{:.4f},{:.4f},{:.3e},{:.3f},{:.3f},{},{},{},{},\n", r.name,
        CsvQuoted(r.shapes), r.flops, t * 1e6, r.flops / t / 1e9, o * 1e6, r.flops / o / 1e9, o / t,
        r.relative_error, r.tandem.worst() * 1e6, r.onednn.worst() * 1e6, r.tandem.repeats,
        r.onednn.repeats, CsvQuoted(r.program), CsvQuoted(r.implementation));
  }
}

int Main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "tandem_operator_bench: Tandem's default schedules vs oneDNN on the MetaSchedule "
      "operator workloads"};
  app.add_option("--workloads", options.workloads,
                 fmt::format("comma-separated workloads (default: all of {})",
                             fmt::join(WorkloadNames(), ",")));
  app.add_option("--passes", options.timing.passes, "turns each contender gets")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-time", options.timing.min_time, "seconds one block of repeats should take")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-repeats", options.timing.min_repeats, "least repeats in a block")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-block-time", options.timing.max_block_time,
                 "seconds above which a slow contender's block drops to fewer repeats (>= 3)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", options.threads, "threads for both contenders")
      ->check(CLI::PositiveNumber);
  app.add_option("--csv", options.csv, "also write the results to this CSV file");
  app.add_option("--pipeline", options.pipeline,
                 "run this registered pass pipeline (e.g. default_heuristic: fusion) before "
                 "Build (default: none, each op its own kernel)");
  CLI11_PARSE(app, argc, argv);

  try {
    std::vector<std::string> names = SelectedWorkloads(options.workloads);
    std::string load_at_start = LoadAverage();
    omp_set_num_threads(options.threads);
    backends::ThreadPool::Global().SetNumThreads(options.threads);
    FmaPeak peak = MeasureFmaPeak(options.threads, backends::TargetVectorUnit("host").f32_lanes);
    OnednnContext context;
    std::vector<Row> rows = RunEachWorkload<Row>(names, [&](const std::string& name) {
      auto row = RunWorkload(name, context, options);
      peak.Remeasure(options.threads);
      return row;
    });
    PrintTable(rows, options, load_at_start, peak);
    if (!options.csv.empty()) WriteCsv(rows, options.csv);
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
