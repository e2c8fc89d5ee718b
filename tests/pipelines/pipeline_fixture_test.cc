// Tuning runs in the database, pipeline traces and pipeline regression fixtures: a TuningRun
// survives the database (both kinds, export and import) unchanged; a recorded pipeline trace
// replays to the pipeline's result; a fixture recorded with real measurements replays with none,
// taking the same decisions; a changed measurement shows as a readable trace diff; the committed
// fixtures of the shared models still replay (the pipeline regression tests of issue 8).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/onednn/onednn_isa.h"
#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "backends/target/resolved_target.h"
#include "frontend/model_builders.h"
#include "frontend/onnx_importer.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "passes/tuning_pass.h"
#include "pipelines/pipeline_fixture.h"
#include "pipelines/pipeline_registry.h"
#include "tests/common/temp_path.h"
#include "tuning/database/replay_database.h"
#include "tuning/session/tuning_run.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

tuning::TuningRun SampleRun() {
  tuning::TuningRun run;
  run.model = "tiny<cnn>";
  run.model_hash = "0123456789abcdef";
  run.pipeline = "InferType, TuneLayout(eval=[FuseOps]), Legalize";
  run.target = "llvm -threads=2|cpu=x|schema=1";
  run.trial_budget = 32;
  run.time_budget_seconds = 12.5;
  run.seed = 7;
  ir::Instruction layout;
  layout.kind = "TuneLayout";
  layout.attrs.Set("pass", std::string("TuneLayout"));
  layout.decision = ir::AttrValue(std::string("NHWC"));
  run.trace.Append(layout);
  tuning::TuningDecision decision;
  decision.pass = "TuneLayout(eval=[FuseOps])";
  decision.trace = run.trace;
  decision.result = tuning::MeasureResult::FromRunSeconds({1e-3, 1.2e-3, 0.9e-3}, 0);
  decision.baseline_seconds = 2e-3;
  run.decisions.push_back(decision);
  decision.result = tuning::MeasureResult::Failure("trial budget spent");
  run.decisions.push_back(decision);
  run.counts["TuneLayout"] = {4, 1, 3, 1, 0, 0.5, 0.25};
  run.kernel_curves.push_back({"TuneKernels", 3, {{16, 1e-3, 2.0, false}, {32, 8e-4, 4.0, true}}});
  run.graph_curve.push_back({"TuneLayout", 3, 1e-3, 1.5});
  run.before_seconds = {2e-3, 2.1e-3};
  run.after_seconds = {1e-3};
  run.tuning_seconds = 5.25;
  run.measured_at = "2026-11-24T09:00:00Z";
  return run;
}

TEST(TuningRun, RoundTripsThroughJson) {
  tuning::TuningRun run = SampleRun();
  tuning::TuningRun back =
      tuning::TuningRunFromJson(tuning::TuningRunToJson(run), run.trace.ToJson());
  EXPECT_TRUE(back == run);
  EXPECT_THROW(tuning::TuningRunFromJson("{\"model\": 1}", run.trace.ToJson()), ir::Error);
  EXPECT_THROW(tuning::TuningRunFromJson("not json", run.trace.ToJson()), ir::Error);
}

TEST(TuningRun, IsStoredInBothDatabasesAndTravelsWithExport) {
  fs::path file = tandem::testing::UniqueTempPath("tandem_tuning_run_test.db");
  fs::remove(file);
  tuning::TuningRun run = SampleRun();
  tuning::TuningRun later = run;
  later.measured_at = "2026-11-24T10:00:00Z";
  later.after_seconds = {0.8e-3};
  for (int kind = 0; kind < 2; ++kind) {
    std::unique_ptr<tuning::Database> db =
        kind == 0 ? tuning::MakeInMemoryDatabase() : tuning::OpenSqliteDatabase(file.string());
    tuning::CommitTuningRun(*db, run);
    tuning::CommitTuningRun(*db, later);
    std::optional<tuning::TuningRun> latest =
        tuning::LatestTuningRun(*db, run.model_hash, run.pipeline, run.target);
    ASSERT_TRUE(latest);
    EXPECT_TRUE(*latest == later);
    EXPECT_FALSE(tuning::LatestTuningRun(*db, run.model_hash, "other pipeline", run.target));
    EXPECT_FALSE(tuning::LatestTuningRun(*db, run.model_hash, run.pipeline, "other target"));
    std::vector<tuning::TuningRun> runs = tuning::TuningRuns(*db);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_TRUE(runs[0] == run);
    std::stringstream exported;
    db->ExportJsonLines(exported);
    std::unique_ptr<tuning::Database> copy = tuning::MakeInMemoryDatabase();
    copy->ImportJsonLines(exported);
    ASSERT_EQ(tuning::TuningRuns(*copy).size(), 2u);
    EXPECT_TRUE(tuning::TuningRuns(*copy)[1] == later);
  }
  fs::remove(file);
}

TEST(ReplayDatabase, ShowsARecordOnlyOnceItWasAskedFor) {
  auto recorded = std::shared_ptr<tuning::Database>(tuning::MakeInMemoryDatabase());
  recorded->CommitWorkload({"w", "kernel", "text"});
  for (auto [candidate, seconds] : {std::pair{"a", 3.0}, {"b", 1.0}, {"c", 2.0}}) {
    tuning::TuningRecord record;
    record.workload_hash = "w";
    record.target = "t";
    record.candidate_hash = candidate;
    record.run_seconds = {seconds};
    recorded->CommitRecord(record);
  }
  tuning::ReplayDatabase replay(recorded);
  EXPECT_TRUE(replay.Best("w", "t", 3).empty());
  EXPECT_TRUE(replay.Records("w", "t").empty());
  ASSERT_TRUE(replay.FindRecord("w", "t", "c"));
  ASSERT_TRUE(replay.FindRecord("w", "t", "a"));
  std::vector<tuning::TuningRecord> best = replay.Best("w", "t", 3);
  ASSERT_EQ(best.size(), 2u);  // "b" was never asked for
  EXPECT_EQ(best[0].candidate_hash, "c");
  EXPECT_EQ(best[1].candidate_hash, "a");
  EXPECT_EQ(replay.Best("w", "t", 1).size(), 1u);
  EXPECT_EQ(replay.Records("w", "t").size(), 2u);
}

TEST(TraceDiff, ShowsChangedDecisionsLineByLine) {
  auto instruction = [](const std::string& pass, const std::string& decision) {
    ir::Instruction i;
    i.kind = pass;
    i.attrs.Set("pass", pass);
    i.decision = ir::AttrValue(decision);
    return i;
  };
  ir::Trace recorded({instruction("InferType", "apply"), instruction("TuneLayout", "NCHW16c"),
                      instruction("FuseOps", "apply")});
  ir::Trace now({instruction("InferType", "apply"), instruction("TuneLayout", "NHWC"),
                 instruction("FuseOps", "apply")});
  EXPECT_EQ(pipelines::TraceDiff(recorded, recorded), "");
  std::string diff = pipelines::TraceDiff(recorded, now);
  EXPECT_NE(diff.find("- TuneLayout => NCHW16c\n+ TuneLayout => NHWC\n"), std::string::npos)
      << diff;
  EXPECT_NE(diff.find("  InferType => apply\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("  FuseOps => apply\n"), std::string::npos) << diff;
}

ir::IRModule SmallConvModel() {
  frontend::ResNetBlockConfig config;
  config.channels = 16;
  config.height = config.width = 8;
  return frontend::ResNetBasicBlock(config);
}

constexpr const char* kSmallPipeline =
    "InferType, FoldConstant, TuneLayout(eval=[FoldConstant, InferType, FuseOps, "
    "TuneKernels(trials=6, batch=3)]), DeadCodeElimination";

// True when `trace_json` (a recorded candidate's trace: a search measurement or a confirmation
// round) decides TuneLayout for a layout other than `chosen`. Both kinds are edited: where
// `chosen` is the no-change layout, the confirmation rounds keep it as a finalist, and their
// records would otherwise decide for it again.
bool RejectedLayout(const std::string& trace_json, const std::string& chosen) {
  bool rejected = false;
  std::function<void(const std::vector<ir::Instruction>&)> visit =
      [&](const std::vector<ir::Instruction>& instructions) {
        for (const ir::Instruction& i : instructions) {
          if (i.kind == "TuneLayout" && i.decision &&
              std::holds_alternative<std::string>(*i.decision)) {
            rejected = rejected || std::get<std::string>(*i.decision) != chosen;
          }
          for (const ir::NestedTrace& nested : i.nested) visit(nested.instructions);
        }
      };
  try {
    visit(ir::Trace::FromJson(trace_json).instructions());
  } catch (const ir::Error&) {
    return false;  // a kernel schedule's trace, not a pipeline's
  }
  return rejected;
}

// The pipeline trace replays to the pipeline's result, and a fixture recorded with real
// measurements replays with none and the same decisions; a fixture whose measurements say
// otherwise gives a different trace, shown by TraceDiff.
TEST(PipelineFixture, RecordedRunReplaysWithoutMeasuring) {
  ir::IRModule model = SmallConvModel();
  fs::path file = tandem::testing::UniqueTempPath("tandem_fixture_test.jsonl");
  pipelines::FixtureOptions options;
  options.model_name = "small";
  options.pipeline = kSmallPipeline;
  options.trials = 24;
  options.target = "llvm -threads=2";
  tuning::TuningRun recorded = pipelines::RecordPipelineFixture(model, options, file.string());
  ASSERT_FALSE(recorded.decisions.empty());
  EXPECT_GT(recorded.counts.at("TuneLayout").measured, 0);

  // The recorded trace rebuilds the tuned module exactly, and it computes what the model does.
  passes::PassContext context;
  context.target = ir::ParseTarget(options.target);
  ir::IRModule replayed_module = passes::ReplayTrace(model, recorded.trace, context);
  pipelines::FixtureReplay replay = pipelines::ReplayPipelineFixture(model, file.string());
  EXPECT_TRUE(ir::StructuralEqual(replayed_module, replay.module))
      << ir::StructuralDiff(replayed_module, replay.module);
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 3);
  std::vector<ir::Tensor> expected = backends::RunReference(model, inputs);
  std::vector<ir::Tensor> got = backends::Build(replayed_module)->Run(inputs);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_LT(ir::RelativeError(got[0], expected[0]), 1e-4);

  EXPECT_EQ(replay.unanswered, 0);
  EXPECT_EQ(pipelines::TraceDiff(replay.recorded.trace, replay.replayed.trace), "");
  for (const auto& [pass, counts] : replay.recorded.counts) {
    const tuning::EvaluationCounts& now = replay.replayed.counts.at(pass);
    EXPECT_EQ(now.requested, counts.requested) << pass;
    EXPECT_EQ(now.measured, 0) << pass;
    EXPECT_EQ(now.reused, counts.reused + counts.measured) << pass;
    EXPECT_EQ(now.over_budget, counts.over_budget) << pass;
  }

  // Make the layout the recorded run rejected look fastest: the replay decides otherwise.
  std::string chosen;
  for (const ir::Instruction& i : recorded.trace.instructions()) {
    if (i.kind == "TuneLayout") chosen = std::get<std::string>(*i.decision);
  }
  ASSERT_FALSE(chosen.empty());
  std::ifstream in(file);
  std::stringstream edited;
  int edited_records = 0;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json object = nlohmann::json::parse(line);
    if (object["type"] == "record" && !object["run_seconds"].empty() &&
        RejectedLayout(object["trace_json"].get<std::string>(), chosen)) {
      object["run_seconds"] = std::vector<double>{1e-9};
      ++edited_records;
    }
    edited << object.dump() << "\n";
  }
  std::ofstream(file) << edited.str();
  ASSERT_GT(edited_records, 0) << "no measured record of a rejected layout";
  pipelines::FixtureReplay changed = pipelines::ReplayPipelineFixture(model, file.string());
  std::string diff = pipelines::TraceDiff(changed.recorded.trace, changed.replayed.trace);
  EXPECT_NE(diff.find("- TuneLayout => " + chosen), std::string::npos) << diff;
  fs::remove(file);
}

// Why a fixture recorded for `target` cannot replay in this process ("" when it can): the
// machine lacks features of the target (oneDNN, which decides placements, would run other code
// here), or oneDNN's instruction set was already fixed for another target in this process.
std::string CannotReplayHere(const ir::Target& target) {
  std::vector<std::string> missing = backends::MissingHostFeatures(target);
  if (!missing.empty()) {
    std::string names;
    for (const std::string& feature : missing) names += (names.empty() ? "" : ", ") + feature;
    return "this machine lacks " + names + " of the fixture's target " + ir::ToString(target);
  }
  std::string pinned = backends::PinnedOnednnIsa();
  if (!pinned.empty() && pinned != backends::OnednnIsaFor(target)) {
    return "oneDNN already runs " + pinned + " code in this process; run this test alone";
  }
  return "";
}

// A fixture records the resolved target, never "host": a CPU, its features and a thread count.
// Recorded for the AVX2 + FMA baseline, it names that CPU and replays under it.
TEST(PipelineFixture, RecordsTheResolvedTarget) {
  ir::Target baseline = ir::ParseTarget("llvm -cpu=x86-64-v3 -threads=2");
  if (std::string why = CannotReplayHere(baseline); !why.empty()) GTEST_SKIP() << why;
  ir::IRModule model = SmallConvModel();
  fs::path file = tandem::testing::UniqueTempPath("tandem_fixture_target_test.jsonl");
  pipelines::FixtureOptions options;
  options.model_name = "small";
  options.pipeline = kSmallPipeline;
  options.trials = 8;
  options.target = ir::ToString(baseline);
  tuning::TuningRun recorded = pipelines::RecordPipelineFixture(model, options, file.string());
  EXPECT_EQ(recorded.target.rfind(ir::ToString(baseline) + "|", 0), 0u) << recorded.target;
  EXPECT_EQ(pipelines::FixtureTarget(file.string()), baseline);

  // The default target is resolved too: the machine's CPU name and every thread.
  options.target = "llvm";
  fs::path host_file = tandem::testing::UniqueTempPath("tandem_fixture_host_target_test.jsonl");
  pipelines::RecordPipelineFixture(model, options, host_file.string());
  ir::Target host = pipelines::FixtureTarget(host_file.string());
  EXPECT_EQ(host.cpu, backends::GetHostCpu().name);
  EXPECT_GT(host.num_threads, 0);
  EXPECT_EQ(host, backends::ResolveTarget(ir::Target{}));

  pipelines::FixtureReplay replay = pipelines::ReplayPipelineFixture(model, file.string());
  EXPECT_EQ(replay.unanswered, 0);
  EXPECT_EQ(pipelines::TraceDiff(replay.recorded.trace, replay.replayed.trace), "");
  fs::remove(file);
  fs::remove(host_file);
}

// The registered `joint` pipeline with the real builder and runner on a small ResNet block: the
// sequential chain and the joint search both run within the trial budget, both results are
// measured and BestOf keeps one; the joint search's layout level screens every layout and keeps
// one (recorded on its instruction when it wins); the result computes what the model computes,
// and the recorded run replays from its fixture.
TEST(PipelineFixture, JointPipelineScreensLayoutsWithTheRealRunner) {
  ir::IRModule model = SmallConvModel();
  fs::path file = tandem::testing::UniqueTempPath("tandem_joint_fixture_test.jsonl");
  pipelines::FixtureOptions options;
  options.model_name = "small";
  options.pipeline = "joint";
  options.trials = 40;
  options.target = "llvm -threads=2";
  tuning::TuningRun recorded = pipelines::RecordPipelineFixture(model, options, file.string());
  int64_t measured = 0;
  for (const auto& [pass, counts] : recorded.counts) measured += counts.measured;
  EXPECT_LE(measured, 40);
  const ir::Instruction* best_of = nullptr;
  const ir::Instruction* layout = nullptr;
  for (const ir::Instruction& i : recorded.trace.instructions()) {
    if (i.kind == "BestOf") best_of = &i;
    if (i.kind == "TuneLayout") layout = &i;
  }
  ASSERT_NE(best_of, nullptr);
  ASSERT_NE(layout, nullptr);
  std::string both = best_of->attrs.GetString("measured");
  EXPECT_NE(both.find("eval:"), std::string::npos) << both;
  EXPECT_NE(both.find("alternative:"), std::string::npos) << both;
  EXPECT_EQ(both.find("failed"), std::string::npos) << both;
  // The joint search screened the five layouts, each with nothing placed and with everything on
  // oneDNN (the sequential chain's TuneLayout measures them once each, unscreened).
  EXPECT_GE(recorded.counts.at("TuneLayout(keep=1)").requested, 5);
  if (std::get<std::string>(*best_of->decision) == "eval") {
    std::string screened = layout->attrs.GetString("screened");
    EXPECT_EQ(std::count(screened.begin(), screened.end(), ','), 4) << screened;
    std::string kept = layout->attrs.GetString("kept");
    EXPECT_FALSE(kept.empty());
    EXPECT_EQ(kept.find(','), std::string::npos) << kept;
  } else {
    EXPECT_EQ(layout->attrs.GetString("pass"), "TuneLayout");
  }

  passes::PassContext context;
  context.target = ir::ParseTarget(options.target);
  ir::IRModule tuned = passes::ReplayTrace(model, recorded.trace, context);
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 4);
  std::vector<ir::Tensor> expected = backends::RunReference(model, inputs);
  std::vector<ir::Tensor> got = backends::Build(tuned)->Run(inputs);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_LT(ir::RelativeError(got[0], expected[0]), 1e-4);

  pipelines::FixtureReplay replay = pipelines::ReplayPipelineFixture(model, file.string());
  EXPECT_EQ(replay.unanswered, 0);
  EXPECT_EQ(pipelines::TraceDiff(replay.recorded.trace, replay.replayed.trace), "");
  fs::remove(file);
}

// The pipeline regression tests of the shared models: the committed fixture of `joint` on each
// replays from the fixture alone, with the recorded decisions and evaluation counts. They are
// recorded for the AVX2 + FMA baseline, so they replay alike on AVX2 and AVX-512 machines.
class SharedModelFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedModelFixture, JointPipelineTakesTheRecordedDecisions) {
  fs::path model_file = fs::path(TANDEM_MODELS_DIR) / GetParam() / "model.onnx";
  if (!fs::exists(model_file)) GTEST_SKIP() << "shared model " << model_file << " is not present";
  fs::path fixture =
      fs::path(TANDEM_SOURCE_DIR) / "tests/pipelines/data/fixtures" / (GetParam() + ".jsonl");
  if (std::string why = CannotReplayHere(pipelines::FixtureTarget(fixture.string()));
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  ir::IRModule model = frontend::ImportOnnxFile(model_file.string());
  pipelines::FixtureReplay replay = pipelines::ReplayPipelineFixture(model, fixture.string());
  // A fixture replays the pipeline text it recorded: it pins `joint` only while that is the
  // registered text (re-record it when `joint` changes).
  EXPECT_EQ(replay.recorded.pipeline,
            passes::PrintPipeline(*pipelines::PipelineRegistry::Global().Create("joint")));
  EXPECT_EQ(pipelines::TraceDiff(replay.recorded.trace, replay.replayed.trace), "");
  EXPECT_EQ(replay.unanswered, 0) << "the pipeline asked for measurements the fixture lacks";
  ASSERT_EQ(replay.replayed.decisions.size(), replay.recorded.decisions.size());
  for (size_t i = 0; i < replay.recorded.decisions.size(); ++i) {
    EXPECT_EQ(replay.replayed.decisions[i].pass, replay.recorded.decisions[i].pass);
    EXPECT_EQ(replay.replayed.decisions[i].result.run_seconds,
              replay.recorded.decisions[i].result.run_seconds);
  }
  for (const auto& [pass, counts] : replay.recorded.counts) {
    ASSERT_TRUE(replay.replayed.counts.count(pass)) << pass;
    const tuning::EvaluationCounts& now = replay.replayed.counts.at(pass);
    EXPECT_EQ(now.requested, counts.requested) << pass;
    EXPECT_EQ(now.measured, 0) << pass;
    EXPECT_EQ(now.reused, counts.reused + counts.measured) << pass;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModelFixture,
                         ::testing::Values("resnet18", "mobilenet_v2", "bert_small"));

}  // namespace
}  // namespace tandem
