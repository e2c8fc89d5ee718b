// Budgets that resume: a tuning job keeps its spent trials in the database, so a run that stopped
// part-way (here: one given a smaller budget) and the same job run again together measure no more
// than one uninterrupted run; restarting resets the count; other jobs have their own counts.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "tests/common/mock_tuning.h"
#include "tuning/session/tuning_run.h"

namespace tandem {
namespace {

constexpr const char* kPipeline =
    R"(MockTune(choices=4, label="a", eval=[MockTune(choices=4, label="b", eval=[)"
    R"(MockTune(choices=4, label="c")])]))";
constexpr int64_t kBudget = 40;  // of 64 candidates: the budget binds

class TuningJob : public ::testing::Test {
 protected:
  void SetUp() override { testing::RegisterPassesWithMockTune(registry_); }

  struct Outcome {
    int64_t resumed = 0;
    int64_t measured = 0;
    ir::IRModule module;
  };
  // One run of `job` ("" = no job) with `budget` on `database`.
  Outcome Tune(const std::shared_ptr<tuning::Database>& database, const std::string& job,
               int64_t budget, bool restart = false) {
    passes::PassContext context;
    tuning::TuningSession::Options options;
    options.max_measurements = budget;
    options.confirm_rounds = 0;
    options.seed = 7;
    context.tuning = std::make_shared<tuning::TuningSession>(
        ir::Target{}, database, std::make_shared<tuning::LocalBuilder>(1),
        std::make_shared<testing::MockRunner>(), options);
    Outcome outcome;
    if (!job.empty()) outcome.resumed = context.tuning->ContinueJob(job, restart);
    outcome.module =
        context.RunPipeline(*passes::ParsePipeline(kPipeline, registry_), testing::MockModule());
    outcome.measured = context.tuning->TotalCounts().measured;
    return outcome;
  }

  passes::PassRegistry registry_;
};

TEST_F(TuningJob, StoppedJobResumesWithWhatIsLeftOfItsBudget) {
  std::shared_ptr<tuning::Database> uninterrupted = tuning::MakeInMemoryDatabase();
  Outcome whole = Tune(std::move(uninterrupted), "", kBudget);
  ASSERT_EQ(whole.measured, kBudget);

  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  for (int64_t k : {1, 15, 39}) {
    database = tuning::MakeInMemoryDatabase();
    Outcome first = Tune(database, "job", k);
    EXPECT_EQ(first.resumed, 0);
    EXPECT_EQ(first.measured, k);
    EXPECT_EQ(database->JobSpent("job"), k);
    Outcome second = Tune(database, "job", kBudget);
    EXPECT_EQ(second.resumed, k);
    EXPECT_EQ(second.measured, kBudget - k) << "k = " << k;
    EXPECT_EQ(database->JobSpent("job"), kBudget);
    // The two runs together took no more measurements than the uninterrupted one.
    EXPECT_LE(database->NumRecords(), static_cast<size_t>(whole.measured));
    // The resumed searches took the uninterrupted run's course.
    EXPECT_TRUE(ir::StructuralEqual(second.module, whole.module)) << "k = " << k;
  }
  // The budget fully spent: the job finishes on what the database holds, measuring nothing.
  Outcome third = Tune(database, "job", kBudget);
  EXPECT_EQ(third.resumed, kBudget);
  EXPECT_EQ(third.measured, 0);
  EXPECT_EQ(database->JobSpent("job"), kBudget);
}

TEST_F(TuningJob, RestartResetsTheSpentCount) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  Tune(database, "job", 10);
  ASSERT_EQ(database->JobSpent("job"), 10);
  Outcome restarted = Tune(database, "job", kBudget, /*restart=*/true);
  EXPECT_EQ(restarted.resumed, 0);
  EXPECT_GT(restarted.measured, kBudget - 10);  // more than a resumed run would
  EXPECT_EQ(database->JobSpent("job"), restarted.measured);
}

TEST_F(TuningJob, OtherJobsKeepTheirOwnCounts) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  Tune(database, "job-a", 10);
  Outcome other = Tune(database, "job-b", 10);
  EXPECT_EQ(other.resumed, 0);
  EXPECT_EQ(database->JobSpent("job-a"), 10);
  EXPECT_EQ(database->JobSpent("job-b"), 10);
  // Without a job, nothing is counted for any.
  Tune(database, "", 5);
  EXPECT_EQ(database->JobSpent("job-a"), 10);
  EXPECT_EQ(database->JobSpent(""), 0);

  // The key tells apart every part of a job.
  std::string key = tuning::TuningJobKey("m", "P", "target|measure", 200, 0, 1);
  EXPECT_EQ(key, tuning::TuningJobKey("m", "P", "target|measure", 200, 0, 1));
  for (const std::string& other_key :
       {tuning::TuningJobKey("m2", "P", "target|measure", 200, 0, 1),
        tuning::TuningJobKey("m", "Q", "target|measure", 200, 0, 1),
        tuning::TuningJobKey("m", "P", "target2|measure", 200, 0, 1),
        tuning::TuningJobKey("m", "P", "target|measure2", 200, 0, 1),
        tuning::TuningJobKey("m", "P", "target|measure", 100, 0, 1),
        tuning::TuningJobKey("m", "P", "target|measure", 200, 60, 1),
        tuning::TuningJobKey("m", "P", "target|measure", 200, 0, 2)}) {
    EXPECT_NE(key, other_key);
  }
}

TEST_F(TuningJob, JoiningAfterMeasuringIsAnError) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  passes::PassContext context;
  tuning::TuningSession::Options options;
  options.confirm_rounds = 0;
  context.tuning = std::make_shared<tuning::TuningSession>(
      ir::Target{}, database, std::make_shared<tuning::LocalBuilder>(1),
      std::make_shared<testing::MockRunner>(), options);
  context.tuning->EvaluateModules({{testing::MockModule(), ir::Trace()}}, "p");
  EXPECT_THROW(context.tuning->ContinueJob("job"), ir::Error);
}

}  // namespace
}  // namespace tandem
