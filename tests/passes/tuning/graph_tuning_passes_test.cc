// The graph-level tuning passes with the real builder and process runner on small models: each
// evaluates the candidates its knob offers, returns a module that computes what its input
// computes, and its winning trace replays to that module. A tuning pass whose candidates crash,
// hang or compute wrong results records them as failed and still finishes with a good one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "frontend/model_builders.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/structural.h"
#include "passes/backend_placement.h"
#include "passes/pipeline_text.h"
#include "tests/common/mock_tuning.h"
#include "tuning/search/apply_history_best.h"

namespace tandem {
namespace {

tuning::TuningSession::Options FastOptions() {
  tuning::TuningSession::Options options;
  options.measure.repeats = 3;
  options.measure.min_repeat_seconds = 5e-4;
  options.measure.timeout_seconds = 20;
  return options;
}

struct TuneOutcome {
  ir::IRModule input;  // what the tuning pass started from (after InferType)
  ir::IRModule output;
  tuning::EvaluationCounts counts;
  std::vector<tuning::TuningDecision> decisions;
};

TuneOutcome Tune(const ir::IRModule& model, const std::string& tuning_pass,
                 const passes::PassRegistry& registry = passes::PassRegistry::Global(),
                 tuning::TuningSession::Options options = FastOptions()) {
  passes::PassContext context;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<tuning::ProcessRunner>(), options);
  TuneOutcome outcome;
  outcome.output =
      context.RunPipeline(*passes::ParsePipeline("InferType, " + tuning_pass, registry), model);
  outcome.counts = context.tuning->TotalCounts();
  outcome.decisions = context.tuning->decisions();
  if (!outcome.decisions.empty()) {
    // The winning trace replays to the module the pass returned.
    ir::Trace trace = ir::Trace::FromJson(outcome.decisions[0].trace.ToJson());
    outcome.input = outcome.decisions[0].input;
    ir::IRModule replayed = passes::ReplayTrace(outcome.input, trace, context, registry);
    EXPECT_TRUE(ir::StructuralEqual(replayed, outcome.output))
        << ir::StructuralDiff(replayed, outcome.output);
  }
  // The tuned module computes what the model computes.
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 11);
  std::vector<ir::Tensor> expected = backends::RunReference(model, inputs);
  std::vector<ir::Tensor> got = backends::Build(outcome.output)->Run(inputs);
  EXPECT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    EXPECT_LT(ir::RelativeError(got[i], expected[i]), 1e-4) << "output " << i;
  }
  return outcome;
}

ir::IRModule SmallResNetBlock() {
  frontend::ResNetBlockConfig config;
  config.channels = 16;
  config.height = config.width = 14;
  return frontend::ResNetBasicBlock(config);
}

ir::IRModule SmallBertLayer() {
  frontend::BertLayerConfig config;
  config.seq = 16;
  config.hidden = 64;
  config.heads = 4;
  config.ffn = 128;
  return frontend::BertEncoderLayer(config);
}

std::string Decision(const TuneOutcome& outcome, size_t index = 0) {
  const ir::Instruction& instruction = outcome.decisions.at(0).trace.instructions().at(index);
  return std::get<std::string>(*instruction.decision);
}

TEST(TuneLayout, MeasuresEveryLayoutOfAConvolutionModel) {
  TuneOutcome outcome = Tune(SmallResNetBlock(), "TuneLayout(eval=[FoldConstant, FuseOps])");
  EXPECT_EQ(outcome.counts.requested, 5);  // none, NCHW, NHWC, NCHW16c, NCHW8c
  EXPECT_EQ(outcome.counts.failed, 0);
  ASSERT_EQ(outcome.decisions.size(), 1u);
  EXPECT_EQ(outcome.decisions[0].trace.size(), 3u);
  EXPECT_EQ(outcome.decisions[0].trace.instructions()[0].attrs.GetString("considered"),
            "none,NCHW,NHWC,NCHW16c,NCHW8c");
}

TEST(TuneLayout, OffersOnlyNoChangeWithoutConvolutions) {
  TuneOutcome outcome = Tune(SmallBertLayer(), "TuneLayout");
  EXPECT_EQ(outcome.counts.requested, 1);
  EXPECT_EQ(Decision(outcome), "none");
}

TEST(TuneCombineParallel, CombinesTheAttentionProjectionsOnlyAsACandidate) {
  TuneOutcome bert = Tune(SmallBertLayer(), "TuneCombineParallel(eval=[FuseOps])");
  EXPECT_EQ(bert.counts.requested, 2);
  TuneOutcome resnet = Tune(SmallResNetBlock(), "TuneCombineParallel");
  EXPECT_EQ(resnet.counts.requested, 1);  // nothing to combine: "on" is not a candidate
  EXPECT_EQ(Decision(resnet), "off");
}

TEST(TuneFusion, EvaluatesDistinctGroupingsOnly) {
  TuneOutcome outcome = Tune(SmallBertLayer(), "TuneFusion");
  EXPECT_GE(outcome.counts.requested, 3);  // none, fuse, small_groups at least
  EXPECT_LE(outcome.counts.requested, 4);
  EXPECT_EQ(outcome.counts.failed, 0);
}

TEST(TuneCodegenFlags, RecordsTheChoiceAsModuleAttributes) {
  TuneOutcome outcome = Tune(SmallResNetBlock(), "TuneCodegenFlags(eval=[FuseOps])");
  EXPECT_GE(outcome.counts.requested, 3);
  std::string decision = Decision(outcome);
  if (decision == "vector256") {
    EXPECT_EQ(outcome.output.attrs().GetInt(backends::kPreferVectorWidthAttr), 256);
  } else if (decision == "reassociate") {
    EXPECT_EQ(outcome.output.attrs().GetInt(backends::kAllowReassociationAttr), 1);
  }
}

// Backend placement: pieces cut out and measured alone, the dynamic program, and the three
// whole-module candidates (none, all-onednn, the program's choice when it differs).
TEST(TuneBackendPlacement, ChoosesAMeasuredPlacementThatReplays) {
  TuneOutcome outcome = Tune(SmallResNetBlock(), "TuneBackendPlacement");
  ASSERT_EQ(outcome.decisions.size(), 1u);
  const ir::Instruction& instruction = outcome.decisions[0].trace.instructions().at(0);
  EXPECT_EQ(instruction.kind, "TuneBackendPlacement");
  std::string considered = instruction.attrs.GetString("considered");
  EXPECT_EQ(considered.rfind("none,all-onednn", 0), 0u) << considered;
  // Pieces (an own and a oneDNN piece per convolution; the two convolutions have the same
  // shapes, so their alike pieces are measured once) plus 2 to 4 whole modules.
  EXPECT_GE(outcome.counts.measured, 4);
  EXPECT_EQ(outcome.counts.failed, 0);
  // The chosen placement is the decision, in placement text, and shows as call_extern nodes.
  std::vector<passes::Placement> placements = passes::ParsePlacementText(Decision(outcome));
  int extern_calls = 0;
  for (const ir::Node& node : outcome.output.Get("main").nodes) {
    if (node.kind != ir::NodeKind::kCallExtern) continue;
    ++extern_calls;
    EXPECT_EQ(node.annotations.GetString("backend"), "onednn");
  }
  EXPECT_EQ(extern_calls, static_cast<int>(placements.size()));
  // The winner was measured end to end (as the fastest of the whole-module candidates).
  EXPECT_TRUE(outcome.decisions[0].result.ok());
  EXPECT_GT(outcome.decisions[0].result.median_seconds, 0);
}

TEST(TuneBackendPlacement, ASecondRunWithTheSameDatabaseMeasuresNothing) {
  passes::PassContext context;
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  auto run = [&] {
    context.tuning = std::make_shared<tuning::TuningSession>(
        ir::Target{}, database, std::make_shared<tuning::LocalBuilder>(),
        std::make_shared<tuning::ProcessRunner>(), FastOptions());
    return context.RunPipeline(
        *passes::ParsePipeline("InferType, TuneBackendPlacement(eval=[FuseOps])"),
        SmallBertLayer());
  };
  ir::IRModule first = run();
  EXPECT_GT(context.tuning->TotalCounts().measured, 0);
  ir::IRModule second = run();
  EXPECT_TRUE(ir::StructuralEqual(first, second)) << ir::StructuralDiff(first, second);
  EXPECT_EQ(context.tuning->TotalCounts().measured, 0);
  EXPECT_GT(context.tuning->TotalCounts().reused, 0);
}

TEST(TuneBackendPlacement, TunesOurSideOfEachComparisonWithItsEvalPasses) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{8, 32}});
  ir::ValueId w = b.Constant(ir::Tensor::Random(ir::TensorType{{16, 32}}, 1, -0.5, 0.5));
  ir::ValueId y = b.Call("relu", {b.Call("dense", {x, w})});
  ir::IRModule model;
  model.Add(b.Finish(b.Call("softmax", {y})));
  TuneOutcome outcome =
      Tune(model, "TuneBackendPlacement(eval=[FuseOps, TuneKernels(trials=2, batch=2)])");
  ASSERT_EQ(outcome.decisions.size(), 1u);
  // Every candidate went through TuneKernels: the trace has its instruction after ours.
  const ir::Trace& trace = outcome.decisions[0].trace;
  ASSERT_EQ(trace.size(), 3u);
  EXPECT_EQ(trace.instructions()[0].kind, "TuneBackendPlacement");
  EXPECT_EQ(trace.instructions()[2].kind, "TuneKernels");
  EXPECT_EQ(outcome.counts.failed, 0);
}

// A runner whose latency is a known function of the module: 1 ms per oneDNN call, and per
// kernel of ours `first_ms` for the one that ends at the first convolution's relu ("relu1"),
// `second_ms` for the one that ends at the block's output, 0.1 ms for any other; so which
// placement wins is known.
class PlacementCostRunner : public tuning::Runner {
 public:
  PlacementCostRunner(double first_ms, double second_ms)
      : first_ms_(first_ms), second_ms_(second_ms) {}
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    std::vector<tuning::MeasureResult> results;
    for (const tuning::RunInput& input : inputs) {
      double ms = 0.01;
      for (const ir::Node& node : input.executable->module().Get("main").nodes) {
        if (node.kind == ir::NodeKind::kCallExtern) ms += 1.0;
        if (node.kind != ir::NodeKind::kCallKernel) continue;
        ms += node.name == "relu1" ? first_ms_ : node.name == "output" ? second_ms_ : 0.1;
      }
      results.push_back(tuning::MeasureResult::FromRunSeconds({ms * 1e-3, ms * 1e-3}, 0));
    }
    return results;
  }

 private:
  double first_ms_, second_ms_;
};

// With a budget too small for every piece, the pieces measured first are the convolutions'
// longest chains in dataflow order, oneDNN's then ours: with 3 pieces, the first convolution's
// both ways and the second's on oneDNN.
ir::Trace PlacementUnderSmallBudget(double first_ms, double second_ms, int pieces = 3) {
  passes::PassContext context;
  tuning::TuningSession::Options options = FastOptions();
  options.max_measurements = 4 + pieces;  // the 4 whole-module placements are kept for the end
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<PlacementCostRunner>(first_ms, second_ms), options);
  ir::IRModule model = SmallResNetBlock();
  ir::IRModule output = context.RunPipeline(
      *passes::ParsePipeline(
          "InferType, SimplifyExpr, FoldConstant, TuneBackendPlacement(eval=[FuseOps])"),
      model);
  EXPECT_GT(context.tuning->TotalCounts().over_budget, 0);
  // The placed module computes what the model computes.
  EXPECT_LT(testing::ErrorAgainstReference(output, model, 5), 1e-4);
  EXPECT_EQ(context.tuning->decisions().size(), 1u);
  return context.tuning->decisions().at(0).trace;
}

TEST(TuneBackendPlacement, ABudgetTooSmallForEveryPieceAlsoTriesOursWhereOursWentUnmeasured) {
  // oneDNN wins the measured first convolution: "dynamic-program" is all-oneDNN and not
  // repeated; "dynamic-program-own" (oneDNN there, ours for the unmeasured second) is the
  // fastest module.
  ir::Trace trace = PlacementUnderSmallBudget(/*first_ms=*/1.5, /*second_ms=*/0.5);
  const ir::Instruction& instruction = trace.instructions().at(0);
  EXPECT_EQ(instruction.attrs.GetString("considered"), "none,all-onednn,dynamic-program-own");
  EXPECT_EQ(instruction.attrs.GetString("choice"), "dynamic-program-own");
  std::vector<passes::Placement> placements =
      passes::ParsePlacementText(std::get<std::string>(*instruction.decision));
  ASSERT_EQ(placements.size(), 1u);
  EXPECT_EQ(placements[0].nodes.back(), "relu1");
}

TEST(TuneBackendPlacement, ABudgetTooSmallForEveryPieceComparesTheFirstAnchorsBothWays) {
  // Two pieces: the first convolution on oneDNN and ours (ours wins there); the second went
  // unmeasured, and "dynamic-program" places it on oneDNN, which is the fastest module.
  ir::Trace trace = PlacementUnderSmallBudget(/*first_ms=*/0.5, /*second_ms=*/1.5, /*pieces=*/2);
  const ir::Instruction& instruction = trace.instructions().at(0);
  EXPECT_EQ(instruction.attrs.GetString("choice"), "dynamic-program");
  std::vector<passes::Placement> placements =
      passes::ParsePlacementText(std::get<std::string>(*instruction.decision));
  ASSERT_EQ(placements.size(), 1u);
  EXPECT_EQ(placements[0].nodes.back(), "output");
}

// Names of the nodes of every module it measures (the latency is fixed).
class RecordingRunner : public tuning::Runner {
 public:
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    std::vector<tuning::MeasureResult> results;
    for (const tuning::RunInput& input : inputs) {
      std::set<std::string> names;
      for (const ir::Node& node : input.executable->module().Get("main").nodes) {
        names.insert(node.name);
      }
      measured.push_back(names);
      results.push_back(tuning::MeasureResult::FromRunSeconds({1e-3, 1e-3}, 0));
    }
    return results;
  }
  std::vector<std::set<std::string>> measured;
};

TEST(TuneBackendPlacement, APieceLikeAnEarlierOneWithOtherWeightsIsNotMeasuredAgain) {
  // Two blocks of the same shapes with different weights: conv - add - relu, twice.
  ir::GraphBuilder b("main");
  ir::ValueId y = b.Input("x", ir::TensorType{{1, 16, 12, 12}});
  for (int block = 1; block <= 2; ++block) {
    ir::ValueId w =
        b.Constant(ir::Tensor::Random(ir::TensorType{{16, 16, 3, 3}}, block, -0.5, 0.5));
    ir::ValueId bias =
        b.Constant(ir::Tensor::Random(ir::TensorType{{1, 16, 1, 1}}, 10 + block, -0.5, 0.5));
    y = b.Call("conv2d", {y, w}, ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}},
               fmt::format("conv{}", block));
    y = b.Call("add", {y, bias}, {}, fmt::format("add{}", block));
    y = b.Call("relu", {y}, {}, fmt::format("relu{}", block));
  }
  ir::IRModule model;
  model.Add(b.Finish(y));
  passes::PassContext context;
  auto runner = std::make_shared<RecordingRunner>();
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(),
      runner, FastOptions());
  ir::IRModule output = context.RunPipeline(
      *passes::ParsePipeline("InferType, TuneBackendPlacement(eval=[FuseOps])"), model);
  int first_block_pieces = 0, second_block_pieces = 0, whole_modules = 0;
  for (const std::set<std::string>& names : runner->measured) {
    bool first = names.count("conv1") || names.count("add1") || names.count("relu1");
    bool second = names.count("conv2") || names.count("add2") || names.count("relu2");
    if (first && second) ++whole_modules;
    if (first && !second) ++first_block_pieces;
    if (second && !first) ++second_block_pieces;
  }
  EXPECT_GT(first_block_pieces, 0);
  EXPECT_EQ(second_block_pieces, 0);
  EXPECT_GE(whole_modules, 2);
  // The placement still covers both blocks the same way (every piece timed alike): all-oneDNN
  // or all-own whole modules, or the program's, which places the second block like the first.
  EXPECT_LT(testing::ErrorAgainstReference(output, model, 3), 1e-4);
}

// A module that calls the kernel `text` on its input.
ir::IRModule KernelModule(const std::string& text) {
  ir::KernelFunction kernel = ir::ParseKernel(text);
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{4}, ir::DataType::kFloat32, ""});
  ir::IRModule module;
  module.Add(b.Finish(b.CallKernel(kernel, {x}, "custom")));
  module.AddKernel(kernel);
  return module;
}

// A knob whose choices are: keep the module (relu), or replace it by a module that crashes,
// hangs, or computes something else.
TEST(TuningPassFailures, CrashingHangingAndWrongCandidatesAreRecordedAndTuningFinishes) {
  passes::PassRegistry registry;
  passes::RegisterAllPasses(registry);
  passes::RegisterKnobPass<passes::SearchOptions>(
      registry, {.name = "Saboteur", .summary = "test knob"},
      [](const ir::IRModule&, passes::PassContext&, const passes::SearchOptions&) {
        auto replace = [](const char* text) {
          return [text](const ir::IRModule&) { return KernelModule(text); };
        };
        return tuning::Knob("Saboteur", {{"crash", replace(testing::kCrashingKernel)},
                                         {"hang", replace(testing::kHangingKernel)},
                                         {"wrong", replace(testing::kDoublingKernel)},
                                         passes::KeepChoice("keep")});
      });
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{4}, ir::DataType::kFloat32, ""});
  ir::IRModule model;
  model.Add(b.Finish(b.Call("relu", {x})));
  tuning::TuningSession::Options options = FastOptions();
  options.measure.timeout_seconds = 1;
  TuneOutcome outcome = Tune(model, "Saboteur", registry, options);
  EXPECT_EQ(outcome.counts.measured, 4);
  EXPECT_EQ(outcome.counts.failed, 3);
  EXPECT_EQ(Decision(outcome), "keep");
}

// TuneKernels measures kernels alone; its module is confirmed end to end against the default
// schedules (measured together), the faster one is kept, and the replay gives that one.
TEST(TuneKernelsConfirmation, TunedModuleIsConfirmedAgainstTheDefaultSchedules) {
  ir::IRModule model = SmallBertLayer();
  TuneOutcome outcome = Tune(model, "FuseOps, TuneKernels(trials=8, batch=4)");
  ASSERT_EQ(outcome.decisions.size(), 1u);
  const ir::Instruction& instruction = outcome.decisions[0].trace.instructions().back();
  ASSERT_EQ(instruction.kind, "TuneKernels");
  passes::PassContext context;
  ir::IRModule legalized =
      context.RunPipeline(*passes::ParsePipeline("InferType, FuseOps, Legalize"), model);
  if (!instruction.attrs.Has("confirmed")) {
    // Nothing to confirm only when the best schedules found are the default ones.
    EXPECT_TRUE(ir::StructuralEqual(legalized, outcome.output))
        << ir::StructuralDiff(legalized, outcome.output);
    EXPECT_EQ(outcome.counts.confirmed, 0);
    return;
  }
  std::string confirmed = instruction.attrs.GetString("confirmed");
  EXPECT_EQ(confirmed.rfind("tuned:", 0), 0u) << confirmed;
  EXPECT_NE(confirmed.find(",default:"), std::string::npos) << confirmed;
  // Both modules measured together: two confirmation records.
  EXPECT_EQ(outcome.counts.confirmed, 2);
  // The decision is the tuned schedules or, when the defaults won, none (which lowers exactly as
  // Legalize does).
  if (tuning::ScheduleDecision(instruction).empty()) {
    EXPECT_TRUE(ir::StructuralEqual(legalized, outcome.output))
        << ir::StructuralDiff(legalized, outcome.output);
  } else {
    EXPECT_FALSE(ir::StructuralEqual(legalized, outcome.output));
    // Kept only when it beat the defaults by the minimum gain (5%) in the confirmation.
    double tuned = 0, defaults = 0;
    ASSERT_EQ(std::sscanf(confirmed.c_str(), "tuned:%lfus,default:%lfus", &tuned, &defaults), 2)
        << confirmed;
    EXPECT_LT(tuned, 0.95 * defaults) << confirmed;
  }
}

}  // namespace
}  // namespace tandem
