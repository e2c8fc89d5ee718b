// The tuning database contract, run on both implementations (in-memory and SQLite).
#include "tuning/database/database.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <thread>

#include "ir/error.h"

namespace tandem::tuning {
namespace {

namespace fs = std::filesystem;

Workload MakeWorkload(const std::string& hash, const std::string& text = "kernel @k() {}") {
  return Workload{hash, "kernel", text};
}

TuningRecord MakeRecord(const std::string& workload, const std::string& target,
                        const std::string& candidate, std::vector<double> runs,
                        const std::string& error = "") {
  TuningRecord record;
  record.workload_hash = workload;
  record.target = target;
  record.candidate_hash = candidate;
  record.trace_json =
      R"({"decisions":[{"knob":"tile","value":)" + std::to_string(runs.size()) + "}]}";
  record.run_seconds = std::move(runs);
  record.error = error;
  record.measured_at = "2026-11-22T05:40:00Z";
  record.measured_by = R"({"runner":"local","repeats":3})";
  return record;
}

std::vector<std::string> Candidates(const std::vector<TuningRecord>& records) {
  std::vector<std::string> result;
  for (const TuningRecord& record : records) result.push_back(record.candidate_hash);
  return result;
}

class DatabaseTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tandem_db_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    db_ = Open();
  }
  void TearDown() override {
    db_.reset();
    fs::remove_all(directory_);
  }
  // A new, empty database of the implementation under test.
  std::unique_ptr<Database> Open() {
    if (GetParam() == "memory") return MakeInMemoryDatabase();
    return OpenSqliteDatabase(
        (directory_ / ("db" + std::to_string(opened_++) + ".sqlite")).string());
  }
  // Two workloads, records on two targets, failures and a repeated candidate.
  void Populate(Database& db) {
    db.CommitWorkload(MakeWorkload("00000000000000aa", "kernel @a() {\n  ret\n}"));
    db.CommitWorkload(Workload{"00000000000000bb", "graph", "graph @main(%x: f32[4]) { \"q\" }"});
    db.CommitRecord(MakeRecord("00000000000000aa", "t1", "c1", {0.1, 1.0 / 3.0, 2e-7}));
    db.CommitRecord(MakeRecord("00000000000000aa", "t2", "c1", {5e-324, 1e300}));
    db.CommitRecord(MakeRecord("00000000000000aa", "t1", "c2", {}, "crashed: signal 11"));
    db.CommitRecord(MakeRecord("00000000000000bb", "t1", "", {0.25}));
    db.CommitRecord(MakeRecord("00000000000000aa", "t1", "c1", {0.05}));
  }

  fs::path directory_;
  int opened_ = 0;
  std::unique_ptr<Database> db_;
};

TEST_P(DatabaseTest, CommitWorkloadIsIdempotent) {
  db_->CommitWorkload(MakeWorkload("0000000000000002", "first"));
  db_->CommitWorkload(MakeWorkload("0000000000000001", "second"));
  db_->CommitWorkload(MakeWorkload("0000000000000002", "changed text is ignored"));
  std::vector<Workload> workloads = db_->Workloads();
  ASSERT_EQ(workloads.size(), 2u);
  EXPECT_EQ(workloads[0], MakeWorkload("0000000000000002", "first"));
  EXPECT_EQ(workloads[1], MakeWorkload("0000000000000001", "second"));
  EXPECT_EQ(db_->GetWorkload("0000000000000002")->text, "first");
  EXPECT_FALSE(db_->GetWorkload("0000000000000003").has_value());
}

TEST_P(DatabaseTest, RecordsRoundTripFieldByField) {
  db_->CommitWorkload(MakeWorkload("00000000000000aa"));
  TuningRecord record = MakeRecord("00000000000000aa", "llvm|cpu=x|schema=1", "c\"1\n", {});
  record.run_seconds = {0.1, 1.0 / 3.0, 5e-324, 1e300, 2.2250738585072014e-308, 0.0, 123456.789};
  record.trace_json = "{\"unicode\":\"\xce\xbb\",\"nul\":\"\\u0000\"}";
  record.measured_by = "{}";
  db_->CommitRecord(record);
  std::vector<TuningRecord> records = db_->Records("00000000000000aa", "llvm|cpu=x|schema=1");
  ASSERT_EQ(records.size(), 1u);
  const TuningRecord& back = records[0];
  EXPECT_EQ(back.workload_hash, record.workload_hash);
  EXPECT_EQ(back.target, record.target);
  EXPECT_EQ(back.candidate_hash, record.candidate_hash);
  EXPECT_EQ(back.trace_json, record.trace_json);
  ASSERT_EQ(back.run_seconds.size(), record.run_seconds.size());
  for (size_t i = 0; i < record.run_seconds.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(back.run_seconds[i]),
              std::bit_cast<uint64_t>(record.run_seconds[i]))
        << "run " << i;
  }
  EXPECT_EQ(back.error, record.error);
  EXPECT_EQ(back.measured_at, record.measured_at);
  EXPECT_EQ(back.measured_by, record.measured_by);
  EXPECT_EQ(db_->NumRecords(), 1u);

  TuningRecord failed = MakeRecord("00000000000000aa", "t", "c2", {}, "timed out after 30 s");
  db_->CommitRecord(failed);
  EXPECT_EQ(db_->Records("00000000000000aa", "t"), std::vector<TuningRecord>{failed});
}

TEST_P(DatabaseTest, CommitRecordNeedsItsWorkloadAndFiniteTimes) {
  EXPECT_THROW(db_->CommitRecord(MakeRecord("00000000000000aa", "t", "c", {1.0})), ir::Error);
  db_->CommitWorkload(MakeWorkload("00000000000000aa"));
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(db_->CommitRecord(MakeRecord("00000000000000aa", "t", "c", {1.0, nan})), ir::Error);
  EXPECT_EQ(db_->NumRecords(), 0u);
  db_->CommitRecord(MakeRecord("00000000000000aa", "t", "c", {1.0}));
  EXPECT_EQ(db_->NumRecords(), 1u);
}

TEST_P(DatabaseTest, FindRecordReturnsTheLatest) {
  db_->CommitWorkload(MakeWorkload("00000000000000aa"));
  db_->CommitRecord(MakeRecord("00000000000000aa", "t1", "a", {3.0}));
  db_->CommitRecord(MakeRecord("00000000000000aa", "t1", "b", {2.0}));
  db_->CommitRecord(MakeRecord("00000000000000aa", "t1", "a", {}, "wrong result"));
  db_->CommitRecord(MakeRecord("00000000000000aa", "t2", "a", {9.0}));
  std::optional<TuningRecord> found = db_->FindRecord("00000000000000aa", "t1", "a");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->error, "wrong result");
  EXPECT_EQ(db_->FindRecord("00000000000000aa", "t2", "a")->run_seconds, std::vector<double>{9.0});
  EXPECT_EQ(db_->FindRecord("00000000000000aa", "t1", "b")->run_seconds, std::vector<double>{2.0});
  EXPECT_FALSE(db_->FindRecord("00000000000000aa", "t1", "c").has_value());
  EXPECT_FALSE(db_->FindRecord("00000000000000aa", "t3", "a").has_value());
  EXPECT_FALSE(db_->FindRecord("00000000000000bb", "t1", "a").has_value());
}

TEST_P(DatabaseTest, BestOrdersByMedianAndSkipsFailures) {
  db_->CommitWorkload(MakeWorkload("00000000000000aa"));
  auto commit = [&](const std::string& candidate, std::vector<double> runs,
                    const std::string& error = "") {
    db_->CommitRecord(MakeRecord("00000000000000aa", "t", candidate, std::move(runs), error));
  };
  commit("median2", {3.0, 1.0, 2.0});
  commit("median5", {5.0});
  commit("crashed", {}, "crashed: signal 11 (SIGSEGV)");
  commit("median1", {0.5, 1.5});           // even count: mean of the middle two
  commit("wrong", {0.1}, "wrong result");  // has times but failed
  commit("median2-later", {2.0});          // ties with median2, committed later
  commit("no-runs", {});
  db_->CommitRecord(MakeRecord("00000000000000aa", "other", "fast", {0.001}));
  EXPECT_EQ(Candidates(db_->Best("00000000000000aa", "t", 10)),
            (std::vector<std::string>{"median1", "median2", "median2-later", "median5"}));
  EXPECT_EQ(Candidates(db_->Best("00000000000000aa", "t", 2)),
            (std::vector<std::string>{"median1", "median2"}));
  EXPECT_TRUE(db_->Best("00000000000000aa", "t", 0).empty());
  EXPECT_TRUE(db_->Best("00000000000000aa", "none", 5).empty());
  EXPECT_EQ(db_->Best("00000000000000aa", "t", 1)[0].median_seconds(), 1.0);
}

TEST_P(DatabaseTest, RecordsFilterByTarget) {
  Populate(*db_);
  EXPECT_EQ(Candidates(db_->Records("00000000000000aa", "t1")),
            (std::vector<std::string>{"c1", "c2", "c1"}));
  EXPECT_EQ(Candidates(db_->Records("00000000000000aa", "t2")), std::vector<std::string>{"c1"});
  EXPECT_EQ(Candidates(db_->Records("00000000000000bb", "t1")), std::vector<std::string>{""});
  EXPECT_TRUE(db_->Records("00000000000000bb", "t2").empty());
  EXPECT_EQ(db_->Targets("00000000000000aa"), (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(db_->Targets("00000000000000bb"), std::vector<std::string>{"t1"});
  EXPECT_TRUE(db_->Targets("00000000000000cc").empty());
  EXPECT_EQ(db_->NumRecords(), 5u);
}

TEST_P(DatabaseTest, Blobs) {
  EXPECT_FALSE(db_->GetBlob("cost_model").has_value());
  std::string bytes("\x00\x01\xff binary\x00", 11);
  db_->PutBlob("cost_model", bytes);
  db_->PutBlob("empty", "");
  EXPECT_EQ(db_->GetBlob("cost_model"), bytes);
  EXPECT_EQ(db_->GetBlob("empty"), std::string());
  db_->PutBlob("cost_model", "replaced");
  EXPECT_EQ(db_->GetBlob("cost_model"), std::string("replaced"));
}

TEST_P(DatabaseTest, JsonLinesExportImportReproducesEverything) {
  Populate(*db_);
  std::ostringstream exported;
  db_->ExportJsonLines(exported);
  std::string text = exported.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7);  // 2 workloads, 5 records

  std::unique_ptr<Database> copy = Open();
  std::istringstream in(text);
  EXPECT_EQ(copy->ImportJsonLines(in), 7u);
  EXPECT_EQ(copy->Workloads(), db_->Workloads());
  EXPECT_EQ(copy->NumRecords(), db_->NumRecords());
  for (const Workload& workload : db_->Workloads()) {
    EXPECT_EQ(copy->Targets(workload.hash), db_->Targets(workload.hash));
    for (const std::string& target : db_->Targets(workload.hash)) {
      EXPECT_EQ(copy->Records(workload.hash, target), db_->Records(workload.hash, target));
    }
  }
  std::ostringstream again;
  copy->ExportJsonLines(again);
  EXPECT_EQ(again.str(), text);

  std::istringstream twice(text);
  EXPECT_EQ(copy->ImportJsonLines(twice), 0u);
  EXPECT_EQ(copy->NumRecords(), 5u);
  // A record that differs in one field only is new.
  TuningRecord changed = db_->Records("00000000000000bb", "t1")[0];
  changed.measured_at = "2027-01-01T00:00:00Z";
  db_->CommitRecord(changed);
  std::ostringstream more;
  db_->ExportJsonLines(more);
  std::istringstream more_in(more.str());
  EXPECT_EQ(copy->ImportJsonLines(more_in), 1u);
  EXPECT_EQ(copy->NumRecords(), 6u);
}

TEST_P(DatabaseTest, MalformedLineIsAnErrorNamingIt) {
  std::string lines =
      R"({"type":"workload","hash":"00000000000000aa","kind":"kernel","text":"k"})"
      "\n\n" +
      std::string(R"({"type":"record","workload_hash":"00000000000000aa","target":"t",)") +
      R"("candidate_hash":"c","trace_json":"{}","run_seconds":[1.5],"error":"",)"
      R"("measured_at":"2026-11-22T05:40:00Z","measured_by":"{}"})"
      "\n{\"type\":\"record\", oops\n" +
      R"({"type":"workload","hash":"00000000000000bb","kind":"kernel","text":"k"})" + "\n";
  std::istringstream in(lines);
  try {
    db_->ImportJsonLines(in);
    FAIL() << "malformed line was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().line, 4);
    EXPECT_NE(std::string(e.what()).find("line 4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db_->Workloads().size(), 1u);  // the lines before it were imported, not after
  EXPECT_EQ(db_->NumRecords(), 1u);
  EXPECT_EQ(db_->Records("00000000000000aa", "t")[0].run_seconds, std::vector<double>{1.5});

  auto error_line = [&](const std::string& text) {
    std::istringstream bad(text);
    try {
      db_->ImportJsonLines(bad);
    } catch (const ir::Error& e) {
      return e.where().line;
    }
    return 0;
  };
  EXPECT_EQ(error_line("\n[1,2]\n"), 2);
  EXPECT_EQ(error_line(R"({"type":"blob"})"), 1);
  EXPECT_EQ(error_line(R"({"type":"workload","hash":"00000000000000cc","kind":"kernel"})"), 1);
  EXPECT_EQ(error_line(R"({"type":"record","workload_hash":"00000000000000dd","target":"t",)"
                       R"("candidate_hash":"c","trace_json":"{}","run_seconds":[1],"error":"",)"
                       R"("measured_at":"","measured_by":"{}"})"),
            1);  // its workload is not in the database
  // Nesting deeper than the JSON limit is rejected before parsing, at the bracket that passes it.
  std::istringstream deep("\n" + std::string(100000, '[') + "\n");
  try {
    db_->ImportJsonLines(deep);
    FAIL() << "deeply nested JSON was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.where().column, 257);
    EXPECT_NE(std::string(e.what()).find("JSON nested deeper than 256 levels"), std::string::npos)
        << e.what();
  }
}

TEST_P(DatabaseTest, ConcurrentCommitsFromThreads) {
  db_->CommitWorkload(MakeWorkload("00000000000000aa"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string candidate = std::to_string(t) + "/" + std::to_string(i);
        db_->CommitRecord(MakeRecord("00000000000000aa", "t", candidate, {1.0 + i}));
        EXPECT_TRUE(db_->FindRecord("00000000000000aa", "t", candidate).has_value());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(db_->NumRecords(), 100u);
  EXPECT_EQ(db_->Best("00000000000000aa", "t", 100).size(), 100u);
}

INSTANTIATE_TEST_SUITE_P(Implementations, DatabaseTest, ::testing::Values("memory", "sqlite"),
                         [](const auto& info) { return info.param; });

TEST(TuningRecordTest, MedianSeconds) {
  EXPECT_EQ(MakeRecord("w", "t", "c", {3.0, 1.0, 2.0}).median_seconds(), 2.0);
  EXPECT_EQ(MakeRecord("w", "t", "c", {4.0, 1.0, 2.0, 3.0}).median_seconds(), 2.5);
  EXPECT_EQ(MakeRecord("w", "t", "c", {7.0}).median_seconds(), 7.0);
  EXPECT_TRUE(std::isinf(MakeRecord("w", "t", "c", {}).median_seconds()));
  EXPECT_TRUE(std::isinf(MakeRecord("w", "t", "c", {1.0}, "wrong result").median_seconds()));
}

}  // namespace
}  // namespace tandem::tuning
