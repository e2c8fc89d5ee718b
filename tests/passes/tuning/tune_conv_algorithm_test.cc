// TuneConvAlgorithm with the real builder and process runner on a small ResNet block: it
// measures direct and both Winograd tilings (and, with per_conv=1, every convolution alone),
// picks one, the tuned module computes what the model computes, and the winning trace replays
// to the same module.
#include <gtest/gtest.h>

#include <map>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "frontend/model_builders.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/tuning_pass.h"
#include "tests/common/mock_tuning.h"

namespace tandem {
namespace {

struct Outcome {
  ir::IRModule output;
  tuning::EvaluationCounts counts;
  std::vector<tuning::TuningDecision> decisions;
};

Outcome Tune(const ir::IRModule& model, const std::string& pipeline) {
  tuning::TuningSession::Options options;
  options.measure.repeats = 3;
  options.measure.min_repeat_seconds = 5e-4;
  options.measure.timeout_seconds = 20;
  passes::PassContext context;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<tuning::ProcessRunner>(), options);
  Outcome outcome;
  outcome.output = context.RunPipeline(*passes::ParsePipeline("InferType, " + pipeline), model);
  outcome.counts = context.tuning->TotalCounts();
  outcome.decisions = context.tuning->decisions();
  EXPECT_FALSE(outcome.decisions.empty());
  if (!outcome.decisions.empty()) {
    ir::Trace trace = ir::Trace::FromJson(outcome.decisions[0].trace.ToJson());
    ir::IRModule replayed = passes::ReplayTrace(outcome.decisions[0].input, trace, context);
    EXPECT_TRUE(ir::StructuralEqual(replayed, outcome.output))
        << ir::StructuralDiff(replayed, outcome.output);
  }
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

std::string Decision(const Outcome& outcome) {
  const ir::Instruction& instruction = outcome.decisions.at(0).trace.instructions().at(0);
  EXPECT_EQ(instruction.kind, "TuneConvAlgorithm");
  return std::get<std::string>(*instruction.decision);
}

TEST(TuneConvAlgorithm, MeasuresDirectAndBothWinogradTilings) {
  Outcome outcome = Tune(SmallResNetBlock(), "TuneConvAlgorithm(eval=[FuseOps])");
  EXPECT_EQ(outcome.counts.requested, 3);
  EXPECT_EQ(outcome.counts.failed, 0);
  ASSERT_EQ(outcome.decisions.size(), 1u);
  EXPECT_EQ(outcome.decisions[0].trace.instructions()[0].attrs.GetString("considered"),
            "direct,winograd_2x2,winograd_4x4");
  std::string decision = Decision(outcome);
  EXPECT_TRUE(decision == "direct" || decision == "winograd_2x2" || decision == "winograd_4x4")
      << decision;
}

TEST(TuneConvAlgorithm, PerConvolutionChoiceMeasuresEachConvolutionAlone) {
  Outcome outcome = Tune(SmallResNetBlock(), "TuneConvAlgorithm(per_conv=1, eval=[FuseOps])");
  // 2 convolutions x 3 algorithms alone, 3 uniform choices, and the per-convolution choice when
  // it is not one of them.
  EXPECT_GE(outcome.counts.requested, 9);
  EXPECT_LE(outcome.counts.requested, 10);
  EXPECT_EQ(outcome.counts.failed, 0);
}

TEST(TuneConvAlgorithm, RestrictedAlgorithmsAndModelsWithoutEligibleConvolutions) {
  Outcome only = Tune(SmallResNetBlock(), "TuneConvAlgorithm(algorithms=\"winograd_4x4\")");
  EXPECT_EQ(only.counts.requested, 1);
  EXPECT_EQ(Decision(only), "winograd_4x4");
  frontend::BertLayerConfig bert;
  bert.seq = 8;
  bert.hidden = 32;
  bert.heads = 2;
  bert.ffn = 64;
  Outcome none = Tune(frontend::BertEncoderLayer(bert), "TuneConvAlgorithm");
  EXPECT_EQ(none.counts.requested, 1);
  EXPECT_EQ(Decision(none), "direct");
  EXPECT_THROW(passes::ParsePipeline("TuneConvAlgorithm(algorithms=\"fast\")"), ir::Error);
}

// What a layout is ranked by when TuneConvAlgorithm is nested in TuneLayout's eval passes
// (the `joint` pipeline): every algorithm that applies in that layout, each in every screening
// form of the placement nested below it. NCHW and NHWC convolutions can be Winograd's; blocked
// ones cannot. (Placement is restricted to oneDNN: with a GPU, cuBLAS takes the Winograd GEMMs
// but no convolution, so the counts would differ by algorithm.)
TEST(TuneConvAlgorithm, ScreensEveryApplicableAlgorithmWithItsPlacementScreens) {
  passes::PassPtr pipeline = passes::ParsePipeline(
      "TuneConvAlgorithm(per_conv=1, eval=[FoldConstant, InferType, "
      "TuneBackendPlacement(backends=\"onednn\", eval=[FuseOps])])");
  const auto* tune = dynamic_cast<const passes::TuningPass*>(
      static_cast<const passes::Sequential&>(*pipeline).passes().at(0).get());
  ASSERT_NE(tune, nullptr);
  // Screening forms are made, not measured: a mock runner stands in (it is never called).
  passes::PassContext context;
  auto runner = std::make_shared<testing::MockRunner>();
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(),
      runner, tuning::TuningSession::Options{});
  auto screen = [&](const std::string& layout_pipeline) {
    ir::IRModule module = context.RunPipeline(
        *passes::ParsePipeline("InferType, " + layout_pipeline + "FoldConstant, InferType"),
        SmallResNetBlock());
    std::map<std::string, int> per_algorithm;
    for (const passes::Candidate& c : tune->Screen(passes::Candidate::Start(module), context)) {
      EXPECT_FALSE(c.result.has_value()) << "screening forms are measured by the caller";
      const ir::Instruction& first = c.trace.instructions().at(0);
      EXPECT_EQ(first.kind, "TuneConvAlgorithm");
      ++per_algorithm[std::get<std::string>(*first.decision)];
    }
    return per_algorithm;
  };
  for (const std::string& layout :
       {std::string(), std::string("ConvertLayout(layout=\"NHWC\"), ")}) {
    SCOPED_TRACE(layout);
    std::map<std::string, int> screened = screen(layout);
    ASSERT_EQ(screened.size(), 3u);
    EXPECT_EQ(screened["direct"], 2) << "own kernels and everything oneDNN takes";
    EXPECT_EQ(screened["winograd_2x2"], 2);
    EXPECT_EQ(screened["winograd_4x4"], 2);
  }
  std::map<std::string, int> blocked = screen("ConvertLayout(layout=\"NCHW8c\"), ");
  EXPECT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked.count("direct"), 1u);
  EXPECT_EQ(runner->runs, 0);
}

}  // namespace
}  // namespace tandem
