// `tandem interpret` and `tandem run`: execute a model on the reference interpreter, or build it
// with a pipeline and run the machine code, checking results and reporting latency.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>

#include "backends/cuda/gpu_executable.h"
#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "backends/target/resolved_target.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "tools/commands.h"
#include "tools/option_checks.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/search/task.h"

namespace tandem::tools {

namespace fs = std::filesystem;

namespace {

struct IoOptions {
  std::string inputs_dir, check_dir, outputs_dir, function = "main";
  uint64_t seed = 0;
  double tolerance = 1e-4;
};

void AddIoOptions(CLI::App* cmd, IoOptions& io) {
  cmd->add_option(
      "--inputs", io.inputs_dir,
      "directory with input_0.pb, input_1.pb, ... (ONNX TensorProto); random inputs when absent");
  cmd->add_option("--check", io.check_dir,
                  "directory with the expected output_0.pb, ...; exit status 1 on mismatch");
  cmd->add_option("--outputs", io.outputs_dir, "directory to write output_0.pb, ... to");
  cmd->add_option("--seed", io.seed, "seed for random inputs");
  cmd->add_option("--tolerance", io.tolerance, "largest accepted relative error (L2) for checks")
      ->capture_default_str()
      ->check(FiniteNumber(0, /*inclusive=*/false));
  cmd->add_option("--function", io.function, "graph function to run")->capture_default_str();
}

std::string Summarize(const ir::Tensor& t) {
  std::vector<double> v = t.ToDoubles();
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(v.size(), 8); ++i)
    head += (i ? ", " : "") + fmt::format("{:.6g}", v[i]);
  if (v.size() > 8) head += ", ...";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  double mean = v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  if (std::isnan(mean)) mean = std::numeric_limits<double>::quiet_NaN();  // "nan", not "-nan"
  return fmt::format("{} [{}]\n    min {:.6g}  max {:.6g}  mean {:.6g}", ir::ToString(t.type()),
                     head, lo, hi, mean);
}

std::vector<ir::Tensor> Inputs(const ir::GraphFunction& fn, const IoOptions& io) {
  std::vector<ir::Tensor> inputs = io.inputs_dir.empty()
                                       ? backends::RandomInputs(fn, io.seed)
                                       : frontend::ReadTensorProtoDirectory(io.inputs_dir, "input");
  fmt::print("inputs ({}):\n",
             io.inputs_dir.empty() ? fmt::format("random, seed {}", io.seed) : io.inputs_dir);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = i < fn.params.size() ? fn.node(fn.params[i]).name : "?";
    fmt::print("  {} %{}: {}\n", i, name, ir::ToString(inputs[i].type()));
  }
  return inputs;
}

// Compares outputs with expected ones; prints one line per output; true when all match.
bool Compare(const std::vector<ir::Tensor>& outputs, const std::vector<ir::Tensor>& expected,
             const std::string& against, double tolerance) {
  if (expected.size() != outputs.size()) {
    fmt::print("check against {}: FAILED, {} outputs but {} expected\n", against, outputs.size(),
               expected.size());
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].shape() != expected[i].shape()) {
      fmt::print("check output {} against {}: FAILED, shape {} but expected {}\n", i, against,
                 ir::ShapeToString(outputs[i].shape()), ir::ShapeToString(expected[i].shape()));
      ok = false;
      continue;
    }
    double error = ir::RelativeError(outputs[i], expected[i]);
    bool pass = error <= tolerance;
    ok = ok && pass;
    fmt::print("check output {} against {}: relative error {:.3g} (tolerance {:.3g}) {}\n", i,
               against, error, tolerance, pass ? "ok" : "FAILED");
    int64_t worst = pass ? -1 : ir::LargestDifference(outputs[i], expected[i]);
    if (worst >= 0) {
      fmt::print("  largest difference at element {}: {:.6g}, expected {:.6g}\n", worst,
                 outputs[i].GetDouble(worst), expected[i].GetDouble(worst));
    }
  }
  return ok;
}

// Creates the --outputs directory (before anything runs, so that a bad path fails fast).
void PrepareOutputsDir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    std::string reason = fs::exists(dir) ? "exists and is not a directory"
                                         : fmt::format("cannot be created: {}", error.message());
    throw ir::Error(fmt::format("--outputs {} {}", dir, reason), {.file = dir});
  }
}

void WriteOutputs(const std::vector<ir::Tensor>& outputs, const std::string& dir) {
  if (dir.empty()) return;
  PrepareOutputsDir(dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    frontend::WriteTensorProtoFile(outputs[i],
                                   (fs::path(dir) / fmt::format("output_{}.pb", i)).string());
  }
  fmt::print("wrote {} outputs to {}\n", outputs.size(), dir);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Command AddInterpretCommand(CLI::App& app) {
  auto model = std::make_shared<ModelOptions>();
  auto io = std::make_shared<IoOptions>();
  CLI::App* cmd = app.add_subcommand("interpret", "run a model on the reference interpreter");
  AddModelOptions(cmd, *model);
  AddIoOptions(cmd, *io);
  return [cmd, model, io]() {
    if (!*cmd) return -1;
    PrepareOutputsDir(io->outputs_dir);
    ir::IRModule module = LoadModel(*model);
    const ir::GraphFunction& fn = module.Get(io->function);
    std::vector<ir::Tensor> inputs = Inputs(fn, *io);
    auto start = std::chrono::steady_clock::now();
    std::vector<ir::Tensor> outputs = backends::RunReference(module, inputs, io->function);
    fmt::print("reference interpreter: {:.3f} s\noutputs:\n", Seconds(start));
    for (size_t i = 0; i < outputs.size(); ++i) fmt::print("  {}: {}\n", i, Summarize(outputs[i]));
    WriteOutputs(outputs, io->outputs_dir);
    if (io->check_dir.empty()) return 0;
    return Compare(outputs, frontend::ReadTensorProtoDirectory(io->check_dir, "output"),
                   io->check_dir, io->tolerance)
               ? 0
               : 1;
  };
}

namespace {

// Floating-point operations per call of each kernel of a legalized module, by name (the
// profile's GFLOP/s column).
std::map<std::string, double> KernelFlops(const ir::IRModule& legalized) {
  std::map<std::string, double> flops;
  for (const auto& [name, kernel] : legalized.kernel_functions()) {
    flops[name] = tuning::EstimateFlops(*kernel);
  }
  return flops;
}

// Builds `optimized` into a CPU executable, times it and prints its profile; the outputs.
std::vector<ir::Tensor> RunOnCpu(const ir::IRModule& optimized, const ir::Target& target,
                                 const PipelineOptions& pipeline, double pipeline_seconds,
                                 const std::string& function, const std::vector<ir::Tensor>& inputs,
                                 int repeat) {
  auto start = std::chrono::steady_clock::now();
  backends::BuildOptions build_options = backends::BuildOptionsFor(target, function);
  auto exe = backends::Build(optimized, build_options);
  double build_seconds = Seconds(start);
  fmt::print(
      "pipeline {}: {:.2f} s; build: {:.2f} s ({} kernel calls, arena {:.1f} MiB, {:.1f} MiB "
      "without reuse)\n",
      pipeline.text.empty() ? pipeline.name : pipeline.text, pipeline_seconds, build_seconds,
      exe->num_kernel_calls(), static_cast<double>(exe->arena_bytes()) / (1 << 20),
      static_cast<double>(exe->unplanned_bytes()) / (1 << 20));

  std::vector<ir::Tensor> outputs = exe->Run(inputs);  // warm-up
  std::vector<double> times;
  exe->set_profiling(false);
  for (int r = 0; r < std::max(1, repeat); ++r) {
    start = std::chrono::steady_clock::now();
    exe->RunInto(inputs, outputs);
    times.push_back(Seconds(start));
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  fmt::print("latency: median {:.3f} ms over {} runs (min {:.3f} ms, max {:.3f} ms)\n",
             median * 1e3, times.size(), times.front() * 1e3, times.back() * 1e3);
  // As many profiled runs as timed ones: a profile of a few runs on a busy host is noise.
  exe->set_profiling(true);
  int profiled_runs = std::max(1, repeat);
  start = std::chrono::steady_clock::now();
  for (int r = 0; r < profiled_runs; ++r) exe->RunInto(inputs, outputs);
  double profiled_wall = Seconds(start);
  double in_kernels = 0;
  for (const backends::KernelProfile& kernel : exe->Profile()) in_kernels += kernel.total_seconds;
  fmt::print(
      "per-kernel profile ({} runs; kernels {:.3f} ms of {:.3f} ms wall per run, {:.1f}% "
      "outside kernels):\n{}",
      profiled_runs, in_kernels / profiled_runs * 1e3, profiled_wall / profiled_runs * 1e3,
      profiled_wall > 0 ? 100.0 * (1.0 - in_kernels / profiled_wall) : 0.0,
      exe->ProfileTable(KernelFlops(exe->module())));
  if (!exe->external_functions().empty()) {
    fmt::print("external functions (implementation; activation reorders per call):\n");
    for (const auto& [name, function] : exe->external_functions()) {
      fmt::print("  {}: {}; {} reorders\n", name, function->Describe(),
                 function->reorders_per_call());
    }
  }
  return outputs;
}

// Builds `optimized` (lowered for a cuda target) into a GPU executable and times whole runs
// (inputs copied in, outputs copied out); the outputs.
std::vector<ir::Tensor> RunOnGpu(const ir::IRModule& optimized, const std::string& arch,
                                 const std::string& function, const std::vector<ir::Tensor>& inputs,
                                 int repeat) {
  auto start = std::chrono::steady_clock::now();
  auto exe = backends::cuda::GpuExecutable::Build(optimized, arch, function);
  fmt::print("build for {}: {:.2f} s ({} kernel calls, device arena {:.1f} MiB)\n", arch,
             Seconds(start), exe->num_kernel_calls(),
             static_cast<double>(exe->arena_bytes()) / (1 << 20));
  std::vector<ir::Tensor> outputs = exe->Run(inputs);  // warm-up
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeat); ++r) {
    start = std::chrono::steady_clock::now();
    outputs = exe->Run(inputs);
    times.push_back(Seconds(start));
  }
  std::sort(times.begin(), times.end());
  fmt::print("latency (with the copies to and from the device): median {:.3f} ms over {} runs\n",
             times[times.size() / 2] * 1e3, times.size());
  return outputs;
}

// `tandem run --dynamic`: one build per bucket of the symbol's range (the pipeline's graph part,
// then dynamic lowering), run on the inputs (their shapes give the size; random at the bound
// without --inputs), checked against the interpreter on the model at that size.
int RunDynamic(const ModelOptions& model, const PipelineOptions& pipeline, const IoOptions& io,
               int repeat, bool no_reference, const DynamicOptions& dynamic) {
  DynamicModel built = BuildDynamicModel(model, pipeline, dynamic);
  backends::BucketedExecutable& executable = *built.executable;
  kernels::DynamicRanges ranges = executable.ranges();
  auto load = [&](const std::vector<int64_t>& sizes) {
    return LoadModel(model, kernels::SymbolSizes(ranges, sizes));
  };
  std::vector<ir::Tensor> inputs = Inputs(load(kernels::BoundsOf(ranges)).Get(io.function), io);
  std::vector<int64_t> sizes = executable.SizesOf(inputs);
  std::string at = kernels::SizesText(ranges, sizes);  // "batch=2, seq=77"
  backends::DynamicExecutable& bucket = executable.BucketFor(sizes);
  // "[1, 32]" when the buckets split the first symbol only, else every symbol's range.
  std::string bucket_text =
      executable.SplitsFirstSymbolOnly()
          ? fmt::format("[{}, {}]", bucket.range().minimum, bucket.range().bound)
          : kernels::ToString(bucket.ranges());
  std::vector<ir::Tensor> outputs = executable.Run(inputs);
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    executable.Run(inputs);
    times.push_back(Seconds(start));
  }
  std::sort(times.begin(), times.end());
  fmt::print("{} (bucket {}): latency median {:.3f} ms over {} runs\n", at, bucket_text,
             times[times.size() / 2] * 1e3, times.size());
  bucket.executable().set_profiling(true);
  for (int r = 0; r < repeat; ++r) executable.Run(inputs);
  bucket.executable().set_profiling(false);
  // The kernels count the operations of the bucket's bounds, so rates are shown only there.
  bool at_bounds = sizes == kernels::BoundsOf(bucket.ranges());
  if (!at_bounds)
    fmt::print("(GFLOP/s only at the bucket's bounds, whose work the kernels count)\n");
  fmt::print("{}outputs:\n",
             bucket.executable().ProfileTable(at_bounds ? KernelFlops(bucket.executable().module())
                                                        : std::map<std::string, double>{}));
  for (size_t i = 0; i < outputs.size(); ++i) fmt::print("  {}: {}\n", i, Summarize(outputs[i]));
  WriteOutputs(outputs, io.outputs_dir);
  bool ok = true;
  if (!no_reference) {
    ok = Compare(outputs, backends::RunReference(load(sizes), inputs, io.function),
                 fmt::format("the reference interpreter ({})", at), io.tolerance);
  }
  if (!io.check_dir.empty()) {
    ok = Compare(outputs, frontend::ReadTensorProtoDirectory(io.check_dir, "output"), io.check_dir,
                 io.tolerance) &&
         ok;
  }
  return ok ? 0 : 1;
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto model = std::make_shared<ModelOptions>();
  auto pipeline = std::make_shared<PipelineOptions>();
  auto io = std::make_shared<IoOptions>();
  auto repeat = std::make_shared<int>(20);
  auto threads = std::make_shared<int>(0);
  auto no_reference = std::make_shared<bool>(false);
  auto dynamic = std::make_shared<DynamicOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "optimize a model with a pipeline, build it, run it, check it and time it");
  AddModelOptions(cmd, *model);
  AddPipelineOptions(cmd, *pipeline);
  AddIoOptions(cmd, *io);
  cmd->add_option("--repeat", *repeat, "timed runs (the median is reported)")
      ->capture_default_str()
      ->check(IntegerIn(1, INT_MAX));
  cmd->add_option("--threads", *threads, "threads for parallel loops (0: all cores)")
      ->check(IntegerIn(0, backends::ThreadPool::kMaxThreads));
  cmd->add_flag("--no-reference", *no_reference,
                "skip the comparison with the reference interpreter");
  AddDynamicOptions(cmd, *dynamic);
  return [=]() {
    if (!*cmd) return -1;
    if (*threads > 0) backends::ThreadPool::Global().SetNumThreads(*threads);
    PrepareOutputsDir(io->outputs_dir);
    if (dynamic->enabled()) {
      return RunDynamic(*model, *pipeline, *io, *repeat, *no_reference, *dynamic);
    }
    ir::IRModule module = LoadModel(*model);
    const ir::GraphFunction& fn = module.Get(io->function);
    std::vector<ir::Tensor> inputs = Inputs(fn, *io);

    auto start = std::chrono::steady_clock::now();
    ir::IRModule optimized = RunPipeline(module, *pipeline);
    double pipeline_seconds = Seconds(start);
    ir::Target target = PipelineTarget(*pipeline);
    std::vector<ir::Tensor> outputs;
    if (target.kind == "cuda") {
      outputs =
          RunOnGpu(optimized, backends::ResolveTarget(target).arch, io->function, inputs, *repeat);
    } else {
      outputs =
          RunOnCpu(optimized, target, *pipeline, pipeline_seconds, io->function, inputs, *repeat);
    }
    fmt::print("outputs:\n");
    for (size_t i = 0; i < outputs.size(); ++i) fmt::print("  {}: {}\n", i, Summarize(outputs[i]));
    WriteOutputs(outputs, io->outputs_dir);

    bool ok = true;
    if (!*no_reference) {
      start = std::chrono::steady_clock::now();
      std::vector<ir::Tensor> reference = backends::RunReference(module, inputs, io->function);
      fmt::print("reference interpreter: {:.3f} s\n", Seconds(start));
      ok = Compare(outputs, reference, "the reference interpreter", io->tolerance) && ok;
    }
    if (!io->check_dir.empty()) {
      ok = Compare(outputs, frontend::ReadTensorProtoDirectory(io->check_dir, "output"),
                   io->check_dir, io->tolerance) &&
           ok;
    }
    return ok ? 0 : 1;
  };
}

}  // namespace tandem::tools
