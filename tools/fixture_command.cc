// `tandem fixture record` and `tandem fixture check`: pipeline regression fixtures from the
// command line (pipelines/pipeline_fixture.h; docs/pipeline_regression_tests.md).
#include <fmt/format.h>

#include <climits>
#include <filesystem>
#include <iostream>

#include "pipelines/pipeline_fixture.h"
#include "tools/commands.h"
#include "tools/option_checks.h"

namespace tandem::tools {

namespace {

struct FixtureCommandOptions {
  ModelOptions model;
  pipelines::FixtureOptions fixture;
  std::string path;
};

void PrintCounts(const tuning::TuningRun& run) {
  for (const auto& [pass, c] : run.counts) {
    fmt::print(
        "  {}: requested {}, from database {}, measured {}, failed {}, over budget {}, "
        "confirmed {}\n",
        pass, c.requested, c.reused, c.measured, c.failed, c.over_budget, c.confirmed);
  }
}

// 0 when the replay took the recorded decisions and asked only for recorded measurements.
int Check(const FixtureCommandOptions& options) {
  pipelines::FixtureReplay replay =
      pipelines::ReplayPipelineFixture(LoadModel(options.model), options.path);
  fmt::print("fixture {}: {} on {}, trial budget {}, seed {}\n", options.path,
             replay.recorded.pipeline, replay.recorded.model, replay.recorded.trial_budget,
             replay.recorded.seed);
  fmt::print("recorded evaluations:\n");
  PrintCounts(replay.recorded);
  fmt::print("replayed evaluations:\n");
  PrintCounts(replay.replayed);
  bool ok = true;
  std::string diff = pipelines::TraceDiff(replay.recorded.trace, replay.replayed.trace);
  if (!diff.empty()) {
    fmt::print("the decisions changed:\n{}", diff);
    ok = false;
  }
  if (replay.unanswered > 0) {
    fmt::print("{} evaluations were not in the fixture (they would need real measurements)\n",
               replay.unanswered);
    ok = false;
  }
  fmt::print("{}\n", ok ? "same decisions, every evaluation answered from the fixture"
                        : "FAILED: the pipeline no longer behaves as recorded");
  return ok ? 0 : 1;
}

}  // namespace

Command AddFixtureCommand(CLI::App& app) {
  auto options = std::make_shared<FixtureCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fixture",
      "record or check a pipeline regression fixture (decisions pinned, measurements "
      "replayed from a file)");
  cmd->require_subcommand(1);
  CLI::App* record = cmd->add_subcommand(
      "record", "tune MODEL with a pipeline for real and write the fixture (JSON lines)");
  AddModelOptions(record, options->model);
  AddModelNameOption(record, options->model);
  record->add_option("fixture", options->path, "fixture file to write")->required();
  record
      ->add_option("--pipeline", options->fixture.pipeline,
                   "registered pipeline name or pipeline text")
      ->required();
  record->add_option("--trials", options->fixture.trials, "trial budget")
      ->capture_default_str()
      ->check(IntegerIn(1));
  record->add_option("--seed", options->fixture.seed, "pipeline seed")->capture_default_str();
  record->add_option("--target", options->fixture.target, "target")->capture_default_str();
  record->add_option("--repeats", options->fixture.repeats, "timed repeats per measurement")
      ->capture_default_str()
      ->check(IntegerIn(1, INT_MAX));
  CLI::App* check = cmd->add_subcommand(
      "check",
      "run the fixture's pipeline on MODEL answering every evaluation from the fixture; exit 1 "
      "with a trace diff when a decision changed or a measurement would be needed");
  AddModelOptions(check, options->model);
  check->add_option("fixture", options->path, "fixture file")->required();
  return [cmd, record, check, options]() {
    if (!*cmd) return -1;
    if (*record) {
      options->fixture.model_name = ModelName(options->model);
      tuning::TuningRun run = pipelines::RecordPipelineFixture(LoadModel(options->model),
                                                               options->fixture, options->path);
      fmt::print("recorded {} ({} instructions in the trace) to {}\n", run.pipeline,
                 run.trace.size(), options->path);
      PrintCounts(run);
      return 0;
    }
    if (*check) return Check(*options);
    return -1;
  };
}

}  // namespace tandem::tools
