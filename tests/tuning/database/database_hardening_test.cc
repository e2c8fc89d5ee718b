// Hostile databases: a stored record that does not decode (a number that overflows double in
// its trace) is skipped with a count by its readers and refused by import with its line number;
// a read-only open never changes the file and works without write permission; a database
// locked by another process is reported as locked, not as corrupt.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/kernel/kernel_parser.h"
#include "tuning/database/database.h"
#include "tuning/database/record_trace.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/search/task.h"
#include "tuning/session/tuning_run.h"

namespace tandem::tuning {
namespace {

namespace fs = std::filesystem;

constexpr char kOverflowingTrace[] =
    R"({"version":1,"instructions":[{"kind":"Split","inputs":[],"attrs":{"n":{"f":1e400}}}]})";

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class DatabaseHardening : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tandem_db_hardening_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "tuning.db").string();
  }
  void TearDown() override {
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  void Fill() {
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_);
    db->CommitWorkload({"00000000000000aa", "kernel", "k"});
    db->CommitRecord(
        {"00000000000000aa", "t", "c1", "{}", {1e-3}, "", "2026-01-01T00:00:00Z", "{}"});
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(DatabaseHardening, ReadOnlyOpenNeverChangesTheFile) {
  Fill();
  std::string before = ReadBytes(path_);
  auto mtime = fs::last_write_time(path_);
  {
    std::unique_ptr<Database> db = OpenSqliteDatabase(path_, {.read_only = true});
    EXPECT_EQ(db->Workloads().size(), 1u);
    EXPECT_EQ(db->Records("00000000000000aa", "t").size(), 1u);
    std::ostringstream out;
    db->ExportJsonLines(out);
    EXPECT_NE(out.str().find("c1"), std::string::npos);
    EXPECT_THROW(db->CommitWorkload({"00000000000000bb", "kernel", "k"}), ir::Error);
  }
  EXPECT_EQ(ReadBytes(path_), before);
  EXPECT_EQ(fs::last_write_time(path_), mtime);
}

TEST_F(DatabaseHardening, ReadOnlyOpenWorksWithoutWritePermission) {
  Fill();
  fs::permissions(path_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  std::unique_ptr<Database> db = OpenSqliteDatabase(path_, {.read_only = true});
  EXPECT_EQ(db->NumRecords(), 1u);
  std::ostringstream out;
  db->ExportJsonLines(out);
  EXPECT_NE(out.str().find("00000000000000aa"), std::string::npos);
}

TEST_F(DatabaseHardening, ALockedDatabaseIsReportedAsLocked) {
  Fill();
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  for (bool read_only : {false, true}) {
    try {
      OpenSqliteDatabase(path_, {.read_only = read_only, .busy_timeout_milliseconds = 50});
      ADD_FAILURE() << "opened a locked database";
    } catch (const ir::Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("the database is locked by another process"), std::string::npos)
          << message;
      EXPECT_EQ(message.find("corrupt"), std::string::npos) << message;
      EXPECT_NE(message.find(path_), std::string::npos) << message;
    }
  }
  sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
}

TEST(RecordDecoding, AnOverflowingNumberIsAnErrorNamingTheRecord) {
  TuningRecord record{"00000000000000aa", "t", "c1", kOverflowingTrace, {}, "x", "", "{}"};
  try {
    DecodeRecordTrace(record);
    FAIL() << "decoded";
  } catch (const ir::Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("record of workload 00000000000000aa, candidate c1"), std::string::npos)
        << message;
    EXPECT_NE(message.find("does not decode"), std::string::npos) << message;
  }
}

TEST(RecordDecoding, ImportNamesTheLineOfABadRecord) {
  std::unique_ptr<Database> db = MakeInMemoryDatabase();
  std::string workload =
      R"({"type":"workload","hash":"00000000000000aa","kind":"kernel","text":"k"})";
  std::string record =
      R"({"type":"record","workload_hash":"00000000000000aa","target":"t","candidate_hash":"c",)"
      R"("trace_json":"{}","run_seconds":[1e400],"error":"","measured_at":"","measured_by":"{}"})";
  std::istringstream in(workload + "\n" + record + "\n");
  try {
    db->ImportJsonLines(in);
    FAIL() << "imported";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().line, 2) << e.what();
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
  // A record whose trace holds the overflowing number (escaped in the line).
  std::string escaped = R"({\"version\":1,\"instructions\":[{\"kind\":\"S\",\"inputs\":[],)"
                        R"(\"attrs\":{\"n\":{\"f\":1e400}}}]})";
  std::string tampered =
      R"({"type":"record","workload_hash":"00000000000000aa","target":"t","candidate_hash":"c",)"
      R"("trace_json":")" +
      escaped + R"(","run_seconds":[0.001],"error":"","measured_at":"","measured_by":"{}"})";
  std::istringstream second(workload + "\n\n" + tampered + "\n");
  try {
    db->ImportJsonLines(second);
    FAIL() << "imported";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().line, 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("its trace is not valid JSON"), std::string::npos)
        << e.what();
  }
}

TEST(RecordDecoding, HistoryBestSkipsAndCountsARecordThatDoesNotDecode) {
  ir::KernelFunction kernel = ir::ParseKernel(R"(
    kernel @double(%a: f32[4]) -> (%b: f32[4]) {
      for %i in 4 {
        %b[%i] = %a[%i] * 2.0
      }
    })");
  std::string hash = KernelWorkloadHash(kernel);
  std::shared_ptr<Database> db = MakeInMemoryDatabase();
  db->CommitWorkload({hash, "kernel", "k"});
  db->CommitRecord({hash, "t", "bad", kOverflowingTrace, {1e-6}, "", "", "{}"});
  auto stats = std::make_shared<HistoryBestStats>();
  kernels::ScheduleProvider provider =
      HistoryBestProvider(db, "t", kernels::DefaultCpuSearchSpace({}), stats);
  EXPECT_FALSE(provider(kernel));  // the default schedule, not an abort
  EXPECT_EQ(stats->undecodable.size(), 1u);
  EXPECT_NE(NotReplayedNote(*stats).find("1 stored records do not decode"), std::string::npos)
      << NotReplayedNote(*stats);
}

TEST(RecordDecoding, AStoredTuningRunThatDoesNotDecodeIsSkipped) {
  std::unique_ptr<Database> db = MakeInMemoryDatabase();
  TuningRun run;
  run.model = "m";
  run.model_hash = "00000000000000cc";
  run.pipeline = "p";
  run.target = "t";
  run.after_seconds = {1e-3};
  CommitTuningRun(*db, run);
  std::string key = TuningRunKey(run.model_hash, run.pipeline);
  TuningRecord tampered = db->Records(key, "t").back();
  tampered.trace_json = kOverflowingTrace;
  db->CommitRecord(tampered);
  std::vector<std::string> skipped;
  std::optional<TuningRun> latest = LatestTuningRun(*db, run.model_hash, "p", "t", &skipped);
  ASSERT_TRUE(latest);  // the earlier run that decodes
  EXPECT_EQ(skipped.size(), 1u);
  skipped.clear();
  EXPECT_EQ(TuningRuns(*db, &skipped).size(), 1u);
  EXPECT_EQ(skipped.size(), 1u);
}

}  // namespace
}  // namespace tandem::tuning
