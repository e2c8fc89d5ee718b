// Records are served only to runs with the same key: the resolved target, the code generation
// version and the measurement options. A record of another code generation version is kept in
// the database but never served, so a codegen change re-measures instead of trusting old times.
#include <gtest/gtest.h>

#include <regex>

#include "backends/llvm/codegen.h"
#include "ir/structural.h"
#include "tests/common/mock_tuning.h"
#include "tuning/database/database.h"
#include "tuning/measure/builder.h"
#include "tuning/session/record_reuse.h"
#include "tuning/session/tuning_session.h"

namespace tandem {
namespace {

struct Session {
  std::shared_ptr<tuning::Database> database;
  std::shared_ptr<testing::MockRunner> runner;
  std::shared_ptr<tuning::TuningSession> session;
};

Session MakeSession(std::shared_ptr<tuning::Database> database,
                    tuning::MeasureOptions measure = {}) {
  Session s;
  s.database = std::move(database);
  s.runner = std::make_shared<testing::MockRunner>();
  tuning::TuningSession::Options options;
  options.measure = measure;
  s.session = std::make_shared<tuning::TuningSession>(
      ir::ParseTarget("llvm -cpu=x86-64-v3 -threads=2"), s.database,
      std::make_shared<tuning::LocalBuilder>(), s.runner, options);
  return s;
}

// `descriptor` with its code generation version replaced by `version`.
std::string WithCodegenVersion(const std::string& descriptor, int version) {
  return std::regex_replace(descriptor, std::regex("\\|codegen=[0-9]+"),
                            "|codegen=" + std::to_string(version));
}

TEST(RecordKey, StaleCodegenRecordsAreKeptButNotServed) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  ir::IRModule module = testing::MockModule();
  Session first = MakeSession(database);
  std::vector<tuning::MeasureResult> measured =
      first.session->EvaluateModules({{module, {}}}, "Test");
  ASSERT_TRUE(measured[0].ok()) << measured[0].error;
  ASSERT_EQ(first.runner->runs, 1);

  // The same record, rewritten as if an older code generator had made it.
  std::string hash = ir::HashToHex(ir::StructuralHash(module));
  std::string key = first.session->target_descriptor();
  std::string stale_key = WithCodegenVersion(key, backends::kCodegenVersion - 1);
  ASSERT_NE(stale_key, key);
  EXPECT_TRUE(tuning::IsStaleDescriptor(stale_key));
  EXPECT_FALSE(tuning::IsStaleDescriptor(key));
  std::shared_ptr<tuning::Database> old_database = tuning::MakeInMemoryDatabase();
  old_database->CommitWorkload(*database->GetWorkload(hash));
  for (tuning::TuningRecord record : database->Records(hash, key)) {
    record.target = stale_key;
    record.run_seconds = {1e-9};  // far faster than anything the runner reports
    old_database->CommitRecord(record);
  }

  // A run of this version measures again instead of taking the stale time; the stale record
  // stays in the database.
  Session second = MakeSession(old_database);
  std::vector<tuning::MeasureResult> again =
      second.session->EvaluateModules({{module, {}}}, "Test");
  ASSERT_TRUE(again[0].ok());
  EXPECT_EQ(second.runner->runs, 1);
  EXPECT_GT(again[0].median_seconds, 1e-6);
  EXPECT_EQ(old_database->Records(hash, stale_key).size(), 1u);
  EXPECT_EQ(old_database->Records(hash, key).size(), 1u);
}

TEST(RecordKey, OtherMeasurementOptionsMeasureAgain) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  ir::IRModule module = testing::MockModule();
  Session plain = MakeSession(database);
  plain.session->EvaluateModules({{module, {}}}, "Test");
  EXPECT_EQ(plain.runner->runs, 1);
  Session same = MakeSession(database);
  same.session->EvaluateModules({{module, {}}}, "Test");
  EXPECT_EQ(same.runner->runs, 0);  // served from the database
  tuning::MeasureOptions flushed;
  flushed.flush_cache = true;
  Session other = MakeSession(database, flushed);
  other.session->EvaluateModules({{module, {}}}, "Test");
  EXPECT_EQ(other.runner->runs, 1);
}

// A runner whose every candidate fails with `error` (a time-out, a wrong result, a crash).
class FailingRunner : public tuning::Runner {
 public:
  explicit FailingRunner(std::string error) : error_(std::move(error)) {}
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    runs += static_cast<int64_t>(inputs.size());
    return std::vector<tuning::MeasureResult>(inputs.size(),
                                              tuning::MeasureResult::Failure(error_));
  }
  int64_t runs = 0;

 private:
  std::string error_;
};

// Evaluates the mock module once with `runner` under `measure`; how many runs it took.
int64_t EvaluateWith(std::shared_ptr<tuning::Database> database,
                     std::shared_ptr<tuning::Runner> runner, tuning::MeasureOptions measure) {
  tuning::TuningSession::Options options;
  options.measure = measure;
  tuning::TuningSession session(ir::ParseTarget("llvm -cpu=x86-64-v3 -threads=2"), database,
                                std::make_shared<tuning::LocalBuilder>(), runner, options);
  session.EvaluateModules({{testing::MockModule(), {}}}, "Test");
  if (auto* failing = dynamic_cast<FailingRunner*>(runner.get())) return failing->runs;
  return static_cast<testing::MockRunner*>(runner.get())->runs;
}

TEST(RecordKey, ATimeOutIsMeasuredAgainUnderALongerTimeout) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  tuning::MeasureOptions short_timeout;
  short_timeout.timeout_seconds = 1;
  auto runner = std::make_shared<FailingRunner>("timed out after 1 s");
  EXPECT_EQ(EvaluateWith(database, runner, short_timeout), 1);
  EXPECT_EQ(EvaluateWith(database, runner, short_timeout), 1);  // the same timeout: reused
  tuning::MeasureOptions shorter = short_timeout;
  shorter.timeout_seconds = 0.5;
  EXPECT_EQ(EvaluateWith(database, runner, shorter), 1);  // would time out again: reused
  tuning::MeasureOptions longer = short_timeout;
  longer.timeout_seconds = 30;
  EXPECT_EQ(EvaluateWith(database, std::make_shared<testing::MockRunner>(), longer), 1);
  // The new success is the latest record and answers from now on.
  EXPECT_EQ(EvaluateWith(database, std::make_shared<testing::MockRunner>(), longer), 0);
}

TEST(RecordKey, AWrongResultIsMeasuredAgainUnderALooserTolerance) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  tuning::MeasureOptions strict;
  strict.tolerance = 1e-7;
  auto runner =
      std::make_shared<FailingRunner>("wrong result: relative error 3e-06 > 1e-07 on output 0");
  EXPECT_EQ(EvaluateWith(database, runner, strict), 1);
  EXPECT_EQ(EvaluateWith(database, runner, strict), 1);  // reused
  tuning::MeasureOptions loose;
  loose.tolerance = 1e-4;
  EXPECT_EQ(EvaluateWith(database, std::make_shared<testing::MockRunner>(), loose), 1);
  // A success under 1e-4 does not answer for a run that asks for 1e-7.
  EXPECT_EQ(EvaluateWith(database, std::make_shared<testing::MockRunner>(), strict), 1);
}

TEST(RecordKey, AFailureOfTheCandidateItselfIsReusedUnderAnyTimeoutAndTolerance) {
  std::shared_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  auto runner = std::make_shared<FailingRunner>("crashed: signal 11 (SIGSEGV)");
  EXPECT_EQ(EvaluateWith(database, runner, {}), 1);
  tuning::MeasureOptions other;
  other.timeout_seconds = 99;
  other.tolerance = 0.5;
  EXPECT_EQ(EvaluateWith(database, runner, other), 1);  // reused
}

TEST(RecordKey, RecordsThatDoNotSayTheirTimeoutOrToleranceAnswerOnlyAsSuccesses) {
  tuning::TuningRecord success;
  success.run_seconds = {1e-3};
  success.measured_by = R"({"runner":"graph","repeats":3})";
  tuning::TuningRecord timed_out = success;
  timed_out.run_seconds.clear();
  timed_out.error = "timed out after 30 s";
  tuning::TuningRecord wrong = timed_out;
  wrong.error = "wrong result: relative error 1 > 0.0001 on output 0";
  tuning::MeasureOptions options;
  EXPECT_TRUE(tuning::RecordAnswersUnder(success, options));
  EXPECT_FALSE(tuning::RecordAnswersUnder(timed_out, options));
  EXPECT_FALSE(tuning::RecordAnswersUnder(wrong, options));
  // Unreadable text answers the same way.
  for (tuning::TuningRecord* record : {&success, &timed_out, &wrong})
    record->measured_by = "[[1e400";
  EXPECT_TRUE(tuning::RecordAnswersUnder(success, options));
  EXPECT_FALSE(tuning::RecordAnswersUnder(timed_out, options));
  EXPECT_FALSE(tuning::RecordAnswersUnder(wrong, options));
  // What the session writes says both.
  timed_out.measured_by = tuning::MeasuredByJson("graph", options);
  EXPECT_TRUE(tuning::RecordAnswersUnder(timed_out, options));
}

}  // namespace
}  // namespace tandem
