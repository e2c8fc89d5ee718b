// Exact replay: a recorded pipeline trace rebuilds the identical module whatever the tuning
// database gains afterwards (Legalize records the history-best schedules it took), and a trace
// file alone, with no database, rebuilds a tuned model that computes what the model computes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/temp_path.h"
#include "backends/onednn/onednn_isa.h"
#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "backends/target/resolved_target.h"
#include "frontend/model_builders.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "passes/tuning_pass.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/measure/builder.h"
#include "tuning/measure/runner.h"
#include "tuning/session/tuning_run.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

ir::IRModule SmallConvModel() {
  frontend::ResNetBlockConfig config;
  config.channels = 8;
  config.height = config.width = 8;
  return frontend::ResNetBasicBlock(config);
}

const ir::Instruction* FindInstruction(const ir::Trace& trace, const std::string& kind) {
  for (const ir::Instruction& instruction : trace.instructions()) {
    if (instruction.kind == kind) return &instruction;
  }
  return nullptr;
}

TEST(ExactReplay, ReplayAfterTheDatabaseGainedFasterKernelsBuildsTheSameModule) {
  ir::IRModule model = SmallConvModel();
  passes::PassContext context;
  context.target = ir::ParseTarget("llvm -threads=2");
  tuning::TuningSession::Options options;
  options.measure.repeats = 2;
  options.confirm_rounds = 0;
  context.tuning = std::make_shared<tuning::TuningSession>(
      context.target, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<tuning::ProcessRunner>(), options);
  tuning::TuningSession& session = *context.tuning;

  // 1. Records for the model's kernels: a short kernel search.
  context.RunPipeline(
      *passes::ParsePipeline("InferType, FoldConstant, FuseOps, TuneKernels(trials=8, batch=4)"),
      model);
  // 2. A heuristic pipeline whose Legalize takes the best recorded schedules.
  passes::PassPtr pipeline = passes::ParsePipeline("InferType, FoldConstant, FuseOps, Legalize");
  passes::RecordedRun recorded = passes::RunPipelineRecorded(*pipeline, model, context);
  const ir::Instruction* legalize = FindInstruction(recorded.trace, "Legalize");
  ASSERT_NE(legalize, nullptr);
  std::map<std::string, ir::Trace> taken = tuning::ScheduleDecision(*legalize);
  ASSERT_FALSE(taken.empty()) << recorded.trace.ToText();

  // 3. The database gains a faster record of another schedule of a kernel Legalize took.
  bool gained = false;
  for (const auto& [hash, trace] : taken) {
    for (const tuning::TuningRecord& record :
         session.database().Records(hash, session.target_descriptor())) {
      if (!record.ok() || ir::Trace::FromJson(record.trace_json) == trace) continue;
      tuning::TuningRecord faster = record;
      faster.run_seconds = {1e-12};
      session.database().CommitRecord(faster);
      gained = true;
      break;
    }
    if (gained) break;
  }
  ASSERT_TRUE(gained) << "the kernel search measured one schedule per kernel only";

  // 4. Running the pipeline again now takes the new schedule; replaying the trace does not.
  ir::IRModule again = context.RunPipeline(*pipeline, model);
  EXPECT_FALSE(ir::StructuralEqual(again, recorded.module));
  ir::IRModule replayed = passes::ReplayTrace(model, recorded.trace, context);
  EXPECT_TRUE(ir::StructuralEqual(replayed, recorded.module))
      << ir::StructuralDiff(recorded.module, replayed);
  EXPECT_EQ(ir::StructuralHash(replayed), ir::StructuralHash(recorded.module));

  // 5. The trace, through a file, replays the same with no database at all, and computes what
  //    the model computes.
  fs::path file = tandem::testing::UniqueTempPath("tandem_exact_replay_test.trace.json");
  passes::TraceFile trace_file{"small", ir::HashToHex(ir::StructuralHash(model)),
                               passes::PrintPipeline(*pipeline), session.target_descriptor(),
                               recorded.trace};
  passes::WriteTraceFile(trace_file, file.string());
  passes::TraceFile read = passes::ReadTraceFile(file.string());
  EXPECT_EQ(read, trace_file);
  ir::IRModule from_file = passes::ReplayTraceFile(model, read);
  EXPECT_TRUE(ir::StructuralEqual(from_file, recorded.module));
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 5);
  std::vector<ir::Tensor> expected = backends::RunReference(model, inputs);
  std::vector<ir::Tensor> got = backends::Build(from_file)->Run(inputs);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_LT(ir::RelativeError(got[0], expected[0]), 1e-4);
  fs::remove(file);
}

TEST(ExactReplay, TraceFileErrorsNameTheFileAndTheModel) {
  fs::path file = tandem::testing::UniqueTempPath("tandem_trace_file_errors_test.json");
  std::ofstream(file) << "{\"format\": \"something else\"}";
  try {
    passes::ReadTraceFile(file.string());
    FAIL() << "a JSON file of another format was read as a trace file";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  passes::TraceFile trace_file{"m", "0000000000000000", "InferType", "llvm -threads=1", {}};
  passes::WriteTraceFile(trace_file, file.string());
  try {
    passes::ReplayTraceFile(SmallConvModel(), passes::ReadTraceFile(file.string()));
    FAIL() << "a trace of another model was replayed";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("another model"), std::string::npos) << e.what();
  }
  fs::remove(file);
}

// The committed ResNet-18 fixture's run, written as a trace file and read back, rebuilds the
// tuned model with no database; it matches the model's stored outputs.
TEST(ExactReplay, TraceFileRebuildsTunedResNet18WithNoDatabase) {
  fs::path dir = fs::path(TANDEM_MODELS_DIR) / "resnet18";
  if (!fs::exists(dir / "model.onnx")) GTEST_SKIP() << "shared model " << dir << " is not present";
  std::ifstream fixture(fs::path(TANDEM_SOURCE_DIR) / "tests/pipelines/data/fixtures/resnet18.jsonl");
  ASSERT_TRUE(fixture);
  std::unique_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  database->ImportJsonLines(fixture);
  std::vector<tuning::TuningRun> runs = tuning::TuningRuns(*database);
  ASSERT_FALSE(runs.empty());
  const tuning::TuningRun& run = runs.back();
  ir::Target target = tuning::TargetOfDescriptor(run.target);
  std::vector<std::string> missing = backends::MissingHostFeatures(target);
  if (!missing.empty())
    GTEST_SKIP() << "this machine lacks " << missing.front() << " of " << run.target;
  std::string pinned = backends::PinnedOnednnIsa();
  if (!pinned.empty() && pinned != backends::OnednnIsaFor(target)) {
    GTEST_SKIP() << "oneDNN already runs " << pinned << " code in this process";
  }
  ASSERT_NE(FindInstruction(run.trace, "TuneLayout"), nullptr) << run.trace.ToText();

  fs::path file = tandem::testing::UniqueTempPath("tandem_resnet18.trace.json");
  passes::WriteTraceFile({run.model, run.model_hash, run.pipeline, run.target, run.trace},
                         file.string());
  database.reset();  // nothing but the file from here on
  passes::TraceFile read = passes::ReadTraceFile(file.string());
  ir::IRModule model = frontend::ImportOnnxFile((dir / "model.onnx").string());
  ir::IRModule tuned = passes::ReplayTraceFile(model, read);
  auto executable =
      backends::Build(tuned, backends::BuildOptionsFor(tuning::TargetOfDescriptor(read.target)));
  auto inputs = frontend::ReadTensorProtoDirectory((dir / "test_data_set_0").string(), "input");
  auto expected = frontend::ReadTensorProtoDirectory((dir / "test_data_set_0").string(), "output");
  std::vector<ir::Tensor> outputs = executable->Run(inputs);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_LT(ir::RelativeError(outputs[i], expected[i]), 1e-4);
  }
  fs::remove(file);
}

}  // namespace
}  // namespace tandem
