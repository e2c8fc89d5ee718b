// The counting rules of nested tuning (seed 003): with mock tuning passes of 2, 3 and 5
// choices, the evaluations requested and the measurements performed; a database that already
// holds the measurements answers every request; the winning trace replays exactly.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "tests/common/mock_tuning.h"

namespace tandem {
namespace {

// The rules count first measurements: confirming decisions (confirmation_test.cc) re-measures
// finalists on top of them, so it is off here.
tuning::TuningSession::Options CountingOptions() {
  tuning::TuningSession::Options options;
  options.confirm_rounds = 0;
  return options;
}

class CountingRules : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::RegisterPassesWithMockTune(registry_);
    module_ = testing::MockModule();
    database_ = tuning::MakeInMemoryDatabase();
  }

  // Runs `pipeline` with a fresh session on the shared database; returns the output module.
  ir::IRModule Run(const std::string& pipeline) {
    runner_ = std::make_shared<testing::MockRunner>();
    passes::PassContext context;
    context.tuning = std::make_shared<tuning::TuningSession>(
        ir::Target{}, database_, std::make_shared<tuning::LocalBuilder>(1), runner_,
        CountingOptions());
    ir::IRModule out = context.RunPipeline(*passes::ParsePipeline(pipeline, registry_), module_);
    counts_ = context.tuning->TotalCounts();
    decisions_ = context.tuning->decisions();
    context_ = std::move(context);
    return out;
  }

  void ExpectCounts(const std::string& pipeline, int64_t evaluations) {
    SCOPED_TRACE(pipeline);
    database_ = tuning::MakeInMemoryDatabase();
    Run(pipeline);
    EXPECT_EQ(counts_.requested, evaluations);
    EXPECT_EQ(counts_.measured, evaluations);
    EXPECT_EQ(counts_.reused, 0);
    EXPECT_EQ(runner_->runs, evaluations);
  }

  passes::PassRegistry registry_;
  ir::IRModule module_;
  std::shared_ptr<tuning::Database> database_;
  std::shared_ptr<testing::MockRunner> runner_;
  tuning::EvaluationCounts counts_;
  std::vector<tuning::TuningDecision> decisions_;
  passes::PassContext context_;
};

std::string T(int choices, const std::string& label, const std::string& eval = "") {
  std::string text = fmt::format(R"(MockTune(choices={}, label="{}")", choices, label);
  if (!eval.empty()) text += fmt::format(", eval=[{}]", eval);
  return text + ")";
}

TEST_F(CountingRules, SevenRulesOfTheSeed) {
  ExpectCounts(T(2, "a"), 2);
  ExpectCounts(T(3, "b"), 3);
  ExpectCounts(T(3, "b", "InferType"), 3);
  ExpectCounts(T(2, "a") + ", " + T(3, "b"), 5);
  ExpectCounts(T(2, "a", T(3, "b")), 6);
  ExpectCounts(T(3, "b", T(2, "a", T(5, "c"))), 30);
  ExpectCounts(T(3, "b", T(2, "a") + ", " + T(5, "c")), 21);
}

// BestOf(eval=[U], alternative="V") evaluates |U| + |V|: each chain once, and nothing more when
// both end measured (docs/tuning.md, counting rules).
TEST_F(CountingRules, BestOfCountsBothChainsOnce) {
  // The alternative's text is a string: its quotes escaped.
  auto best_of = [](const std::string& alternative, const std::string& eval) {
    std::string escaped;
    for (char c : alternative) escaped += c == '"' ? std::string("\\\"") : std::string(1, c);
    return fmt::format(R"(BestOf(alternative="{}", eval=[{}]))", escaped, eval);
  };
  ExpectCounts(best_of(T(3, "b"), T(2, "a")), 5);
  ExpectCounts(best_of(T(3, "b") + ", " + T(5, "c"), T(2, "a", T(3, "b"))), 14);
  ExpectCounts(T(2, "c", best_of(T(3, "b"), T(2, "a"))), 10);
}

TEST_F(CountingRules, FindsTheKnownOptimumAndRecordsEveryDecision) {
  ir::IRModule out = Run(T(3, "b", T(2, "a", T(5, "c"))));
  EXPECT_EQ(out.attrs().GetInt("mock.a"), 1);
  EXPECT_EQ(out.attrs().GetInt("mock.b"), 1);
  EXPECT_EQ(out.attrs().GetInt("mock.c"), 1);
  ASSERT_EQ(decisions_.size(), 1u);
  const ir::Trace& trace = decisions_[0].trace;
  ASSERT_EQ(trace.size(), 3u);
  EXPECT_EQ(std::get<std::string>(*trace.instructions()[0].decision), "c1");
  EXPECT_EQ(trace.instructions()[1].attrs.GetString("pass"), R"(MockTune(choices=2, label="a"))");
  EXPECT_NEAR(decisions_[0].result.median_seconds, 1e-3, 1e-12);
}

TEST_F(CountingRules, HeuristicEvalPassIsAOneChoiceInstruction) {
  Run(T(2, "a", "InferType"));
  ASSERT_EQ(decisions_.size(), 1u);
  const auto& instructions = decisions_[0].trace.instructions();
  ASSERT_EQ(instructions.size(), 2u);
  EXPECT_EQ(instructions[1].kind, "InferType");
  EXPECT_EQ(std::get<std::string>(*instructions[1].decision), "apply");
}

TEST_F(CountingRules, PrefilledDatabaseAnswersRepeats) {
  std::string pipeline = T(2, "a", T(3, "b"));
  Run(pipeline);
  EXPECT_EQ(counts_.measured, 6);
  EXPECT_EQ(database_->NumRecords(), 6u);
  ir::IRModule first = Run(pipeline);
  EXPECT_EQ(counts_.requested, 6);
  EXPECT_EQ(counts_.measured, 0);
  EXPECT_EQ(counts_.reused, 6);
  EXPECT_EQ(runner_->runs, 0);
  EXPECT_EQ(first.attrs().GetInt("mock.a"), 1);
  // A different pipeline that reaches some of the same modules measures only the new ones.
  Run(T(3, "b", T(2, "a")));  // modules (b, a) already measured as (a, b): all 6 reused
  EXPECT_EQ(counts_.measured, 0);
  Run(T(2, "a", T(4, "b")));  // b = 3 is new: 2 new modules
  EXPECT_EQ(counts_.requested, 8);
  EXPECT_EQ(counts_.measured, 2);
}

TEST_F(CountingRules, WinningTraceReplaysToTheSameModule) {
  ir::IRModule out = Run(T(3, "b", T(2, "a") + ", InferType, " + T(5, "c")));
  ASSERT_EQ(decisions_.size(), 1u);
  ir::Trace trace = ir::Trace::FromJson(decisions_[0].trace.ToJson());
  ir::IRModule replayed = passes::ReplayTrace(module_, trace, context_, registry_);
  EXPECT_TRUE(ir::StructuralEqual(replayed, out)) << ir::StructuralDiff(replayed, out);
  // A changed decision replays to the mutated module; an unknown one is a clear error.
  ir::IRModule mutated =
      passes::ReplayTrace(module_, trace.WithDecision(0, std::string("c2")), context_, registry_);
  EXPECT_EQ(mutated.attrs().GetInt("mock.b"), 2);
  try {
    passes::ReplayTrace(module_, trace.WithDecision(0, std::string("c9")), context_, registry_);
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no choice 'c9'"), std::string::npos) << e.what();
  }
}

TEST_F(CountingRules, SearchStrategiesCapAndSample) {
  ExpectCounts(R"(MockTune(choices=5, label="c", max_candidates=2))", 2);
  ExpectCounts(R"(MockTune(choices=5, label="c", strategy="random", sample=3))", 3);
  // The same seed samples the same subset.
  Run(R"(MockTune(choices=5, label="c", strategy="random", sample=2))");
  std::string first = decisions_[0].trace.instructions()[0].attrs.GetString("considered");
  database_ = tuning::MakeInMemoryDatabase();
  Run(R"(MockTune(choices=5, label="c", strategy="random", sample=2))");
  EXPECT_EQ(decisions_[0].trace.instructions()[0].attrs.GetString("considered"), first);
}

// Screening with keep=k (passes/tuning_pass.h): every choice of the outer pass is measured with
// the nested tuning pass skipped, and only the k best are expanded with it:
// |T|·1 + k·|U| evaluations instead of |T|·|U|.
std::string Kept(int choices, const std::string& label, int keep, const std::string& eval) {
  return fmt::format(R"(MockTune(choices={}, label="{}", keep={}, eval=[{}]))", choices, label,
                     keep, eval);
}

TEST_F(CountingRules, ScreeningExpandsOnlyTheKeptChoices) {
  ExpectCounts(Kept(5, "b", 1, T(3, "a")), 5 + 1 * 3);
  ExpectCounts(Kept(5, "b", 2, T(3, "a")), 5 + 2 * 3);
  // Nothing nested to skip, or no more choices than kept: no screening.
  ExpectCounts(Kept(5, "b", 2, "InferType"), 5);
  ExpectCounts(Kept(2, "b", 2, T(3, "a")), 6);
  // Nested: the screening form of an inner pass with keep skips its own nested pass too.
  ExpectCounts(Kept(3, "c", 1, Kept(4, "b", 1, T(2, "a"))), 3 + (4 + 2));
}

TEST_F(CountingRules, ScreeningKeepsTheBestAndRecordsWhy) {
  ir::IRModule out = Run(Kept(5, "b", 2, T(3, "a")));
  EXPECT_EQ(out.attrs().GetInt("mock.b"), 1);
  EXPECT_EQ(out.attrs().GetInt("mock.a"), 1);
  ASSERT_EQ(decisions_.size(), 1u);
  const ir::Instruction& first = decisions_[0].trace.instructions()[0];
  EXPECT_EQ(std::get<std::string>(*first.decision), "c1");
  // Screened latencies: 1 ms + 0.1 ms per step from choice 1; c1, then c0 and c2 tie (the first
  // in choice order is kept).
  EXPECT_EQ(first.attrs.GetString("screened"),
            "c0:1100.0us,c1:1000.0us,c2:1100.0us,c3:1200.0us,c4:1300.0us");
  EXPECT_EQ(first.attrs.GetString("kept"), "c0,c1");
  // The winning trace replays to the same module without measuring.
  passes::PassContext replay;
  EXPECT_TRUE(ir::StructuralEqual(
      passes::ReplayTrace(decisions_[0].input, decisions_[0].trace, replay, registry_), out));
}

TEST_F(CountingRules, ScreeningSharesTheBudgetAmongTheKept) {
  // 5 screening measurements, then 6 left for 2 kept choices: 3 each, all of U(3).
  runner_ = std::make_shared<testing::MockRunner>();
  passes::PassContext context;
  tuning::TuningSession::Options options = CountingOptions();
  options.max_measurements = 11;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, database_, std::make_shared<tuning::LocalBuilder>(1), runner_, options);
  ir::IRModule out =
      context.RunPipeline(*passes::ParsePipeline(Kept(5, "b", 2, T(3, "a")), registry_), module_);
  EXPECT_EQ(context.tuning->TotalCounts().measured, 11);
  EXPECT_EQ(context.tuning->TotalCounts().over_budget, 0);
  EXPECT_EQ(out.attrs().GetInt("mock.a"), 1);
  EXPECT_EQ(out.attrs().GetInt("mock.b"), 1);
}

TEST_F(CountingRules, BudgetCapsRealMeasurements) {
  runner_ = std::make_shared<testing::MockRunner>();
  passes::PassContext context;
  tuning::TuningSession::Options options = CountingOptions();
  options.max_measurements = 4;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, database_, std::make_shared<tuning::LocalBuilder>(1), runner_, options);
  context.RunPipeline(*passes::ParsePipeline(T(2, "a", T(3, "b")), registry_), module_);
  EXPECT_EQ(context.tuning->TotalCounts().measured, 4);
  EXPECT_EQ(context.tuning->TotalCounts().over_budget, 2);
  EXPECT_EQ(runner_->runs, 4);
}

// A budget share limits what runs under it to its trials or to what the enclosing budget has
// left, whichever is less; a spent time budget leaves nothing and says so.
TEST(TuningSessionBudget, SharesNestAndTimeBudgetsStopTheRun) {
  tuning::TuningSession::Options options = CountingOptions();
  options.max_measurements = 10;
  tuning::TuningSession session(ir::Target{}, tuning::MakeInMemoryDatabase(),
                                std::make_shared<tuning::LocalBuilder>(1),
                                std::make_shared<testing::MockRunner>(), options);
  EXPECT_EQ(session.RemainingBudget(), 10);
  session.PushBudgetShare(3);
  EXPECT_EQ(session.RemainingBudget(), 3);
  session.PushBudgetShare(20);
  EXPECT_EQ(session.RemainingBudget(), 3);
  session.PopBudgetShare();
  session.PopBudgetShare();
  EXPECT_EQ(session.RemainingBudget(), 10);
  EXPECT_THROW(session.PopBudgetShare(), ir::Error);
  EXPECT_EQ(session.BudgetSpentReason(), "trial budget spent");

  options.max_seconds = 1e-9;
  tuning::TuningSession timed(ir::Target{}, tuning::MakeInMemoryDatabase(),
                              std::make_shared<tuning::LocalBuilder>(1),
                              std::make_shared<testing::MockRunner>(), options);
  EXPECT_EQ(timed.RemainingBudget(), 0);
  EXPECT_TRUE(timed.BudgetSpent());
  EXPECT_EQ(timed.BudgetSpentReason(), "time budget spent");
}

}  // namespace
}  // namespace tandem
