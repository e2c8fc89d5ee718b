// Persistence of tuning: a nested tuning run on a SQLite database is killed with SIGKILL
// part-way; the file stays consistent, and a second run on it measures exactly the candidates
// the first one did not (each candidate measured once in total), and takes the same decisions
// as an uninterrupted run.
#include <gtest/gtest.h>
#include <omp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "ir/parser.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "tests/common/mock_tuning.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPipeline =
    R"(MockTune(choices=4, label="a", eval=[MockTune(choices=4, label="b", eval=[)"
    R"(MockTune(choices=4, label="c")])]))";
constexpr int64_t kCandidates = 64;

class TuningResume : public ::testing::Test {
 protected:
  void SetUp() override {
    passes::RegisterAllPasses(registry_);
    testing::RegisterMockTune(registry_);
    module_ = ir::ParseModule(R"(
graph @main(%x: f32[64]) -> f32[64] {
  %r = relu(%x) : f32[64]
  return %r
})");
    std::string pattern = (fs::temp_directory_path() / "tandem_resume_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { fs::remove_all(directory_); }

  // Tunes with the real builder and process runner on `database`; with a `job`, continues it
  // under a trial budget of `budget` (the trials earlier runs spent go to `resumed`).
  tuning::EvaluationCounts Tune(std::shared_ptr<tuning::Database> database, ir::IRModule* out,
                                const std::string& job = "", int64_t budget = 0,
                                int64_t* resumed = nullptr) {
    passes::PassContext context;
    tuning::TuningSession::Options options;
    options.max_measurements = budget;
    options.measure.repeats = 2;
    options.measure.min_repeat_seconds = 1e-4;
    // The counts below are of first measurements, one record each; confirmations add records
    // per decision (confirmation_test.cc covers them).
    options.confirm_rounds = 0;
    context.tuning = std::make_shared<tuning::TuningSession>(
        ir::Target{}, database, std::make_shared<tuning::LocalBuilder>(1),
        std::make_shared<tuning::ProcessRunner>(), options);
    if (!job.empty()) {
      int64_t spent = context.tuning->ContinueJob(job);
      if (resumed != nullptr) *resumed = spent;
    }
    ir::IRModule result =
        context.RunPipeline(*passes::ParsePipeline(kPipeline, registry_), module_);
    if (out != nullptr) *out = result;
    return context.tuning->TotalCounts();
  }

  // Forks a child that tunes on the file at `path` (with `job` and `budget`) and kills it with
  // SIGKILL once it committed at least 8 records; false when it finished first.
  bool TuneAndKill(const std::string& path, const std::string& job, int64_t budget) {
    tuning::OpenSqliteDatabase(path);  // create it before the child starts
    // Tests before this one may have run OpenMP parallel regions (oneDNN does): the child would
    // inherit a team whose threads it does not have and hang in its first OpenMP call. Released
    // first, as ProcessRunner does before it forks its workers.
    omp_pause_resource_all(omp_pause_hard);
    pid_t child = fork();
    if (child < 0) return false;
    if (child == 0) {
      try {
        Tune(tuning::OpenSqliteDatabase(path), nullptr, job, budget);
      } catch (...) {
        _exit(2);
      }
      _exit(0);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      if (tuning::OpenSqliteDatabase(path)->NumRecords() >= 8) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    return WIFSIGNALED(status);
  }

  passes::PassRegistry registry_;
  ir::IRModule module_;
  std::string directory_;
};

TEST_F(TuningResume, KilledRunResumesWithoutRepeatingMeasurements) {
  std::string path = (fs::path(directory_) / "tuning.db").string();
  ASSERT_TRUE(TuneAndKill(path, "", 0)) << "the tuning child finished before it was killed";

  auto database = tuning::OpenSqliteDatabase(path);  // opens: not corrupt
  size_t before = database->NumRecords();
  ASSERT_GE(before, 8u);
  ASSERT_LT(before, static_cast<size_t>(kCandidates));
  ir::IRModule resumed;
  tuning::EvaluationCounts counts = Tune(std::move(database), &resumed);
  EXPECT_EQ(counts.requested, kCandidates);
  EXPECT_EQ(counts.measured, kCandidates - static_cast<int64_t>(before));
  EXPECT_EQ(counts.reused, static_cast<int64_t>(before));

  // Every candidate was measured exactly once over the two runs.
  auto reopened = tuning::OpenSqliteDatabase(path);
  EXPECT_EQ(reopened->NumRecords(), static_cast<size_t>(kCandidates));
  for (const tuning::Workload& workload : reopened->Workloads()) {
    std::vector<std::string> targets = reopened->Targets(workload.hash);
    ASSERT_EQ(targets.size(), 1u) << workload.hash;
    EXPECT_EQ(reopened->Records(workload.hash, targets[0]).size(), 1u) << workload.hash;
  }
  // A third run measures nothing and picks the same module.
  ir::IRModule again;
  counts = Tune(std::move(reopened), &again);
  EXPECT_EQ(counts.measured, 0);
  EXPECT_TRUE(ir::StructuralEqual(again, resumed));
}

// Budgets that resume: the killed run's job kept its spent trials with its records, so the same
// job run again measures only the rest of the budget, and the two runs together measure no more
// than one uninterrupted run (which measures the whole budget: 40 of the 64 candidates).
TEST_F(TuningResume, KilledJobSpendsOnlyTheRestOfItsBudget) {
  constexpr int64_t kBudget = 40;
  std::string path = (fs::path(directory_) / "tuning.db").string();
  ASSERT_TRUE(TuneAndKill(path, "job", kBudget))
      << "the tuning child finished before it was killed";

  auto database = tuning::OpenSqliteDatabase(path);
  auto before = static_cast<int64_t>(database->NumRecords());
  ASSERT_GE(before, 8);
  ASSERT_LT(before, kBudget);
  // Every committed measurement was charged to the job, in the transaction of its record.
  EXPECT_EQ(database->JobSpent("job"), before);
  int64_t resumed = -1;
  tuning::EvaluationCounts counts = Tune(std::move(database), nullptr, "job", kBudget, &resumed);
  EXPECT_EQ(resumed, before);
  EXPECT_EQ(counts.measured, kBudget - before);
  EXPECT_EQ(counts.reused, before);

  auto reopened = tuning::OpenSqliteDatabase(path);
  EXPECT_EQ(reopened->JobSpent("job"), kBudget);
  EXPECT_EQ(reopened->NumRecords(), static_cast<size_t>(kBudget));
  // Spent: the same job again measures nothing.
  counts = Tune(std::move(reopened), nullptr, "job", kBudget, &resumed);
  EXPECT_EQ(resumed, kBudget);
  EXPECT_EQ(counts.measured, 0);
}

}  // namespace
}  // namespace tandem
