// The subcommands of the `tandem` program. Each Add*Command registers its options on the CLI11
// app and returns the function that runs it (exit status; user errors are thrown as ir::Error
// and reported by main).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/runtime/bucketed_executable.h"
#include "ir/graph.h"
#include "ir/target.h"
#include "passes/instruments.h"
#include "passes/pass.h"
#include "tuning/database/database.h"
#include "tuning/session/tuning_run.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tools {

using Command = std::function<int()>;

// How a model file is found and read.
struct ModelOptions {
  std::string path;
  std::vector<std::string> input_shapes;  // NAME=1,3,224,224
  std::string name;                       // --model-name ("": from the path, see ModelName)
  std::vector<std::string> symbols;       // NAME=SIZE: symbolic dimensions bound by name
};
void AddModelOptions(CLI::App* command, ModelOptions& options);
// Adds --model-name (how tuning runs and reports name the model) to a command that records runs.
void AddModelNameOption(CLI::App* command, ModelOptions& options);
// The model's name in tuning runs, reports and benchmark tables, the same for every command:
// --model-name when given, else the file's stem, or its folder's name for a file named
// "model.*" (ONNX model zoo folders: "resnet18/model.onnx" is "resnet18").
std::string ModelName(const ModelOptions& options);
// Loads an ONNX model (.onnx) or a Tandem IR text file (anything else); `symbols` binds the
// ONNX model's symbolic dimensions by name (frontend::OnnxImportOptions::symbols).
ir::IRModule LoadModel(const ModelOptions& options,
                       const std::map<std::string, int64_t>& symbols = {});

// Options that choose and instrument a pipeline.
struct PipelineOptions {
  std::string name = "default_heuristic";
  std::string text;  // explicit pipeline text (overrides name)
  std::string pipeline_file;
  std::string target = "llvm";
  std::vector<std::string> print_before, print_after;
  bool verify_each = false;
  bool time_passes = false;
  std::string reproducer_dir;
  uint64_t seed = 0;
  std::string database;  // tuning database: best recorded kernel schedules are applied
  std::string trace;  // trace file (`tandem tune --save-trace`): replayed instead of the pipeline
};
void AddPipelineOptions(CLI::App* command, PipelineOptions& options);
// Configures `context` from the options (target, seed, verification, reproducers, timing and IR
// dump instruments) and returns the chosen pipeline; `timing` is set when --time-passes is on.
passes::PassPtr PreparePipeline(const PipelineOptions& options, passes::PassContext& context,
                                std::shared_ptr<passes::TimingInstrument>& timing);
// Runs the chosen pipeline on the module (printing timing/IR dumps as asked, and a warning when
// stored schedules of its kernels no longer replay), or replays the trace file when one is given.
ir::IRModule RunPipeline(const ir::IRModule& module, const PipelineOptions& options);
// The target the result of RunPipeline is built for: --target, or the trace file's target.
ir::Target PipelineTarget(const PipelineOptions& options);

// --dynamic SYMBOL=MIN:MAX (once per symbolic dimension) and --buckets [SYMBOL=]B1,B2,... (once
// per split symbol): the ranges of the model's symbolic dimensions, and the bounds of the
// buckets of the first one or of the named one (none: one bucket; several: their grid,
// kernels::ParseDynamicBucketGrid).
struct DynamicOptions {
  std::vector<std::string> ranges;
  std::vector<std::string> buckets;
  bool enabled() const { return !ranges.empty(); }
};
// The parsed and checked ranges of `options` (kernels::CheckDynamicRanges).
kernels::DynamicRanges ParseDynamicOptions(const DynamicOptions& options);
// Adds --dynamic and --buckets.
void AddDynamicOptions(CLI::App* command, DynamicOptions& options);
// A model built for a range of sizes: the build, the pipeline text whose graph part it ran, the
// target descriptor ("" without a database or trace), and its decisions as a dynamic bucket
// trace (tuning/search/dynamic_bucket_trace.h).
struct DynamicModel {
  std::unique_ptr<backends::BucketedExecutable> executable;
  std::string pipeline;
  std::string target;
  ir::Trace trace;
};
// The model built once per bucket of the range (the pipeline's graph part, then dynamic
// lowering; backends/runtime/bucketed_executable.h). The kernels take their schedules from the
// trace file (--trace, from `tandem tune --dynamic`: the same buckets and schedules, no
// database), or their best recorded ones from --db (records of the same kernels at each bucket's
// bound, from `tandem tune --dynamic`), or the defaults. Prints the build time and signatures to
// stderr. `records_target`, when given, is the target descriptor whose records to read (a tuning
// run's, whose measurement settings may differ from the defaults).
DynamicModel BuildDynamicModel(const ModelOptions& model, const PipelineOptions& pipeline,
                               const DynamicOptions& dynamic,
                               const std::string& records_target = "");
// Warns through the session when kernels got default schedules because their stored schedules
// no longer replay (tuning::NotReplayedNote); nothing when none did.
void WarnOfSchedulesNotReplayed(tuning::TuningSession& session);

// Warns through the session of each stored tuning run that LatestTuningRun skipped because it
// does not decode (naming the database file and the record).
void WarnOfSkippedRuns(tuning::TuningSession& session, const std::vector<std::string>& skipped);

// Opens a tuning database file that must already exist, read-only: reading commands never
// create one or change it.
std::unique_ptr<tuning::Database> OpenExistingDatabase(const std::string& path);

// What `tandem tune` takes (its options; the defaults are the command's).
struct TuneOptions {
  ModelOptions model;  // the model's name comes from here (ModelName)
  PipelineOptions pipeline{.name = "graph_tuning"};
  int64_t trials = 0;  // most real measurements of the job (0: no limit)
  int repeats = 5;
  int warmup = 1;
  double min_warmup_ms = 50;
  double min_repeat_ms = 2;
  double timeout = 60;
  bool flush_cache = false;
  int threads = 0;  // threads of the measured programs (0: all cores)
  int build_workers = 0;
  bool in_process = false;
  std::string output;      // --output: the tuned module's IR text
  std::string trace_file;  // --save-trace
  double time_budget = 0;  // seconds (0: no limit)
  bool retune = false;
  int confirm_rounds = tuning::TuningSession::Options().confirm_rounds;
  DynamicOptions dynamic;  // --dynamic, --buckets: tune each bucket at its bound
};

// What TuneModel made: the tuned module, the run (trace, decisions, counts, latency before and
// after) as committed to the database, whether it was replayed from an earlier run, and whether
// the tuned module measured fine.
struct TunedModel {
  ir::IRModule module;
  tuning::TuningRun run;
  bool replayed = false;
  bool ok = false;
  std::shared_ptr<tuning::Database> database;
  std::string pipeline_label;  // the pipeline's name, or "pipeline" for pipeline text
};

// Called after every evaluated batch with the event, the session's counts so far and the seconds
// since the session started.
using TuneProgress =
    std::function<void(const tuning::ProgressEvent&, const tuning::EvaluationCounts&, double)>;

// What `tandem tune` does before printing: tunes `model` with the pipeline under the budget,
// recording measurements and the run in the database (an earlier run with the same model,
// pipeline, budget and seed is replayed instead, unless `retune`; a killed run resumes). Progress
// goes to `progress`, or as lines to stderr when it is empty. Errors are ir::Error.
TunedModel TuneModel(const ir::IRModule& model, const TuneOptions& options,
                     const TuneProgress& progress = {});

Command AddShowCommand(CLI::App& app);
Command AddInterpretCommand(CLI::App& app);
Command AddPipelinesCommand(CLI::App& app);
Command AddCompileCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);
Command AddDbCommand(CLI::App& app);
Command AddTuneCommand(CLI::App& app);
Command AddBenchCommand(CLI::App& app);
Command AddFixtureCommand(CLI::App& app);
Command AddReportCommand(CLI::App& app);
Command AddExportCommand(CLI::App& app);
Command AddOpsCommand(CLI::App& app);

}  // namespace tandem::tools
