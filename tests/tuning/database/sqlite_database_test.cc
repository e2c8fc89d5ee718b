// What only the SQLite tuning database promises: persistence across opens, refusal of foreign,
// corrupt and newer files, and durability of every returned commit when the process is killed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/error.h"
#include "tuning/database/database.h"

namespace tandem::tuning {
namespace {

namespace fs = std::filesystem;

const std::string kWorkload = "0123456789abcdef";

TuningRecord MakeRecord(const std::string& candidate, double seconds) {
  TuningRecord record;
  record.workload_hash = kWorkload;
  record.target = "llvm|schema=1";
  record.candidate_hash = candidate;
  record.trace_json = "{}";
  record.run_seconds = {seconds, seconds * 2};
  record.measured_at = "2026-11-22T05:40:00Z";
  record.measured_by = "{}";
  return record;
}

// Runs SQL on the file directly and returns the first column of the first row ("" if none).
std::string RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  std::string result;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK &&
      sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
    result = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return result;
}

class SqliteDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tandem_sqlite_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    path_ = (directory_ / "tuning.db").string();
  }
  void TearDown() override { fs::remove_all(directory_); }

  void WriteFile(const std::string& bytes) { std::ofstream(path_, std::ios::binary) << bytes; }
  // The message of the Error that opening the file throws ("" when it opens).
  std::string OpenError() {
    try {
      OpenSqliteDatabase(path_);
    } catch (const ir::Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path directory_;
  std::string path_;
};

TEST_F(SqliteDatabaseTest, ReopenSeesTheSameData) {
  std::string exported;
  {
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
    db->CommitWorkload(Workload{kWorkload, "graph", "graph @main() {}"});
    db->CommitRecord(MakeRecord("a", 0.5));
    db->CommitRecord(MakeRecord("b", 0.25));
    db->PutBlob("cost_model", std::string("\0\1\2", 3));
    // A second connection to the same file sees the first one's commits.
    std::unique_ptr<Database> other = OpenSqliteDatabase(path_);
    EXPECT_EQ(other->NumRecords(), 2u);
    other->CommitRecord(MakeRecord("c", 1.0));
    EXPECT_EQ(db->NumRecords(), 3u);
    std::ostringstream out;
    db->ExportJsonLines(out);
    exported = out.str();
  }
  std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
  std::ostringstream out;
  db->ExportJsonLines(out);
  EXPECT_EQ(out.str(), exported);
  EXPECT_EQ(db->NumRecords(), 3u);
  EXPECT_EQ(db->Best(kWorkload, "llvm|schema=1", 1)[0].candidate_hash, "b");
  EXPECT_EQ(db->GetBlob("cost_model"), std::string("\0\1\2", 3));
  EXPECT_EQ(RawSql(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawSql(path_, "SELECT value FROM tandem_meta WHERE key = 'schema_version'"), "1");
}

TEST_F(SqliteDatabaseTest, EmptyFileBecomesADatabase) {
  WriteFile("");
  std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
  db->CommitWorkload(Workload{kWorkload, "kernel", "k"});
  EXPECT_EQ(db->Workloads().size(), 1u);
}

TEST_F(SqliteDatabaseTest, GarbageFileIsAClearError) {
  std::mt19937 random(7);
  std::string bytes(8192, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  WriteFile(bytes);
  std::string error = OpenError();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("not a SQLite file"), std::string::npos) << error;

  // A valid header followed by garbage.
  WriteFile(std::string("SQLite format 3\0", 16) + bytes);
  error = OpenError();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
}

TEST_F(SqliteDatabaseTest, CorruptPagesNeverCrash) {
  {
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
    db->CommitWorkload(Workload{kWorkload, "kernel", std::string(20000, 'k')});
    for (int i = 0; i < 300; ++i) db->CommitRecord(MakeRecord(std::to_string(i) + "c", i + 1.0));
  }
  ASSERT_FALSE(fs::exists(path_ + "-wal") && fs::file_size(path_ + "-wal") > 0);
  std::string bytes;
  {
    std::ifstream in(path_, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 16384u);
  std::mt19937 random(11);
  for (size_t i = 4096; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(random());
  WriteFile(bytes);
  // Either refused at open or an Error on use; the process must survive either way.
  try {
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
    std::ostringstream out;
    db->ExportJsonLines(out);
    db->NumRecords();
    db->Best(kWorkload, "llvm|schema=1", 5);
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
  }
}

TEST_F(SqliteDatabaseTest, NewerSchemaIsRefused) {
  OpenSqliteDatabase(path_);
  RawSql(path_, "UPDATE tandem_meta SET value = '2' WHERE key = 'schema_version'");
  std::string error = OpenError();
  EXPECT_NE(error.find("newer"), std::string::npos) << error;
  EXPECT_NE(error.find("schema 2, this build reads 1"), std::string::npos) << error;
  EXPECT_NE(error.find(path_), std::string::npos) << error;
}

TEST_F(SqliteDatabaseTest, ForeignSqliteFileIsRefusedAndLeftAlone) {
  RawSql(path_, "CREATE TABLE people(name TEXT)");
  std::string error = OpenError();
  EXPECT_NE(error.find("not a Tandem tuning database"), std::string::npos) << error;
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_EQ(RawSql(path_, "SELECT COUNT(*) FROM sqlite_master"), "1");
}

TEST_F(SqliteDatabaseTest, MissingDirectoryIsAnError) {
  path_ = (directory_ / "no" / "such" / "dir.db").string();
  std::string error = OpenError();
  EXPECT_NE(error.find(path_), std::string::npos) << error;
}

// A child process commits records in a loop and reports each returned commit through a pipe;
// the parent kills it with SIGKILL at an arbitrary point. Every reported record must survive
// and the file must be intact. Three rounds, so later rounds recover a file left mid-write.
TEST_F(SqliteDatabaseTest, KilledWriterLosesNoReturnedCommit) {
  OpenSqliteDatabase(path_)->CommitWorkload(Workload{kWorkload, "kernel", "k"});
  const int kill_after[] = {20, 150, 400};
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      try {
        std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
        for (int i = 1;; ++i) {
          db->CommitRecord(MakeRecord(std::to_string(round) + "/" + std::to_string(i), i));
          if (write(fds[1], &i, sizeof(i)) != sizeof(i)) _exit(3);
        }
      } catch (...) {
        _exit(2);
      }
    }
    close(fds[1]);
    int reported = 0, value = 0;
    while (reported < kill_after[round] && read(fds[0], &value, sizeof(value)) == sizeof(value)) {
      reported = value;
    }
    kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    while (read(fds[0], &value, sizeof(value)) == sizeof(value)) reported = value;
    close(fds[0]);
    ASSERT_GE(reported, kill_after[round]);

    EXPECT_EQ(RawSql(path_, "PRAGMA integrity_check"), "ok");
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
    for (int i = 1; i <= reported; ++i) {
      std::string candidate = std::to_string(round) + "/" + std::to_string(i);
      std::optional<TuningRecord> found = db->FindRecord(kWorkload, "llvm|schema=1", candidate);
      ASSERT_TRUE(found.has_value()) << "round " << round << " lost committed record " << i;
      EXPECT_EQ(*found, MakeRecord(candidate, i));
    }
  }
}

}  // namespace
}  // namespace tandem::tuning
