// `tandem export`: a model optimized by a pipeline (or rebuilt from a tuning database or a trace)
// written as a deployable artifact: one shared library that libtandem_runtime loads and runs with
// no compiler, database or ONNX file (backends/export/artifact_export.h).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backends/export/artifact_export.h"
#include "backends/runtime/artifact.h"
#include "ir/error.h"
#include "ir/structural.h"
#include "tools/commands.h"

namespace tandem::tools {

namespace {

std::string HashOfFile(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return fmt::format("{:016x}", backends::ArtifactChecksum(
                                    reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

}  // namespace

Command AddExportCommand(CLI::App& app) {
  auto model = std::make_shared<ModelOptions>();
  auto pipeline = std::make_shared<PipelineOptions>();
  auto output = std::make_shared<std::string>();
  auto function = std::make_shared<std::string>("main");
  CLI::App* cmd = app.add_subcommand(
      "export",
      "optimize a model with a pipeline (or rebuild it from --db / --trace) and write it as a "
      "shared library that libtandem_runtime loads (C API: include/tandem/runtime.h)");
  AddModelOptions(cmd, *model);
  AddPipelineOptions(cmd, *pipeline);
  cmd->add_option("-o,--output", *output, "the shared library to write (e.g. model.so)")
      ->required();
  cmd->add_option("--function", *function, "graph function to export")->capture_default_str();
  auto format = std::make_shared<std::string>("shared");
  auto name = std::make_shared<std::string>();
  cmd->add_option("--format", *format,
                  "shared: a shared library for tandem_model_load; object: a relocatable object "
                  "to link into a program, loaded with tandem_model_load_linked")
      ->check(CLI::IsMember({"shared", "object"}))
      ->capture_default_str();
  cmd->add_option("--name", *name,
                  "with --format object: the model's name in its symbols (tandem_artifact_NAME); "
                  "default: the output file's stem");
  return [=]() {
    if (!*cmd) return -1;
    auto start = std::chrono::steady_clock::now();
    if (ir::ParseTarget(pipeline->target).kind != "llvm") {
      throw ir::Error(fmt::format(
          "tandem export writes artifacts for CPU targets (llvm); '{}' is not one: a GPU model "
          "runs through `tandem run --target cuda` only so far",
          pipeline->target));
    }
    ir::IRModule module = LoadModel(*model);
    ir::IRModule optimized = RunPipeline(module, *pipeline);
    ir::Target target = PipelineTarget(*pipeline);
    backends::BuildOptions build = backends::BuildOptionsFor(target, *function);
    backends::ExportOptions options;
    options.path = *output;
    options.object = *format == "object";
    options.linked_name = name->empty() ? std::filesystem::path(*output).stem().string() : *name;
    options.pipeline = pipeline->text.empty() ? pipeline->name : pipeline->text;
    options.trace_hash = HashOfFile(pipeline->trace);
    options.model_hash = fmt::format("{:016x}", ir::StructuralHash(module));
    options.target = backends::DescribeTarget(build.codegen);
    options.threads = target.num_threads;
    backends::ExportSummary summary = backends::ExportArtifact(optimized, build, options);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(
        "wrote {} ({:.1f} MiB: {} kernels, {} kernel calls, {:.1f} MiB of constants) in {:.2f} s\n"
        "target: {}\nrequired CPU features: {}\n",
        *output, static_cast<double>(summary.file_bytes) / (1 << 20), summary.kernels,
        summary.kernel_calls, static_cast<double>(summary.constant_bytes) / (1 << 20), seconds,
        options.target.substr(0, options.target.find(" features=")),
        summary.required_features.empty() ? "none" : summary.required_features);
    return 0;
  };
}

}  // namespace tandem::tools
