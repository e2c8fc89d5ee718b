// Measurement options are validated before anything runs (each error names the option and its
// rule), a failure of the measuring setup is a run error that commits nothing (the candidates
// measured with bad options or without a worker are not recorded as failed), and records are
// only reused under the measurement options they were taken with.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "ir/error.h"
#include "tests/common/mock_tuning.h"
#include "tuning/database/database.h"
#include "tuning/measure/builder.h"
#include "tuning/measure/measure.h"
#include "tuning/measure/runner.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tuning {
namespace {

std::string ProblemOf(void (*change)(MeasureOptions&)) {
  MeasureOptions options;
  change(options);
  return MeasureOptionsProblem(options).value_or("");
}

TEST(MeasureOptions, EachInvalidOptionIsNamedWithItsRule) {
  EXPECT_FALSE(MeasureOptionsProblem(MeasureOptions{}));
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.repeats = 0; }), "repeats is 0 (must be >= 1)");
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.warmup_runs = -1; }),
            "warmup_runs is -1 (must be >= 0)");
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.timeout_seconds = 0; }),
            "timeout_seconds is 0 (must be a finite number > 0)");
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.min_repeat_seconds = -0.005; }),
            "min_repeat_seconds is -0.005 (must be a finite number >= 0)");
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.num_threads = -2; }),
            "num_threads is -2 (must be in [0, 4095])");
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.tolerance = -1; }),
            "tolerance is -1 (must be a finite number > 0)");
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.tolerance = std::nan(""); }),
            "tolerance is nan (must be a finite number > 0)");
  EXPECT_EQ(ProblemOf([](MeasureOptions& o) { o.timeout_seconds = INFINITY; }),
            "timeout_seconds is inf (must be a finite number > 0)");
  MeasureOptions bad;
  bad.repeats = 0;
  EXPECT_THROW(ValidateMeasureOptions(bad), ir::Error);
}

std::shared_ptr<TuningSession> SessionWith(std::shared_ptr<Database> database,
                                           std::shared_ptr<Runner> runner,
                                           MeasureOptions measure = {}) {
  TuningSession::Options options;
  options.measure = measure;
  return std::make_shared<TuningSession>(ir::ParseTarget("llvm -threads=1"), std::move(database),
                                         std::make_shared<LocalBuilder>(1), std::move(runner),
                                         options);
}

TEST(MeasureOptions, ASessionRefusesInvalidOptionsBeforeMeasuring) {
  MeasureOptions measure;
  measure.repeats = 0;
  try {
    SessionWith(MakeInMemoryDatabase(), std::make_shared<testing::MockRunner>(), measure);
    FAIL() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("repeats is 0 (must be >= 1)"), std::string::npos)
        << e.what();
  }
}

// A runner whose worker processes cannot be started.
class NoWorkerRunner : public Runner {
 public:
  std::vector<MeasureResult> Run(const std::vector<RunInput>& inputs,
                                 const MeasureOptions&) override {
    return std::vector<MeasureResult>(
        inputs.size(), MeasureResult::SetupFailure("cannot start a worker process: fork: EAGAIN"));
  }
};

TEST(MeasureOptions, ASetupFailureIsARunErrorAndIsNeverCommitted) {
  std::shared_ptr<Database> database = MakeInMemoryDatabase();
  auto session = SessionWith(database, std::make_shared<NoWorkerRunner>());
  ir::IRModule module = testing::MockModule();
  try {
    session->EvaluateModules({{module, ir::Trace()}}, "pass");
    FAIL() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start a worker process"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(database->NumRecords(), 0u);
  // A later run that can measure measures the candidate (nothing stale is reused).
  auto runner = std::make_shared<testing::MockRunner>();
  auto good = SessionWith(database, runner);
  std::vector<MeasureResult> results = good->EvaluateModules({{module, ir::Trace()}}, "pass");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].error;
  EXPECT_EQ(runner->runs, 1);
}

TEST(MeasureOptions, TheProcessRunnerReportsInvalidOptionsAsSetupFailures) {
  ir::IRModule module = testing::MockModule();
  BuildOutput built = LocalBuilder(1).Build({{module, {}}})[0];
  ASSERT_TRUE(built.ok()) << built.error;
  MeasureOptions measure;
  measure.timeout_seconds = 0;
  ProcessRunner runner;
  std::vector<MeasureResult> results = runner.Run({{built.executable, {}, {}}}, measure);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].setup_failure);
  EXPECT_NE(results[0].error.find("timeout_seconds is 0"), std::string::npos) << results[0].error;
  measure = MeasureOptions{};
  measure.repeats = 0;
  results = InProcessRunner().Run({{built.executable, {}, {}}}, measure);
  EXPECT_TRUE(results[0].setup_failure);
}

TEST(MeasureOptions, RecordsAreReusedOnlyUnderTheSameMeasureOptions) {
  ir::Target target = ir::ParseTarget("llvm -threads=1");
  MeasureOptions five, three;
  three.repeats = 3;
  EXPECT_NE(RecordKey(target, five), RecordKey(target, three));
  MeasureOptions warm = five;
  warm.warmup_runs = 4;
  EXPECT_NE(RecordKey(target, five), RecordKey(target, warm));

  std::shared_ptr<Database> database = MakeInMemoryDatabase();
  ir::IRModule module = testing::MockModule();
  auto first = std::make_shared<testing::MockRunner>();
  SessionWith(database, first, five)->EvaluateModules({{module, ir::Trace()}}, "pass");
  EXPECT_EQ(first->runs, 1);
  auto same = std::make_shared<testing::MockRunner>();
  SessionWith(database, same, five)->EvaluateModules({{module, ir::Trace()}}, "pass");
  EXPECT_EQ(same->runs, 0);  // reused
  auto other = std::make_shared<testing::MockRunner>();
  SessionWith(database, other, three)->EvaluateModules({{module, ir::Trace()}}, "pass");
  EXPECT_EQ(other->runs, 1);  // measured again: other options
}

}  // namespace
}  // namespace tandem::tuning
