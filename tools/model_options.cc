#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "backends/target/resolved_target.h"
#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "ir/file_read.h"
#include "ir/parser.h"
#include "ir/structural.h"
#include "passes/instruments.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "passes/tuning_pass.h"
#include "pipelines/pipeline_registry.h"
#include "tools/commands.h"
#include "tuning/session/tuning_run.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tools {

namespace fs = std::filesystem;

namespace {

void ParseInputShape(const std::string& text, std::map<std::string, ir::Shape>& shapes) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    throw ir::Error(fmt::format("--input-shape '{}' must look like NAME=1,3,224,224", text));
  }
  ir::Shape shape;
  std::stringstream dims(text.substr(eq + 1));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    try {
      size_t used = 0;
      int64_t d = std::stoll(dim, &used);
      if (used != dim.size() || d < 0) throw std::invalid_argument(dim);
      shape.push_back(d);
    } catch (const std::exception&) {
      throw ir::Error(
          fmt::format("--input-shape '{}': '{}' is not a non-negative integer", text, dim));
    }
  }
  shapes[text.substr(0, eq)] = shape;
}

}  // namespace

void AddModelOptions(CLI::App* command, ModelOptions& options) {
  command->add_option("model", options.path, "ONNX model (.onnx) or Tandem IR text file")
      ->required();
  command->add_option("--input-shape", options.input_shapes,
                      "concrete shape for an input with symbolic dimensions, NAME=1,3,224,224 "
                      "(repeatable)");
  command->add_option("--symbol", options.symbols,
                      "size of an ONNX symbolic dimension, NAME=SIZE: binds it in every input "
                      "that has it (repeatable)");
}

void AddModelNameOption(CLI::App* command, ModelOptions& options) {
  command->add_option("--model-name", options.name,
                      "the model's name in the tuning database and reports (default: the "
                      "file's stem, or its folder's name for a file named model.onnx)");
}

std::string ModelName(const ModelOptions& options) {
  if (!options.name.empty()) return options.name;
  fs::path file(options.path);
  std::string stem = file.stem().string();
  if (stem == "model" && file.has_parent_path() && !file.parent_path().filename().empty()) {
    return file.parent_path().filename().string();
  }
  return stem;
}

ir::IRModule LoadModel(const ModelOptions& options, const std::map<std::string, int64_t>& symbols) {
  if (fs::path(options.path).extension() == ".onnx") {
    frontend::OnnxImportOptions import_options;
    for (const std::string& s : options.symbols) {
      frontend::ParseSymbolBinding(s, "--symbol", import_options.symbols);
    }
    for (const auto& [name, size] : symbols) import_options.symbols[name] = size;
    for (const std::string& s : options.input_shapes)
      ParseInputShape(s, import_options.input_shapes);
    return frontend::ImportOnnxFile(options.path, import_options);
  }
  return ir::ParseModule(ir::ReadRegularFile(options.path, "model file"), options.path);
}

void AddPipelineOptions(CLI::App* command, PipelineOptions& options) {
  command->add_option("--pipeline", options.name, "registered pipeline (see `tandem pipelines`)")
      ->capture_default_str();
  command->add_option("--pipeline-text", options.text,
                      "explicit pipeline, e.g. \"InferType, FoldConstant, Legalize\" (overrides "
                      "--pipeline)");
  command->add_option("--pipeline-file", options.pipeline_file,
                      "file of user pipelines to register before looking up --pipeline");
  command->add_option("--target", options.target, "target, e.g. \"llvm -threads=2\"")
      ->capture_default_str();
  command->add_option("--print-ir-before", options.print_before,
                      "print the IR before this pass (repeatable; * for every pass)");
  command->add_option("--print-ir-after", options.print_after,
                      "print the IR after this pass (repeatable; * for every pass)");
  command->add_flag("--verify-each", options.verify_each,
                    "verify the IR after every pass and name the pass that breaks it");
  command->add_flag("--time-passes", options.time_passes, "print the time spent in each pass");
  command->add_option("--reproducer-dir", options.reproducer_dir,
                      "write a crash reproducer (input IR + pipeline) here when a pass fails");
  command->add_option("--pipeline-seed", options.seed,
                      "random seed of the pipeline (tuning decisions)");
  command->add_option(
      "--db", options.database,
      "tuning database (SQLite file): a pipeline tuned on this model by `tandem tune` "
      "is replayed from its recorded decisions; otherwise kernels get their best "
      "recorded schedules and tuning passes record their measurements there");
  command->add_option("--trace", options.trace,
                      "trace file written by `tandem tune --save-trace`: rebuild the tuned model "
                      "from its decisions, under its recorded target, with no database");
}

passes::PassPtr PreparePipeline(const PipelineOptions& options, passes::PassContext& context,
                                std::shared_ptr<passes::TimingInstrument>& timing) {
  auto& registry = pipelines::PipelineRegistry::Global();
  if (!options.pipeline_file.empty()) registry.LoadFile(options.pipeline_file);
  context.target = ir::ParseTarget(options.target);
  backends::CheckHasCodeGenerator(context.target);
  context.seed = options.seed;
  context.verify_each = options.verify_each;
  context.reproducer_dir = options.reproducer_dir;
  if (!options.database.empty()) {
    context.tuning = std::make_shared<tuning::TuningSession>(
        context.target, tuning::OpenSqliteDatabase(options.database),
        std::make_shared<tuning::LocalBuilder>(), std::make_shared<tuning::ProcessRunner>(),
        tuning::TuningSession::Options{.seed = options.seed, .database_name = options.database});
  }
  if (options.time_passes) {
    timing = std::make_shared<passes::TimingInstrument>();
    context.instruments.push_back(timing);
  }
  if (!options.print_before.empty() || !options.print_after.empty()) {
    context.instruments.push_back(std::make_shared<passes::PrintIRInstrument>(
        std::cerr, std::set<std::string>(options.print_before.begin(), options.print_before.end()),
        std::set<std::string>(options.print_after.begin(), options.print_after.end())));
  }
  return options.text.empty() ? registry.Create(options.name, context.target)
                              : passes::ParsePipeline(options.text);
}

ir::Target PipelineTarget(const PipelineOptions& options) {
  if (!options.trace.empty()) {
    return tuning::TargetOfDescriptor(passes::ReadTraceFile(options.trace).target);
  }
  return ir::ParseTarget(options.target);
}

ir::IRModule RunPipeline(const ir::IRModule& module, const PipelineOptions& options) {
  if (!options.trace.empty()) {
    passes::TraceFile file = passes::ReadTraceFile(options.trace);
    std::cerr << fmt::format("replaying the {} decisions of {} (pipeline {}) for target {}\n",
                             file.trace.size(), options.trace, file.pipeline,
                             file.target.substr(0, file.target.find('|')));
    return passes::ReplayTraceFile(module, file);
  }
  passes::PassContext context;
  std::shared_ptr<passes::TimingInstrument> timing;
  passes::PassPtr pipeline = PreparePipeline(options, context, timing);
  if (context.tuning) {
    // The database has a tuning run of this pipeline on this model: rebuild its result.
    std::string text = passes::PrintPipeline(*pipeline);
    std::vector<std::string> skipped;
    std::optional<tuning::TuningRun> run = tuning::LatestTuningRun(
        context.tuning->database(), ir::HashToHex(ir::StructuralHash(module)), text,
        context.tuning->target_descriptor(), &skipped);
    WarnOfSkippedRuns(*context.tuning, skipped);
    if (run) {
      std::cerr << fmt::format(
          "replaying the {} decisions of the tuning run of {} from the database\n",
          run->trace.size(), run->measured_at);
      ir::IRModule replayed = passes::ReplayTrace(module, run->trace, context);
      WarnOfSchedulesNotReplayed(*context.tuning);
      return replayed;
    }
  }
  ir::IRModule out = context.RunPipeline(*pipeline, module);
  if (timing) std::cerr << timing->Report();
  if (context.tuning) WarnOfSchedulesNotReplayed(*context.tuning);
  return out;
}

void WarnOfSkippedRuns(tuning::TuningSession& session, const std::vector<std::string>& skipped) {
  for (const std::string& reason : skipped) {
    std::string where = session.options().database_name.empty()
                            ? std::string()
                            : session.options().database_name + ": ";
    session.Warn(
        fmt::format("{}skipped a stored tuning run that does not decode: {}", where, reason));
  }
}

void WarnOfSchedulesNotReplayed(tuning::TuningSession& session) {
  std::string note = tuning::NotReplayedNote(*session.history_best_stats());
  if (!note.empty()) session.Warn(note);
}

}  // namespace tandem::tools
