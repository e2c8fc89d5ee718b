// The trace of a whole pipeline run, so that a tuned pipeline's result can be rebuilt without
// tuning again.
//
// RunPipelineRecorded runs a pipeline like PassContext::RunPipeline and also returns its trace:
// one instruction per pass of the outermost pipeline, in order: a heuristic pass as a one-choice
// "apply" instruction naming its pipeline text (or, when it took something from the tuning
// database, such as Legalize's best recorded kernel schedules, what it took:
// PassContext::database_choice), a tuning pass as the instructions of its winning
// candidate (its own decisions and those of the passes it nests). ReplayTrace(module, trace)
// then gives a module structurally equal to the returned one, measuring nothing and reading no
// database: whatever the database gains later, the replay builds the same module. This is what
// `tandem run --db`, `tandem run --trace` and a second `tandem tune` do with a recorded trace.
#pragma once

#include "ir/trace.h"
#include "passes/pass.h"

namespace tandem::passes {

struct RecordedRun {
  ir::IRModule module;
  ir::Trace trace;
};

RecordedRun RunPipelineRecorded(const Pass& pipeline, const ir::IRModule& module,
                                PassContext& context);

// A tuned model's decisions as a file of their own (`tandem tune --save-trace`, `tandem run
// --trace`): the pipeline trace with the model it was recorded on and the target descriptor of
// the run, so that the tuned model is rebuilt with no database. JSON:
// {"format":"tandem-trace","version":1,"model":...,"model_hash":...,"pipeline":...,
//  "target":...,"trace":{...Trace::ToJson...}}.
struct TraceFile {
  std::string model;       // the model's name (for people)
  std::string model_hash;  // ir::StructuralHash of the model, hex
  std::string pipeline;    // the pipeline text that made the trace
  std::string target;      // the run's target descriptor (tuning::TargetOfDescriptor reads it)
  ir::Trace trace;

  bool operator==(const TraceFile& other) const = default;
};
// Writes the file; Error naming it when it cannot be written.
void WriteTraceFile(const TraceFile& file, const std::string& path);
// Reads a file WriteTraceFile wrote; Error naming the file and what is wrong.
TraceFile ReadTraceFile(const std::string& path);
// The module the trace file's decisions make of `model` (Error when `model` is not the one it
// was recorded on), replayed under the recorded target with no tuning database.
ir::IRModule ReplayTraceFile(const ir::IRModule& model, const TraceFile& file);

}  // namespace tandem::passes
