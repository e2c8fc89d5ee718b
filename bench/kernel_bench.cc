// tandem_kernel_bench: one op lowered to a kernel, scheduled by hand or by the default schedule,
// compiled and timed on its own (no graph, no oneDNN). For studying what limits generated code:
// it can print the scheduled kernel IR, the optimized LLVM IR and the assembly, and replay a
// schedule trace (one `tandem db export` recorded, or one --save-trace wrote, its decisions
// edited by hand) to time a variant of a searched program.
//
//   tandem_kernel_bench --op gmm --shape 512 --schedule hand --threads 1 --asm /tmp/gmm.s
//   tandem_kernel_bench --workload CVL-256x256x14-k3s1 --schedule trace --trace best.json
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/llvm/codegen.h"
#include "backends/runtime/thread_pool.h"
#include "bench/hand_schedules.h"
#include "bench/operator_workloads.h"
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_printer.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "kernels/legalize.h"
#include "kernels/schedule/schedule.h"
#include "kernels/search/search_space.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"

namespace tandem::bench {
namespace {

struct Options {
  std::string op = "gmm";
  std::string workload;
  std::string graph_passes =
      "InferType, SimplifyExpr, FoldConstant, DenseToMatmul, PackMatmulWeights, PackConvWeights, "
      "FuseOps";
  std::vector<int64_t> shape;
  std::string schedule = "hand";
  std::string trace_path;       // --schedule trace: a schedule trace (JSON) to replay
  std::string save_trace_path;  // the schedule's trace written here (JSON)
  std::vector<int64_t> tiles;
  int threads = 1;
  int vector_lanes = 0;      // 0: the host's
  int vector_registers = 0;  // 0: the host's
  int repeats = 0;
  std::string ir_path, llvm_path, asm_path;
  bool print = false;
  bool check = true;
  int64_t evict_mib = 0;  // > 0: caches evicted before every timed run (see --evict-caches)
  bool prefetch = true;   // false: the schedule's prefetch annotations dropped
};

// Largest relative error of a scheduled kernel's result against the unscheduled kernel's.
constexpr double kMaxRelativeError = 1e-4;

// Drops every loop's ir::kPrefetchDistanceKey annotation (to time a schedule without its
// prefetches).
class DropPrefetch : public ir::StmtMutator {
 protected:
  ir::Stmt VisitFor(const ir::ForNode* op, const ir::Stmt& s) override {
    ir::Stmt visited = ir::StmtMutator::VisitFor(op, s);
    const auto* loop = ir::As<ir::ForNode>(visited);
    if (!loop->annotations.Has(ir::kPrefetchDistanceKey)) return visited;
    ir::Attrs annotations = loop->annotations;
    annotations.Erase(ir::kPrefetchDistanceKey);
    return ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind, loop->body, annotations);
  }
};

bool use_cpu_time = false;

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Wall time of `run`, or the calling thread's CPU time with --cpu-time (which leaves out the
// time other processes hold the core: steadier on a busy machine, meaningful for one thread).
double Seconds(const std::function<void()>& run) {
  if (use_cpu_time) {
    double start = ThreadCpuSeconds();
    run();
    return ThreadCpuSeconds() - start;
  }
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  if (!file) throw ir::Error(fmt::format("cannot write '{}'", path));
  file << text;
}

struct Timing {
  double best = 0, median = 0, compile = 0, error = 0;
};

// Compiles `scheduled`, checks it against `unscheduled` (both compiled) and times it.
Timing TimeKernel(const ir::KernelFunction& unscheduled, const ir::KernelFunction& scheduled,
                  const Options& options) {
  Timing timing;
  std::unique_ptr<backends::CompiledModule> module;
  timing.compile = Seconds([&] { module = backends::CompileKernels({scheduled}); });
  std::vector<ir::Tensor> args, outputs;
  size_t first_output = scheduled.params.size() - static_cast<size_t>(scheduled.num_outputs);
  for (size_t p = 0; p < scheduled.params.size(); ++p) {
    const ir::Buffer& b = scheduled.params[p];
    ir::TensorType type{b->shape, b->dtype, ""};
    args.push_back(p < first_output ? ir::Tensor::Random(type, 7 + p, -1, 1) : ir::Tensor(type));
  }
  auto run = [&] { module->Run(scheduled.name, args); };
  if (options.check) {
    auto reference = backends::CompileKernels({unscheduled});
    std::vector<ir::Tensor> expected = args;
    for (size_t p = first_output; p < args.size(); ++p) expected[p] = ir::Tensor(args[p].type());
    reference->Run(unscheduled.name, expected);
    run();
    for (size_t p = first_output; p < args.size(); ++p) {
      timing.error = std::max(timing.error, ir::RelativeError(args[p], expected[p]));
    }
  }
  double estimate = Seconds(run);
  for (int i = 0; i < 3; ++i) estimate = std::min(estimate, Seconds(run));
  int repeats =
      options.repeats > 0 ? options.repeats : std::max(5, static_cast<int>(1.0 / estimate));
  // A model's weights come from memory at every call (the other layers evict them): writing a
  // buffer larger than the last-level cache before each run, outside the timed region, makes
  // the kernel's operands come from memory too.
  std::vector<uint8_t> evictor(static_cast<size_t>(options.evict_mib) << 20);
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    for (size_t at = 0; at < evictor.size(); at += 64) evictor[at] += 1;
    times.push_back(Seconds(run));
  }
  std::sort(times.begin(), times.end());
  timing.best = times.front();
  timing.median = times[times.size() / 2];
  return timing;
}

int Main(int argc, char** argv) {
  Options options;
  CLI::App app{"tandem_kernel_bench: one scheduled kernel, compiled and timed"};
  app.add_option("--op", options.op, "gmm, conv (NCHW) or conv16c (NCHW16c)");
  app.add_option("--workload", options.workload,
                 "every kernel of an operator-benchmark workload (C2D, GMM-512, ...) instead");
  app.add_option("--graph-passes", options.graph_passes,
                 "with --workload: the graph passes run before lowering (constant weights "
                 "packed, operators fused, as the default pipelines do)")
      ->capture_default_str();
  app.add_option("--shape", options.shape,
                 "gmm: M [N K]; conv: C O H W kernel stride pad (default per op)");
  app.add_option("--schedule", options.schedule, "none, default, hand or trace");
  app.add_option("--trace", options.trace_path,
                 "with --schedule trace: a schedule trace (JSON, as `tandem db export` writes in "
                 "trace_json) replayed on the kernel, its recorded decisions kept");
  app.add_option("--save-trace", options.save_trace_path,
                 "write the schedule's trace (JSON) here, for --schedule trace to replay");
  app.add_option("--tiles", options.tiles,
                 "tile sizes of the hand schedule (see hand_schedules.h)");
  app.add_option("--threads", options.threads, "threads");
  app.add_option("--vector-lanes", options.vector_lanes,
                 "f32 lanes the default schedule plans for (default: the host's, as Build does)");
  app.add_option("--vector-registers", options.vector_registers,
                 "vector registers the default schedule plans for (default: the host's)");
  app.add_option("--repeats", options.repeats, "timed runs (default: about one second)");
  app.add_option("--ir", options.ir_path, "write the scheduled kernel IR here");
  app.add_option("--llvm", options.llvm_path, "write the optimized LLVM IR here");
  app.add_option("--asm", options.asm_path, "write the assembly here");
  app.add_flag("--cpu-time", use_cpu_time,
               "time with the thread's CPU time (with --threads 1; steadier on a busy machine)");
  app.add_option("--evict-caches", options.evict_mib,
                 "before every timed run, write this many MiB (more than the last-level cache) "
                 "outside the timed region, so that operands come from memory as in a model")
      ->check(CLI::Range(int64_t{0}, int64_t{16384}));
  app.add_flag("!--no-prefetch", options.prefetch,
               "drop the schedule's prefetch annotations (tandem.prefetch_distance)");
  app.add_flag("--print", options.print, "print the scheduled kernel IR");
  app.add_flag("!--no-check", options.check, "skip the comparison with the unscheduled kernel");
  CLI11_PARSE(app, argc, argv);
  if (use_cpu_time && options.threads != 1) {
    std::cerr << "error: --cpu-time needs --threads 1\n";
    return 1;
  }
  try {
    // The kernels to run: one op with its hand schedule, or every kernel of a workload.
    std::vector<ir::KernelFunction> kernels;
    std::string description;
    double flops = 0;
    std::optional<HandWorkload> hand;
    if (!options.workload.empty()) {
      OnednnContext context;
      Workload workload = MakeWorkload(options.workload, context);
      passes::PassContext pass_context;
      pass_context.target.num_threads = options.threads;
      ir::IRModule graph =
          pass_context.RunPipeline(*passes::ParsePipeline(options.graph_passes), workload.module);
      kernels::LegalizeOptions legalize;
      legalize.apply_default_schedule = false;
      ir::IRModule legal = kernels::Legalize(graph, legalize);
      for (const auto& [name, kernel] : legal.kernel_functions()) kernels.push_back(*kernel);
      description = workload.shapes;
      flops = workload.flops;
    } else {
      hand = MakeHandWorkload(options.op, options.shape);
      kernels.push_back(hand->kernel);
      description = options.op + " " + hand->description;
      flops = hand->flops;
    }
    kernels::DefaultScheduleOptions defaults;
    defaults.num_threads = options.threads;
    backends::VectorUnit host = backends::TargetVectorUnit("host");
    defaults.vector_lanes = options.vector_lanes > 0 ? options.vector_lanes : host.f32_lanes;
    defaults.vector_registers =
        options.vector_registers > 0 ? options.vector_registers : host.registers;
    defaults.core = host.CoreAt(defaults.vector_lanes);
    backends::ThreadPool::Global().SetNumThreads(options.threads);
    double total = 0;
    for (const ir::KernelFunction& kernel : kernels) {
      std::optional<kernels::Schedule> schedule;
      if (options.schedule == "default") {
        schedule = kernels::ApplyDefaultSchedule(kernel, defaults);
      } else if (options.schedule == "hand" && hand) {
        schedule = ApplyHandSchedule(*hand, options.tiles);
      } else if (options.schedule == "trace") {
        std::ifstream file(options.trace_path);
        if (!file) throw ir::Error(fmt::format("cannot read --trace '{}'", options.trace_path));
        std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        // A sampled trace is replayed from its design part and postprocessed for this host, as
        // the search does; a fixed one (a default schedule's) as it is.
        kernels::SearchTarget target;
        target.vector_lanes = static_cast<int>(defaults.vector_lanes);
        target.num_cores = options.threads;
        std::string why;
        std::optional<kernels::Schedule> replayed = kernels::ReplayProgram(
            kernel, ir::Trace::FromJson(text), kernels::DefaultCpuSearchSpace(target), &why);
        if (!replayed) throw ir::Error(fmt::format("the trace does not apply: {}", why));
        schedule = std::move(replayed);
      } else if (options.schedule != "none") {
        throw ir::Error(fmt::format("unknown schedule '{}' here", options.schedule));
      }
      ir::KernelFunction scheduled = schedule ? schedule->function() : kernel;
      if (!options.prefetch) scheduled.body = DropPrefetch().VisitStmt(scheduled.body);
      if (options.print) std::cout << ir::PrintKernel(scheduled) << "\n";
      std::string suffix = kernels.size() > 1 ? "." + kernel.name : "";
      if (!options.ir_path.empty()) WriteFile(options.ir_path + suffix, ir::PrintKernel(scheduled));
      if (!options.save_trace_path.empty() && schedule) {
        WriteFile(options.save_trace_path + suffix, schedule->trace().ToJson());
      }
      if (!options.llvm_path.empty()) {
        WriteFile(options.llvm_path + suffix, backends::EmitLlvmIr({scheduled}));
      }
      if (!options.asm_path.empty()) {
        WriteFile(options.asm_path + suffix, backends::EmitAssembly({scheduled}));
      }
      Timing t = TimeKernel(kernel, scheduled, options);
      total += t.best;
      std::cout << fmt::format(
          "  {}: best {:.1f} us, median {:.1f} us, compile {:.2f} s, rel. error {:.1e}\n",
          kernel.name, t.best * 1e6, t.median * 1e6, t.compile, t.error);
      if (t.error > kMaxRelativeError) {
        throw ir::Error(
            fmt::format("kernel '{}' scheduled computes a different result (relative "
                        "error {:.1e} against the unscheduled kernel)",
                        kernel.name, t.error));
      }
    }
    std::cout << fmt::format("{} schedule={} threads={}: {:.1f} us ({:.1f} GFLOP/s)\n", description,
                             options.schedule, options.threads, total * 1e6, flops / total / 1e9);
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
