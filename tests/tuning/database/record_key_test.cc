// Records are served only to runs with the same key: the resolved target, the code generation
// version and the measurement options. A record of another code generation version is kept in
// the database but never served, so a codegen change re-measures instead of trusting old times.
#include <gtest/gtest.h>

#include <regex>

#include "backends/llvm/codegen.h"
#include "ir/structural.h"
#include "tests/common/mock_tuning.h"
#include "tuning/measure/builder.h"
#include "tuning/database/database.h"
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

}  // namespace
}  // namespace tandem
