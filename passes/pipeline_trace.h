// The trace of a whole pipeline run, so that a tuned pipeline's result can be rebuilt without
// tuning again.
//
// RunPipelineRecorded runs a pipeline like PassContext::RunPipeline and also returns its trace:
// one instruction per pass of the outermost pipeline, in order: a heuristic pass as a one-choice
// "apply" instruction naming its pipeline text, a tuning pass as the instructions of its winning
// candidate (its own decisions and those of the passes it nests). ReplayTrace(module, trace)
// then gives a module structurally equal to the returned one, measuring nothing; this is what
// `tandem run --db` and a second `tandem tune` do with a stored tuning::TuningRun.
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

}  // namespace tandem::passes
