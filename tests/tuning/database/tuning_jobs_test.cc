// Tuning jobs in the SQLite database: the spent count is durable, moves with its record in one
// transaction, and a file from before the tuning_jobs table opens (read-write: the table is
// created; read-only: no jobs, the file unchanged).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ir/error.h"
#include "tuning/database/database.h"

namespace tandem::tuning {
namespace {

namespace fs = std::filesystem;

const std::string kWorkload = "00000000000000aa";

TuningRecord Record(const std::string& workload, const std::string& candidate) {
  return {workload, "t", candidate, "{}", {1e-3}, "", "2026-01-01T00:00:00Z", "{}"};
}

void RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

class TuningJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tandem_tuning_jobs_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "tuning.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

TEST_F(TuningJobs, SpentCountIsDurableAndMovesWithItsRecord) {
  {
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
    EXPECT_EQ(db->JobSpent("job"), 0);
    db->CommitWorkload({kWorkload, "kernel", "k"});
    db->CommitChargedRecord(Record(kWorkload, "c1"), "job");
    db->CommitChargedRecord(Record(kWorkload, "c2"), "job");
    db->CommitRecord(Record(kWorkload, "c3"));  // not charged to any job
    // A record that cannot be committed counts nothing.
    EXPECT_THROW(db->CommitChargedRecord(Record("00000000000000bb", "c4"), "job"), ir::Error);
    EXPECT_EQ(db->JobSpent("job"), 2);
  }
  std::unique_ptr<Database> reopened = OpenSqliteDatabase(path_);
  EXPECT_EQ(reopened->JobSpent("job"), 2);
  EXPECT_EQ(reopened->NumRecords(), 3u);
  EXPECT_EQ(reopened->JobSpent("other"), 0);
  EXPECT_EQ(reopened->JobTrials("job"),
            (std::vector<std::string>{kWorkload + "/c1", kWorkload + "/c2"}));
  {
    std::unique_ptr<Database> read_only = OpenSqliteDatabase(path_, {.read_only = true});
    EXPECT_EQ(read_only->JobSpent("job"), 2);
    EXPECT_THROW(read_only->ResetJob("job"), ir::Error);
  }
  reopened->ResetJob("job");
  EXPECT_EQ(reopened->JobSpent("job"), 0);
  EXPECT_TRUE(reopened->JobTrials("job").empty());
  EXPECT_EQ(reopened->NumRecords(), 3u);  // the records stay
}

TEST_F(TuningJobs, DatabaseFromBeforeTheJobsTableOpens) {
  {
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
    db->CommitWorkload({kWorkload, "kernel", "k"});
    db->CommitRecord(Record(kWorkload, "c1"));
  }
  RawSql(path_, "DROP TABLE tuning_job_trials");
  {
    std::unique_ptr<Database> read_only = OpenSqliteDatabase(path_, {.read_only = true});
    EXPECT_EQ(read_only->JobSpent("job"), 0);
    EXPECT_TRUE(read_only->JobTrials("job").empty());
    EXPECT_EQ(read_only->NumRecords(), 1u);
  }
  std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
  EXPECT_EQ(db->JobSpent("job"), 0);
  db->CommitChargedRecord(Record(kWorkload, "c2"), "job");
  EXPECT_EQ(db->JobSpent("job"), 1);
  EXPECT_EQ(db->NumRecords(), 2u);
}

TEST_F(TuningJobs, InMemoryDatabaseBehavesAlike) {
  std::unique_ptr<Database> db = MakeInMemoryDatabase();
  db->CommitWorkload({kWorkload, "kernel", "k"});
  db->CommitChargedRecord(Record(kWorkload, "c1"), "job");
  EXPECT_THROW(db->CommitChargedRecord(Record("00000000000000bb", "c2"), "job"), ir::Error);
  EXPECT_EQ(db->JobSpent("job"), 1);
  db->CommitChargedRecord(Record(kWorkload, "c1"), "job");  // the same trial again
  EXPECT_EQ(db->JobTrials("job"), std::vector<std::string>{kWorkload + "/c1"});
  db->ResetJob("job");
  EXPECT_EQ(db->JobSpent("job"), 0);
}

}  // namespace
}  // namespace tandem::tuning
