// Confirming decisions (TuningPass::SelectConfirmed, TuningSession::ConfirmModules): finalists
// re-measured together overturn a decision a slow spell made, the confirmation is recorded in
// the trace and the database, and a run on the same database decides the same without
// measuring.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "ir/parser.h"
#include "passes/pipeline_text.h"
#include "tests/common/mock_tuning.h"

namespace tandem {
namespace {

// MockRunner's latencies, except that some measurements of the optimum (mock.t = 1) fall in a
// slow spell and read 30% slower: by default its first one (later ones read true).
class SlowSpellRunner : public tuning::Runner {
 public:
  explicit SlowSpellRunner(std::set<int> slowed = {0}) : slowed_(std::move(slowed)) {}
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions& options) override {
    std::vector<tuning::MeasureResult> results = truth_.Run(inputs, options);
    min_repeat_seconds.push_back(options.min_repeat_seconds);
    for (size_t k = 0; k < inputs.size(); ++k) {
      ++runs;
      const ir::Attrs& attrs = inputs[k].executable->module().attrs();
      if (attrs.Has("mock.t") && attrs.GetInt("mock.t") == 1 && slowed_.count(optimum_runs_++)) {
        double seconds = results[k].median_seconds * 1.3;
        results[k] = tuning::MeasureResult::FromRunSeconds({seconds, seconds, seconds}, 0);
      }
    }
    return results;
  }
  int64_t runs = 0;
  std::vector<double> min_repeat_seconds;  // the options of each call, in order

 private:
  testing::MockRunner truth_;
  std::set<int> slowed_;  // which of the optimum's measurements are slow (0: the first)
  int optimum_runs_ = 0;
};

class Confirmation : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::RegisterPassesWithMockTune(registry_);
    module_ = testing::MockModule();
    database_ = tuning::MakeInMemoryDatabase();
  }

  ir::IRModule Run(int confirm_rounds,
                   const std::string& pipeline = R"(MockTune(choices=3, label="t"))",
                   double margin = 0.5, std::set<int> slowed = {0}, double minimum_gain = 0.03) {
    runner_ = std::make_shared<SlowSpellRunner>(std::move(slowed));
    tuning::TuningSession::Options options;
    options.confirm_rounds = confirm_rounds;
    options.confirm_margin = margin;
    options.minimum_gain = minimum_gain;
    passes::PassContext context;
    context.tuning = std::make_shared<tuning::TuningSession>(
        ir::Target{}, database_, std::make_shared<tuning::LocalBuilder>(1), runner_, options);
    ir::IRModule out = context.RunPipeline(*passes::ParsePipeline(pipeline, registry_), module_);
    counts_ = context.tuning->TotalCounts();
    decisions_ = context.tuning->decisions();
    return out;
  }

  passes::PassRegistry registry_;
  ir::IRModule module_;
  std::shared_ptr<tuning::Database> database_;
  std::shared_ptr<SlowSpellRunner> runner_;
  tuning::EvaluationCounts counts_;
  std::vector<tuning::TuningDecision> decisions_;
};

TEST_F(Confirmation, WithoutItTheSlowSpellDecides) {
  // c0 and c2 read 1.1 ms, the optimum c1 1.3 ms: the first of the two wrong ones wins.
  EXPECT_EQ(Run(/*confirm_rounds=*/0).attrs().GetInt("mock.t"), 0);
  EXPECT_EQ(counts_.confirmed, 0);
  EXPECT_EQ(runner_->runs, 3);
}

TEST_F(Confirmation, FinalistsMeasuredTogetherOverturnIt) {
  ir::IRModule out = Run(/*confirm_rounds=*/3);
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 1);
  // Three finalists within 50% of the best, each measured in 3 interleaved rounds.
  EXPECT_EQ(counts_.measured, 3);
  EXPECT_EQ(counts_.confirmed, 3);
  EXPECT_EQ(runner_->runs, 3 + 3 * 3);
  ASSERT_EQ(decisions_.size(), 1u);
  EXPECT_NEAR(decisions_[0].result.median_seconds, 1e-3, 1e-12);
  const ir::Instruction& instruction = decisions_[0].trace.instructions()[0];
  EXPECT_EQ(std::get<std::string>(*instruction.decision), "c1");
  EXPECT_EQ(instruction.attrs.GetString("confirmed"), "c0:1100.0us,c2:1100.0us,c1:1000.0us");
}

// The optimum c1 (1.0 ms) gains 9% over the first choice c0 (1.1 ms): enough under a minimum
// gain of 3%, not under one of 20%, where the first choice stays.
TEST_F(Confirmation, AChangeMustGainTheMinimumOverTheFirstChoice) {
  EXPECT_EQ(Run(3, R"(MockTune(choices=3, label="t"))", 0.5, {0}, 0.03).attrs().GetInt("mock.t"),
            1);
  database_ = tuning::MakeInMemoryDatabase();
  ir::IRModule out = Run(3, R"(MockTune(choices=3, label="t"))", 0.5, {0}, 0.2);
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 0);
  EXPECT_EQ(std::get<std::string>(*decisions_[0].trace.instructions()[0].decision), "c0");
}

// c2 is 2% faster than c1, which is listed before it: within the minimum gain, so the earlier
// choice wins; c0 is too slow to stay. Without a minimum gain the fastest wins.
TEST_F(Confirmation, AnEarlierChoiceWithinTheMinimumGainOfTheFastestWins) {
  auto decide = [&](double minimum_gain) {
    tuning::TuningSession::Options options;
    options.minimum_gain = minimum_gain;
    passes::PassContext context;
    context.tuning = std::make_shared<tuning::TuningSession>(
        ir::Target{}, tuning::MakeInMemoryDatabase(), std::make_shared<tuning::LocalBuilder>(1),
        std::make_shared<testing::LatencyRunner>([](const ir::IRModule& module) {
          // By choice of MockTune(label="t"): c0 1.3 ms, c1 1.02 ms, c2 1.0 ms.
          int64_t t = module.attrs().Has("mock.t") ? module.attrs().GetInt("mock.t") : 0;
          return (t == 0 ? 1.3 : t == 1 ? 1.02 : 1.0) * 1e-3;
        }),
        options);
    ir::IRModule out = context.RunPipeline(
        *passes::ParsePipeline(R"(MockTune(choices=3, label="t"))", registry_), module_);
    return out.attrs().GetInt("mock.t");
  };
  EXPECT_EQ(decide(0.03), 1);
  EXPECT_EQ(decide(0.0), 2);
}

// A spell over one of the three confirmation rounds of the optimum (and over its first
// measurement): its quietest round reads the true 1.0 ms, and it is faster than the others in
// the two other rounds, so it wins.
TEST_F(Confirmation, ASlowSpellOverOneRoundDoesNotHideAGain) {
  ir::IRModule out = Run(/*confirm_rounds=*/3, R"(MockTune(choices=3, label="t"))", 0.5, {0, 2});
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 1);
  EXPECT_EQ(decisions_[0].trace.instructions()[0].attrs.GetString("confirmed"),
            "c0:1100.0us,c2:1100.0us,c1:1000.0us");
}

// A spell over two of the three confirmation rounds of the optimum: its quietest round reads
// 1.0 ms, 9% faster than the others' 1.1, but round by round it is slower in two rounds of
// three. A gain seen in one round only is not confirmed: the first choice stays.
TEST_F(Confirmation, AGainInOneRoundOfThreeIsNotConfirmed) {
  ir::IRModule out = Run(/*confirm_rounds=*/3, R"(MockTune(choices=3, label="t"))", 0.5, {1, 2});
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 0);
  EXPECT_EQ(decisions_[0].trace.instructions()[0].attrs.GetString("confirmed"),
            "c1:1000.0us,c0:1100.0us,c2:1100.0us");
}

// The rule itself, on pooled runs of 3 rounds of 2 repeats each.
TEST(ConfirmedGain, NeedsTheGainInTheQuietestRoundsAndRoundByRound) {
  auto pooled = [](std::vector<double> runs) {
    return tuning::MeasureResult::FromRunSeconds(std::move(runs), 0);
  };
  auto result = [&](std::vector<double> runs) {
    // As ConfirmModules returns it: median_seconds from the quietest round.
    tuning::MeasureResult r = pooled(runs);
    for (size_t k = 0; k < runs.size(); k += 2) {
      r.median_seconds = std::min(r.median_seconds, 0.5 * (runs[k] + runs[k + 1]));
    }
    return r;
  };
  using tuning::TuningSession;
  tuning::MeasureResult incumbent = result({1.00, 1.00, 1.00, 1.00, 1.00, 1.00});
  // 10% faster in every round.
  EXPECT_TRUE(
      TuningSession::ConfirmedGain(result({0.9, 0.9, 0.9, 0.9, 0.9, 0.9}), incumbent, 3, 0.05));
  // 10% faster in its quietest round only, slower in the other two (a lucky round).
  EXPECT_FALSE(
      TuningSession::ConfirmedGain(result({1.05, 1.05, 1.02, 1.02, 0.9, 0.9}), incumbent, 3, 0.05));
  // 10% faster in two rounds; one round of its own was slowed: still a gain.
  EXPECT_TRUE(
      TuningSession::ConfirmedGain(result({0.9, 0.9, 1.8, 1.8, 0.9, 0.9}), incumbent, 3, 0.05));
  // A slow phase over one whole round (both slowed alike) changes nothing.
  tuning::MeasureResult phased = result({1.00, 1.00, 2.00, 2.00, 1.00, 1.00});
  EXPECT_TRUE(
      TuningSession::ConfirmedGain(result({0.9, 0.9, 1.8, 1.8, 0.9, 0.9}), phased, 3, 0.05));
  EXPECT_FALSE(
      TuningSession::ConfirmedGain(result({0.97, 0.97, 1.94, 1.94, 0.97, 0.97}), phased, 3, 0.05));
  // Failures: a failed challenger never wins, a failed incumbent always loses.
  tuning::MeasureResult failed = tuning::MeasureResult::Failure("crashed");
  EXPECT_FALSE(TuningSession::ConfirmedGain(failed, incumbent, 3, 0.05));
  EXPECT_TRUE(TuningSession::ConfirmedGain(incumbent, failed, 3, 0.05));
  // Runs that do not split into the rounds: the medians alone decide.
  EXPECT_TRUE(TuningSession::ConfirmedGain(pooled({0.9, 0.9, 0.9, 0.9}), incumbent, 3, 0.05));
  EXPECT_FALSE(TuningSession::ConfirmedGain(pooled({0.97, 0.97, 0.97, 0.97}), incumbent, 3, 0.05));
}

TEST_F(Confirmation, TheSameDatabaseAnswersItAndDecidesTheSame) {
  Run(/*confirm_rounds=*/3);
  ir::Trace first = decisions_[0].trace;
  size_t records = database_->NumRecords();
  // A second run: every measurement, the confirmation included, comes from the database (the
  // fresh runner's slow spell never happens), and the decision and its trace are the same.
  ir::IRModule out = Run(/*confirm_rounds=*/3);
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 1);
  EXPECT_EQ(runner_->runs, 0);
  EXPECT_EQ(counts_.measured, 0);
  EXPECT_EQ(counts_.confirmed, 0);
  EXPECT_EQ(database_->NumRecords(), records);
  EXPECT_EQ(decisions_[0].trace, first);
}

TEST_F(Confirmation, RecordsCarryTheGroupKeyAndHowTheyWereMeasured) {
  Run(/*confirm_rounds=*/3);
  size_t confirmations = 0;
  // Every record of the run: 3 first measurements (candidate "") and 3 confirmations.
  for (const tuning::Workload& workload : database_->Workloads()) {
    for (const std::string& target : database_->Targets(workload.hash)) {
      for (const tuning::TuningRecord& record : database_->Records(workload.hash, target)) {
        if (record.candidate_hash.rfind("confirm-", 0) != 0) continue;
        ++confirmations;
        EXPECT_EQ(record.run_seconds.size(), 9u);  // 3 rounds of 3 repeats, pooled
        EXPECT_NE(record.measured_by.find("graph-confirm-3-rounds"), std::string::npos);
      }
    }
  }
  EXPECT_EQ(confirmations, 3u);
}

// A confirmation's repeats each loop the module for at least confirm_min_repeat_seconds (20 ms
// by default): its windows are longer than the first measurements', and its records say so.
TEST_F(Confirmation, RepeatsOfAConfirmationLastLonger) {
  Run(/*confirm_rounds=*/3);
  ASSERT_GE(runner_->min_repeat_seconds.size(), 2u);
  double first = tuning::MeasureOptions{}.min_repeat_seconds;
  EXPECT_EQ(runner_->min_repeat_seconds.front(), first);  // the first measurements
  EXPECT_EQ(runner_->min_repeat_seconds.back(),
            tuning::TuningSession::Options{}.confirm_min_repeat_seconds);
  EXPECT_GT(runner_->min_repeat_seconds.back(), first);
  for (const tuning::Workload& workload : database_->Workloads()) {
    for (const std::string& target : database_->Targets(workload.hash)) {
      for (const tuning::TuningRecord& record : database_->Records(workload.hash, target)) {
        bool confirmation = record.candidate_hash.rfind("confirm-", 0) == 0;
        EXPECT_EQ(
            record.measured_by.find("\"min_repeat_seconds\":0.02"),
            confirmation ? record.measured_by.find("\"min_repeat_seconds\"") : std::string::npos)
            << record.measured_by;
      }
    }
  }
}

// The first choice (c0, 1.0 ms) reads 2.0 ms in its first measurement, outside the margin of
// the fastest (c1, 0.98 ms): it is confirmed all the same, and since c1 gains only 2% in the
// confirmation, the first choice stays. The margin alone would have let c1 win unconfirmed.
TEST_F(Confirmation, TheFirstChoiceIsAFinalistWhateverItsFirstMeasurementRead) {
  auto first_reads = std::make_shared<int>(0);
  tuning::TuningSession::Options options;
  options.confirm_margin = 0.25;
  passes::PassContext context;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, database_, std::make_shared<tuning::LocalBuilder>(1),
      std::make_shared<testing::LatencyRunner>([first_reads](const ir::IRModule& module) {
        int64_t t = module.attrs().Has("mock.t") ? module.attrs().GetInt("mock.t") : 0;
        if (t == 0 && (*first_reads)++ == 0) return 2.0e-3;
        return (t == 0 ? 1.0 : t == 1 ? 0.98 : 1.5) * 1e-3;
      }),
      options);
  ir::IRModule out = context.RunPipeline(
      *passes::ParsePipeline(R"(MockTune(choices=3, label="t"))", registry_), module_);
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 0);
  EXPECT_EQ(context.tuning->TotalCounts().confirmed, 2);
  EXPECT_EQ(context.tuning->decisions().at(0).trace.instructions()[0].attrs.GetString("confirmed"),
            "c1:980.0us,c0:1000.0us");
}

TEST_F(Confirmation, ALoneFinalistIsNotReMeasured) {
  // Margin 0 and two choices (c0 1.1 ms, c1 read 1.3 ms): only c0 is a finalist, so nothing is
  // confirmed and the slow spell decides.
  runner_ = std::make_shared<SlowSpellRunner>();
  tuning::TuningSession::Options options;
  options.confirm_margin = 0;
  passes::PassContext context;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, database_, std::make_shared<tuning::LocalBuilder>(1), runner_, options);
  ir::IRModule out = context.RunPipeline(
      *passes::ParsePipeline(R"(MockTune(choices=2, label="t"))", registry_), module_);
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 0);
  EXPECT_EQ(context.tuning->TotalCounts().confirmed, 0);
  EXPECT_EQ(runner_->runs, 2);
}

// Screening (keep=1): the slow spell hits the optimum's screening measurement; confirming the
// screening batch (margin at least 50%) keeps the right choice for tuning.
TEST_F(Confirmation, ScreeningBatchIsConfirmedBeforeTheKeptChoiceIsChosen) {
  const std::string pipeline =
      R"(MockTune(choices=3, label="t", keep=1, eval=[MockTune(choices=2, label="u")]))";
  auto kept = [&] { return decisions_.at(0).trace.instructions().at(0).attrs.GetString("kept"); };
  Run(/*confirm_rounds=*/0, pipeline, /*margin=*/0.1);
  EXPECT_EQ(kept(), "c0");
  database_ = tuning::MakeInMemoryDatabase();
  ir::IRModule out = Run(/*confirm_rounds=*/3, pipeline, /*margin=*/0.1);
  EXPECT_EQ(kept(), "c1");
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 1);
  EXPECT_EQ(out.attrs().GetInt("mock.u"), 1);
}

}  // namespace
}  // namespace tandem
