#include "pipelines/pipeline_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/file_read.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "pipelines/pipeline_registry.h"
#include "tuning/database/replay_database.h"
#include "tuning/measure/builder.h"
#include "tuning/measure/runner.h"

namespace tandem::pipelines {

namespace {

constexpr const char* kNotInFixture =
    "not in the fixture: this evaluation needs a real measurement (the pipeline asks for "
    "something it did not ask for when the fixture was recorded)";

// Refuses every build: a replay measures nothing.
class RefusingBuilder : public tuning::Builder {
 public:
  std::vector<tuning::BuildOutput> Build(const std::vector<tuning::BuildInput>& inputs) override {
    refused += static_cast<int64_t>(inputs.size());
    std::vector<tuning::BuildOutput> outputs(inputs.size());
    for (tuning::BuildOutput& output : outputs) output.error = kNotInFixture;
    return outputs;
  }
  int64_t refused = 0;
};

class RefusingRunner : public tuning::Runner {
 public:
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    return std::vector<tuning::MeasureResult>(inputs.size(),
                                              tuning::MeasureResult::Failure(kNotInFixture));
  }
};

passes::PassPtr MakePipeline(const std::string& pipeline, const ir::Target& target) {
  PipelineRegistry& registry = PipelineRegistry::Global();
  for (const PipelineDef& def : registry.List()) {
    if (def.name == pipeline) return registry.Create(pipeline, target);
  }
  return passes::ParsePipeline(pipeline);
}

// Runs the pipeline in `context` (whose session is set) and summarizes the run.
std::pair<tuning::TuningRun, ir::IRModule> RunAndSummarize(const ir::IRModule& model,
                                                           const passes::Pass& pipeline,
                                                           const std::string& model_name,
                                                           passes::PassContext& context) {
  tuning::TuningSession& session = *context.tuning;
  double start = session.ElapsedSeconds();
  passes::RecordedRun recorded = passes::RunPipelineRecorded(pipeline, model, context);
  tuning::TuningRun run = tuning::SummarizeTuningRun(
      session, model_name, ir::HashToHex(ir::StructuralHash(model)),
      passes::PrintPipeline(pipeline), recorded.trace, session.ElapsedSeconds() - start);
  return {std::move(run), std::move(recorded.module)};
}

// "TuneLayout NCHW16c" for a trace line; decisions longer than `width` are shortened with a
// hash of the whole so that two different long decisions still differ.
std::string InstructionLine(const ir::Instruction& instruction) {
  constexpr size_t kWidth = 100;
  std::string decision;
  if (instruction.decision) {
    decision = std::holds_alternative<std::string>(*instruction.decision)
                   ? std::get<std::string>(*instruction.decision)
                   : ir::AttrValueToJson(*instruction.decision).dump();
  }
  if (decision.size() > kWidth) {
    ir::StableHasher hasher;
    hasher.Update(decision);
    decision = fmt::format("{}... ({} chars, hash {})", decision.substr(0, kWidth), decision.size(),
                           ir::HashToHex(hasher.Digest()));
  }
  std::string pass = instruction.attrs.GetString("pass", instruction.kind);
  return decision.empty() ? pass : fmt::format("{} => {}", pass, decision);
}

}  // namespace

tuning::TuningRun RecordPipelineFixture(const ir::IRModule& model, const FixtureOptions& options,
                                        const std::string& path) {
  if (options.trials <= 0) {
    throw ir::Error(
        "a pipeline fixture needs a trial budget (trials > 0): an unlimited or "
        "time-limited run does not replay");
  }
  passes::PassContext context;
  context.target = ir::ParseTarget(options.target);
  context.seed = options.seed;
  tuning::TuningSession::Options session_options;
  session_options.seed = options.seed;
  session_options.max_measurements = options.trials;
  session_options.measure.repeats = options.repeats;
  auto database = std::shared_ptr<tuning::Database>(tuning::MakeInMemoryDatabase());
  context.tuning = std::make_shared<tuning::TuningSession>(
      context.target, database, std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<tuning::ProcessRunner>(), session_options);
  passes::PassPtr pipeline = MakePipeline(options.pipeline, context.target);
  auto [run, module] = RunAndSummarize(model, *pipeline, options.model_name, context);
  tuning::CommitTuningRun(*database, run);
  std::ofstream out(path);
  database->ExportJsonLines(out);
  if (!out) throw ir::Error(fmt::format("cannot write the fixture {}", path));
  return run;
}

namespace {

// The fixture's records and its runs (at least one: Error otherwise).
std::pair<std::shared_ptr<tuning::Database>, std::vector<tuning::TuningRun>> ReadFixture(
    const std::string& path) {
  std::istringstream in(ir::ReadRegularFile(path, "fixture"));
  auto database = std::shared_ptr<tuning::Database>(tuning::MakeInMemoryDatabase());
  database->ImportJsonLines(in);
  std::vector<tuning::TuningRun> runs = tuning::TuningRuns(*database);
  if (runs.empty()) throw ir::Error(fmt::format("the fixture {} holds no tuning run", path));
  return {std::move(database), std::move(runs)};
}

}  // namespace

ir::Target FixtureTarget(const std::string& path) {
  return tuning::TargetOfDescriptor(ReadFixture(path).second.back().target);
}

FixtureReplay ReplayPipelineFixture(const ir::IRModule& model, const std::string& path) {
  auto [database, runs] = ReadFixture(path);
  FixtureReplay replay;
  replay.recorded = runs.back();
  const tuning::TuningRun& recorded = replay.recorded;
  std::string model_hash = ir::HashToHex(ir::StructuralHash(model));
  if (model_hash != recorded.model_hash) {
    throw ir::Error(
        fmt::format("the fixture {} was recorded on another model (hash {}, this one {})", path,
                    recorded.model_hash, model_hash));
  }
  passes::PassContext context;
  context.target = tuning::TargetOfDescriptor(recorded.target);
  context.seed = recorded.seed;
  tuning::TuningSession::Options session_options;
  session_options.seed = recorded.seed;
  session_options.max_measurements = recorded.trial_budget;
  session_options.target_descriptor = recorded.target;
  session_options.charge_first_answers = true;
  auto builder = std::make_shared<RefusingBuilder>();
  context.tuning = std::make_shared<tuning::TuningSession>(
      context.target, std::make_shared<tuning::ReplayDatabase>(database), builder,
      std::make_shared<RefusingRunner>(), session_options);
  passes::PassPtr pipeline = passes::ParsePipeline(recorded.pipeline);
  auto [run, module] = RunAndSummarize(model, *pipeline, recorded.model, context);
  replay.replayed = std::move(run);
  replay.module = std::move(module);
  replay.unanswered = builder->refused;
  return replay;
}

std::string TraceDiff(const ir::Trace& expected, const ir::Trace& actual) {
  if (expected == actual) return "";
  std::vector<std::string> a, b;
  for (const ir::Instruction& i : expected.instructions()) a.push_back(InstructionLine(i));
  for (const ir::Instruction& i : actual.instructions()) b.push_back(InstructionLine(i));
  // Longest common subsequence of lines (traces are short: hundreds of lines at most).
  size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> common(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      common[i][j] =
          a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
    }
  }
  std::string diff = "--- recorded trace\n+++ this run's trace\n";
  size_t i = 0, j = 0;
  bool lines_differ = false;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      diff += "  " + a[i++] + "\n";
      ++j;
    } else if (i < n && (j == m || common[i + 1][j] >= common[i][j + 1])) {
      diff += "- " + a[i++] + "\n";  // removals first, as unified diffs show them
      lines_differ = true;
    } else {
      diff += "+ " + b[j++] + "\n";
      lines_differ = true;
    }
  }
  if (!lines_differ) {
    diff +=
        "(the instructions read the same but differ in attributes not shown: compare "
        "Trace::ToJson)\n";
  }
  return diff;
}

}  // namespace tandem::pipelines
