// BestOf: the eval passes' result and the alternative chain's, confirmed in the same rounds. With
// mock knobs and known latencies: a nested search that screens away the right choice loses to
// the sequential chain it is compared with, which BestOf then keeps; the eval passes' result
// stays within the minimum gain and when both chains make the same module; the trial budget is
// split as documented; the winning trace replays to the same module. With the real builder and
// runner on a small ResNet block: the result computes what the model computes and replays.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "frontend/model_builders.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "tests/common/mock_tuning.h"

namespace tandem {
namespace {

// MockTune(choices=3, label=...) of knobs a and b; "-1": the knob did not run.
int64_t Tag(const ir::IRModule& module, const std::string& label) {
  std::string key = testing::kMockPrefix + label;
  return module.attrs().Has(key) ? module.attrs().GetInt(key) : -1;
}

// Latencies (ms) by (a, b), 1.5 ms for any other pair. Screened with b skipped, a=0 looks best
// (1.0) and the nested search tunes b for it: (0,1) at 0.9 ms. Taken one at a time, b first with
// a at its default, then a, the chain finds (1,2) at 0.8 ms, 11% faster.
double SeparatedLatency(const ir::IRModule& module) {
  static const std::map<std::pair<int64_t, int64_t>, double> kMs = {
      {{0, -1}, 1.0}, {{1, -1}, 1.2}, {{2, -1}, 1.2},  // a screened, b skipped
      {{0, 0}, 1.1},  {{0, 1}, 0.9},  {{0, 2}, 1.1},   // b tuned for a=0
      {{-1, 0}, 1.3}, {{-1, 1}, 1.3}, {{-1, 2}, 1.0},  // b alone
      {{1, 2}, 0.8},  {{2, 2}, 1.2},                   // a with b=2
  };
  auto it = kMs.find({Tag(module, "a"), Tag(module, "b")});
  return (it == kMs.end() ? 1.5 : it->second) * 1e-3;
}

// SeparatedLatency but the nested search's pick (0,1) at 0.5 ms: faster than the chain's by far.
double NestedSearchFaster(const ir::IRModule& module) {
  return Tag(module, "a") == 0 && Tag(module, "b") == 1 ? 0.5e-3 : SeparatedLatency(module);
}

// The nested search: a screened with b skipped, the best a kept and b tuned for it.
constexpr char kNested[] =
    R"(MockTune(choices=3, label="a", keep=1, eval=[MockTune(choices=3, label="b")]))";
// The chain taken one decision at a time, as BestOf's alternative (its quotes escaped).
constexpr char kChain[] = R"(MockTune(choices=3, label=\"b\"), MockTune(choices=3, label=\"a\"))";

std::string BestOf(const std::string& alternative, const std::string& eval,
                   const std::string& arguments = "") {
  return fmt::format(R"(BestOf({}alternative="{}", eval=[{}]))", arguments, alternative, eval);
}

class BestOfPass : public ::testing::Test {
 protected:
  void SetUp() override { testing::RegisterPassesWithMockTune(registry_); }

  // Runs `pipeline` on the mock module with a fresh session whose runner reads `latency`;
  // checks that the pipeline's trace replays to its result.
  ir::IRModule Run(const std::string& pipeline,
                   std::function<double(const ir::IRModule&)> latency = SeparatedLatency,
                   tuning::TuningSession::Options options = {}) {
    passes::PassContext context;
    context.tuning = std::make_shared<tuning::TuningSession>(
        ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(1),
        std::make_shared<testing::LatencyRunner>(std::move(latency)), options);
    ir::IRModule model = testing::MockModule();
    passes::RecordedRun run =
        passes::RunPipelineRecorded(*passes::ParsePipeline(pipeline, registry_), model, context);
    counts_ = context.tuning->counts();
    total_ = context.tuning->TotalCounts();
    decisions_ = context.tuning->decisions();
    trace_ = run.trace;
    // The trace, through JSON, replays to the same module, measuring nothing.
    passes::PassContext replay;
    ir::IRModule replayed =
        passes::ReplayTrace(model, ir::Trace::FromJson(run.trace.ToJson()), replay, registry_);
    EXPECT_TRUE(ir::StructuralEqual(replayed, run.module))
        << ir::StructuralDiff(replayed, run.module);
    EXPECT_FALSE(replay.tuning) << "the replay measured something";
    return run.module;
  }

  // BestOf's instruction in the last run's trace.
  const ir::Instruction& BestOfInstruction() const {
    for (const ir::Instruction& i : trace_.instructions()) {
      if (i.kind == "BestOf") return i;
    }
    ADD_FAILURE() << "no BestOf instruction in the trace";
    return trace_.instructions().front();
  }
  std::string Decision() const { return std::get<std::string>(*BestOfInstruction().decision); }

  passes::PassRegistry registry_;
  std::map<std::string, tuning::EvaluationCounts> counts_;
  tuning::EvaluationCounts total_;
  std::vector<tuning::TuningDecision> decisions_;
  ir::Trace trace_;
};

TEST_F(BestOfPass, KeepsTheSequentialPickWhenTheNestedSearchScreensItAway) {
  // The nested search alone: a=0 screened best, b tuned for it.
  ir::IRModule nested = Run(kNested);
  EXPECT_EQ(Tag(nested, "a"), 0);
  EXPECT_EQ(Tag(nested, "b"), 1);
  // The chain alone: b=2, then a=1.
  ir::IRModule chain = Run(R"(MockTune(choices=3, label="b"), MockTune(choices=3, label="a"))");
  EXPECT_EQ(Tag(chain, "a"), 1);
  EXPECT_EQ(Tag(chain, "b"), 2);

  // BestOf: both results are finalists of one confirmation, and the chain's wins by 11%.
  ir::IRModule out = Run(BestOf(kChain, kNested));
  EXPECT_EQ(Tag(out, "a"), 1);
  EXPECT_EQ(Tag(out, "b"), 2);
  EXPECT_EQ(Decision(), "alternative");
  EXPECT_EQ(BestOfInstruction().attrs.GetString("measured"), "eval:900.0us,alternative:800.0us");
  EXPECT_EQ(BestOfInstruction().attrs.GetString("confirmed"), "alternative:800.0us,eval:900.0us");
  EXPECT_EQ(BestOfInstruction().attrs.GetString("considered"), "eval,alternative");
  // The trace is BestOf's decision followed by the chain's own decisions.
  ASSERT_EQ(decisions_.size(), 1u);
  const auto& instructions = decisions_[0].trace.instructions();
  ASSERT_EQ(instructions.size(), 3u);
  EXPECT_EQ(instructions[0].kind, "BestOf");
  EXPECT_EQ(std::get<std::string>(*instructions[1].decision), "c2");  // b
  EXPECT_EQ(std::get<std::string>(*instructions[2].decision), "c1");  // a
  EXPECT_NEAR(decisions_[0].result.median_seconds, 0.8e-3, 1e-12);
}

TEST_F(BestOfPass, TheEvalPassesResultStaysWithinTheMinimumGain) {
  // The chain's pick (1,2) reads 0.88 ms against the nested search's 0.9 ms: 2% faster, less than
  // the minimum gain (5%), so the eval passes' result is kept.
  auto latency = [](const ir::IRModule& module) {
    return Tag(module, "a") == 1 && Tag(module, "b") == 2 ? 0.88e-3 : SeparatedLatency(module);
  };
  ir::IRModule out = Run(BestOf(kChain, kNested), latency);
  EXPECT_EQ(Tag(out, "a"), 0);
  EXPECT_EQ(Tag(out, "b"), 1);
  EXPECT_EQ(Decision(), "eval");
  EXPECT_EQ(BestOfInstruction().attrs.GetString("confirmed"), "alternative:880.0us,eval:900.0us");

  // Where the nested search finds the faster module, it wins outright.
  EXPECT_EQ(Tag(Run(BestOf(kChain, kNested), NestedSearchFaster), "b"), 1);
  EXPECT_EQ(Decision(), "eval");
}

TEST_F(BestOfPass, PreferAlternativeKeepsTheChainWithinTheMinimumGain) {
  // The nested search's pick (0,1) reads 0.88 ms against the chain's (1,2) 0.9 ms: 2% faster.
  auto latency = [](const ir::IRModule& module) {
    if (Tag(module, "a") == 0 && Tag(module, "b") == 1) return 0.88e-3;
    if (Tag(module, "a") == 1 && Tag(module, "b") == 2) return 0.9e-3;
    return SeparatedLatency(module);
  };
  // By default the eval passes' result is preferred (and here it is the faster one too).
  EXPECT_EQ(Tag(Run(BestOf(kChain, kNested), latency), "a"), 0);
  EXPECT_EQ(Decision(), "eval");
  // Preferring the alternative, the nested search's 2% do not pay for the change.
  ir::IRModule out = Run(BestOf(kChain, kNested, R"(prefer="alternative", )"), latency);
  EXPECT_EQ(Tag(out, "a"), 1);
  EXPECT_EQ(Tag(out, "b"), 2);
  EXPECT_EQ(Decision(), "alternative");
  EXPECT_EQ(BestOfInstruction().attrs.GetString("confirmed"), "eval:880.0us,alternative:900.0us");

  // A nested search clearly faster than the chain still wins.
  EXPECT_EQ(Tag(Run(BestOf(kChain, kNested, R"(prefer="alternative", )"), NestedSearchFaster), "a"),
            0);
  EXPECT_EQ(Decision(), "eval");
}

TEST_F(BestOfPass, TwoChainsThatMakeTheSameModuleAreOneFinalist) {
  // MockRunner's optimum is choice 1 of every knob: both chains tag a=1.
  auto mock = [](const ir::IRModule& module) {
    int64_t a = Tag(module, "a");
    return (1.0 + (a < 0 ? 0.0 : 0.1 * std::abs(static_cast<double>(a - 1)))) * 1e-3;
  };
  ir::IRModule out =
      Run(BestOf(R"(MockTune(choices=2, label=\"a\"))", R"(MockTune(choices=3, label="a"))"), mock);
  EXPECT_EQ(Tag(out, "a"), 1);
  EXPECT_EQ(Decision(), "eval");
  EXPECT_FALSE(BestOfInstruction().attrs.Has("confirmed"));
}

// With a trial budget of 20 and share=0.5, the alternative (its 20 choices measured first) gets
// 10 measurements and the eval passes the other 10: 20 in all, as `tandem tune --trials 20`
// asks. Both chains end measured, so nothing is reserved for measuring their results.
TEST_F(BestOfPass, SplitsTheTrialBudgetAsDocumented) {
  tuning::TuningSession::Options options;
  options.max_measurements = 20;
  Run(BestOf(R"(MockTune(choices=20, label=\"b\"))", R"(MockTune(choices=20, label="a"))",
             "share=0.5, "),
      SeparatedLatency, options);
  EXPECT_EQ(counts_.at(R"(MockTune(choices=20, label="b"))").measured, 10);
  EXPECT_EQ(counts_.at(R"(MockTune(choices=20, label="b"))").over_budget, 10);
  EXPECT_EQ(counts_.at(R"(MockTune(choices=20, label="a"))").measured, 10);
  EXPECT_EQ(counts_.at(R"(MockTune(choices=20, label="a"))").over_budget, 10);
  EXPECT_EQ(total_.measured, 20);

  // share=0: the alternative measures nothing new and decides nothing; its result (the module
  // unchanged) keeps one measurement back, and the eval passes spend the other 19.
  Run(BestOf(R"(MockTune(choices=20, label=\"b\"))", R"(MockTune(choices=20, label="a"))",
             "share=0.0, "),
      SeparatedLatency, options);
  EXPECT_EQ(counts_.at(R"(MockTune(choices=20, label="b"))").measured, 0);
  EXPECT_EQ(counts_.at(R"(MockTune(choices=20, label="a"))").measured, 19);
  EXPECT_EQ(total_.measured, 20);
}

TEST_F(BestOfPass, PipelineTextRoundTripsAndBadArgumentsFailWhenTheTextIsParsed) {
  std::string text = BestOf(kChain, kNested, "share=0.25, ");
  EXPECT_EQ(passes::PrintPipeline(*passes::ParsePipeline(text, registry_)), text);
  auto error = [&](const std::string& pipeline) {
    try {
      passes::ParsePipeline(pipeline, registry_);
    } catch (const ir::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("BestOf(eval=[InferType])").find("alternative=\"...\" must give"),
            std::string::npos);
  EXPECT_NE(error(R"(BestOf(alternative="NoSuchPass", eval=[InferType]))").find("NoSuchPass"),
            std::string::npos);
  EXPECT_NE(error(R"(BestOf(share=1.5, alternative="InferType"))").find("between 0 and 1"),
            std::string::npos);
  EXPECT_NE(error(R"(BestOf(prefer="chain", alternative="InferType"))")
                .find(R"(prefer="chain" must be "eval" or "alternative")"),
            std::string::npos);
  // The tree shows the alternative's structure under its name.
  EXPECT_EQ(passes::PrintPipelineTree(*passes::ParsePipeline(text, registry_)),
            "BestOf(share=0.25, alternative=[...])  [tuning]\n"
            "  eval:\n"
            "    MockTune(choices=3, label=\"a\", keep=1)  [tuning]\n"
            "      eval:\n"
            "        MockTune(choices=3, label=\"b\")  [tuning]\n"
            "  alternative:\n"
            "    MockTune(choices=3, label=\"b\")  [tuning]\n"
            "    MockTune(choices=3, label=\"a\")  [tuning]\n");
  // The alternative runs where the eval passes would: its required passes must run earlier.
  passes::PassContext context;
  EXPECT_THROW(
      context.RunPipeline(*passes::ParsePipeline(R"(BestOf(alternative="FuseOps"))", registry_),
                          testing::MockModule()),
      ir::Error);
  EXPECT_NO_THROW(passes::ParsePipeline(R"(InferType, BestOf(alternative="FuseOps"))", registry_)
                      ->Validate({}));
}

// The real builder and process runner on a small ResNet block, under a small trial budget: the
// result computes what the model computes, and the recorded trace replays to it.
TEST(BestOfRealRunner, ComputesWhatTheModelComputesAndReplays) {
  frontend::ResNetBlockConfig config;
  config.channels = 8;
  config.height = config.width = 8;
  ir::IRModule model = frontend::ResNetBasicBlock(config);
  tuning::TuningSession::Options options;
  options.measure.repeats = 3;
  options.measure.min_repeat_seconds = 5e-4;
  options.measure.timeout_seconds = 20;
  options.confirm_min_repeat_seconds = 1e-3;
  options.max_measurements = 24;
  passes::PassContext context;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<tuning::ProcessRunner>(), options);
  std::string pipeline =
      "InferType, "
      "BestOf(alternative=\"TuneLayout(eval=[FoldConstant, FuseOps]), InferType, TuneKernels\", "
      "eval=[TuneLayout(keep=1, eval=[FoldConstant, InferType, FuseOps, "
      "TuneKernels(skip_tuned=1)])])";
  passes::RecordedRun run =
      passes::RunPipelineRecorded(*passes::ParsePipeline(pipeline), model, context);
  EXPECT_LE(context.tuning->TotalCounts().measured, 24);
  const ir::Instruction* best_of = nullptr;
  for (const ir::Instruction& i : run.trace.instructions()) {
    if (i.kind == "BestOf") best_of = &i;
  }
  ASSERT_NE(best_of, nullptr);
  // Both chains' results were measured (neither failed).
  std::string measured = best_of->attrs.GetString("measured");
  EXPECT_EQ(measured.find("failed"), std::string::npos) << measured;

  passes::PassContext replay;
  ir::IRModule replayed = passes::ReplayTrace(model, run.trace, replay);
  EXPECT_TRUE(ir::StructuralEqual(replayed, run.module))
      << ir::StructuralDiff(replayed, run.module);
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), 5);
  std::vector<ir::Tensor> expected = backends::RunReference(model, inputs);
  std::vector<ir::Tensor> got = backends::Build(run.module)->Run(inputs);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LT(ir::RelativeError(got[i], expected[i]), 1e-4) << "output " << i;
  }
}

}  // namespace
}  // namespace tandem
