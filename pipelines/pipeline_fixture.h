// Pipeline regression fixtures: pin what a tuning pipeline decides on a model, replayed from a
// recorded database instead of measured again.
//
// Recording runs the pipeline for real (builder, process runner, a fresh in-memory database,
// a trial budget, a seed) and writes the database as JSON lines: every measurement taken, and
// the TuningRun with the pipeline's trace, decisions and evaluation counts. Replaying imports
// that file, runs the same pipeline with the same seed and budget under the recorded target
// descriptor, with a builder and runner that refuse to measure: every evaluation is answered
// from the fixture (its first answer charged to the budget, as the measurement it stands for
// was), so a pipeline that behaves as when it was recorded asks only for what was measured then
// and takes the same decisions. A change in a pass, a search space or the cost model shows as
// a different trace (TraceDiff prints it readably) or as evaluations the fixture cannot answer.
// See docs/pipeline_regression_tests.md.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/target.h"
#include "ir/trace.h"
#include "tuning/session/tuning_run.h"

namespace tandem::pipelines {

struct FixtureOptions {
  std::string model_name;  // for reports
  std::string pipeline;    // pipeline text or registered pipeline name
  std::string target = "llvm";
  int64_t trials = 64;  // the trial budget (a fixture needs one: time budgets do not replay)
  uint64_t seed = 0;
  int repeats = 3;  // timed repeats per measurement while recording
};

// Runs the pipeline for real and writes the fixture (JSON lines) to `path`; returns the run.
tuning::TuningRun RecordPipelineFixture(const ir::IRModule& model, const FixtureOptions& options,
                                        const std::string& path);

struct FixtureReplay {
  tuning::TuningRun recorded;  // the run stored in the fixture
  tuning::TuningRun replayed;  // this run (same fields; latencies not measured)
  ir::IRModule module;         // the pipeline's result
  // Evaluations the fixture could not answer (each needed a real measurement): 0 when the
  // pipeline asked only for what was measured when the fixture was recorded.
  int64_t unanswered = 0;
};

// The resolved target the fixture at `path` was recorded for (its last run's). Replaying it
// needs no particular machine, but code built for it runs only where
// backends::MissingHostFeatures(FixtureTarget(path)) is empty.
ir::Target FixtureTarget(const std::string& path);

// Replays the fixture at `path` on `model` (the model it was recorded on: Error otherwise).
FixtureReplay ReplayPipelineFixture(const ir::IRModule& model, const std::string& path);

// A readable difference of two traces: one line per instruction (kind, pass, decision; long
// decisions shortened), unchanged lines as context, removed lines with "-", added with "+".
// Empty when the traces are equal.
std::string TraceDiff(const ir::Trace& expected, const ir::Trace& actual);

}  // namespace tandem::pipelines
