// The SQLite tuning database: one file in WAL mode (a read-only connection leaves the file as it
// is). Every commit is its own transaction, so it
// is durable once the call returns and a process killed at any point leaves a consistent file.
// One connection per object, guarded by a mutex, so the object can be shared between threads;
// several processes may open the same file (SQLite's locking and the busy timeout serialize
// their writes).
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/error.h"
#include "tuning/database/database.h"
#include "tuning/database/database_internal.h"

namespace tandem::tuning {
namespace {

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE IF NOT EXISTS tandem_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workloads(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workload_hash TEXT NOT NULL REFERENCES workloads(hash),
  target TEXT NOT NULL,
  candidate_hash TEXT NOT NULL,
  trace_json TEXT NOT NULL,
  run_seconds TEXT NOT NULL,
  median_seconds REAL,
  error TEXT NOT NULL,
  measured_at TEXT NOT NULL,
  measured_by TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_target ON records(workload_hash, target, median_seconds);
CREATE INDEX IF NOT EXISTS records_by_candidate ON records(workload_hash, target, candidate_hash);
CREATE TABLE IF NOT EXISTS blobs(name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS tuning_job_trials(job TEXT NOT NULL, trial TEXT NOT NULL,
  PRIMARY KEY(job, trial));
)sql";
// tuning_job_trials came after schema 1 without changing what any stored field means: a file
// without it is created the table when opened for writing, and read-only it reads as holding no
// jobs.

constexpr const char* kRecordColumns =
    "workload_hash, target, candidate_hash, trace_json, run_seconds, error, measured_at, "
    "measured_by";

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, const SqliteOpenOptions& options)
      : path_(std::move(path)), options_(options) {
    int mode =
        options_.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int status = sqlite3_open_v2(path_.c_str(), &db_, mode | SQLITE_OPEN_NOMUTEX, nullptr);
    if (status != SQLITE_OK) {
      std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(status);
      sqlite3_close_v2(db_);
      throw Error(fmt::format("cannot open the tuning database: {}", message), {.file = path_});
    }
    try {
      sqlite3_extended_result_codes(db_, 1);
      sqlite3_busy_timeout(db_, std::max(options_.busy_timeout_milliseconds, 0));
      bool exists = CheckExistingSchema();
      if (options_.read_only) {
        if (!exists) {
          throw Error("not a Tandem tuning database: the file holds no tables", {.file = path_});
        }
        PrepareStatements();
        return;
      }
      Exec("PRAGMA journal_mode=WAL", "setting WAL journal mode");
      Exec("PRAGMA synchronous=NORMAL", "setting synchronous=NORMAL");
      Exec("BEGIN IMMEDIATE", "creating the schema");
      try {
        Exec(kCreateSchema, "creating the schema");
        Exec(fmt::format("INSERT OR IGNORE INTO tandem_meta(key, value) "
                         "VALUES('schema_version', '{}')",
                         kDatabaseSchemaVersion),
             "writing the schema version");
        Exec("COMMIT", "creating the schema");
      } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
      }
      PrepareStatements();
    } catch (...) {
      Close();
      throw;
    }
  }

  ~SqliteDatabase() override { Close(); }

  void CommitWorkload(const Workload& workload) override {
    CheckWritable("committing a workload");
    std::lock_guard lock(mutex_);
    Statement& s = insert_workload_;
    Bind(s, 1, workload.hash);
    Bind(s, 2, workload.kind);
    Bind(s, 3, workload.text);
    RunToEnd(s, "committing a workload");
  }

  std::optional<Workload> GetWorkload(const std::string& hash) const override {
    std::lock_guard lock(mutex_);
    Statement& s = get_workload_;
    Bind(s, 1, hash);
    std::optional<Workload> result;
    if (Step(s, "reading a workload")) result = Workload{Text(s, 0), Text(s, 1), Text(s, 2)};
    Reset(s);
    return result;
  }

  std::vector<Workload> Workloads() const override {
    std::lock_guard lock(mutex_);
    Statement& s = all_workloads_;
    std::vector<Workload> result;
    while (Step(s, "reading the workloads")) result.push_back({Text(s, 0), Text(s, 1), Text(s, 2)});
    Reset(s);
    return result;
  }

  void CommitRecord(const TuningRecord& record) override {
    internal::CheckRecordFields(record);
    CheckWritable("committing a record");
    std::lock_guard lock(mutex_);
    InsertRecord(record);
  }

  void CommitChargedRecord(const TuningRecord& record, const std::string& job) override {
    internal::CheckRecordFields(record);
    CheckWritable("committing a record");
    std::lock_guard lock(mutex_);
    Exec("BEGIN IMMEDIATE", "committing a record");
    try {
      InsertRecord(record);
      Bind(add_job_trial_, 1, job);
      Bind(add_job_trial_, 2, JobTrialName(record.workload_hash, record.candidate_hash));
      RunToEnd(add_job_trial_, "counting a trial of a tuning job");
      Exec("COMMIT", "committing a record");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  int64_t JobSpent(const std::string& job) const override {
    std::lock_guard lock(mutex_);
    if (job_spent_.get() == nullptr) return 0;  // read-only file from before tuning_job_trials
    Bind(job_spent_, 1, job);
    Step(job_spent_, "reading a tuning job");
    int64_t spent = sqlite3_column_int64(job_spent_.get(), 0);
    Reset(job_spent_);
    return spent;
  }

  std::vector<std::string> JobTrials(const std::string& job) const override {
    std::lock_guard lock(mutex_);
    std::vector<std::string> trials;
    if (job_trials_.get() == nullptr) return trials;
    Bind(job_trials_, 1, job);
    while (Step(job_trials_, "reading a tuning job")) trials.push_back(Text(job_trials_, 0));
    Reset(job_trials_);
    return trials;
  }

  void ResetJob(const std::string& job) override {
    CheckWritable("resetting a tuning job");
    std::lock_guard lock(mutex_);
    Bind(reset_job_, 1, job);
    RunToEnd(reset_job_, "resetting a tuning job");
  }

 private:
  // Appends a record; the caller holds mutex_.
  void InsertRecord(const TuningRecord& record) {
    Statement& exists = workload_exists_;
    Bind(exists, 1, record.workload_hash);
    bool found = Step(exists, "looking up the workload of a record");
    Reset(exists);
    if (!found) internal::ThrowMissingWorkload(record.workload_hash);

    Statement& s = insert_record_;
    Bind(s, 1, record.workload_hash);
    Bind(s, 2, record.target);
    Bind(s, 3, record.candidate_hash);
    Bind(s, 4, record.trace_json);
    Bind(s, 5, nlohmann::json(record.run_seconds).dump());
    if (record.ok()) {
      Check(s, sqlite3_bind_double(s.get(), 6, record.median_seconds()), "binding a value");
    }
    Bind(s, 7, record.error);
    Bind(s, 8, record.measured_at);
    Bind(s, 9, record.measured_by);
    RunToEnd(s, "committing a record");
  }

 public:
  std::vector<TuningRecord> Records(const std::string& workload_hash,
                                    const std::string& target) const override {
    std::lock_guard lock(mutex_);
    Bind(records_, 1, workload_hash);
    Bind(records_, 2, target);
    return ReadRecords(records_);
  }

  std::optional<TuningRecord> FindRecord(const std::string& workload_hash,
                                         const std::string& target,
                                         const std::string& candidate_hash) const override {
    std::lock_guard lock(mutex_);
    Bind(find_record_, 1, workload_hash);
    Bind(find_record_, 2, target);
    Bind(find_record_, 3, candidate_hash);
    std::vector<TuningRecord> found = ReadRecords(find_record_);
    if (found.empty()) return std::nullopt;
    return std::move(found.front());
  }

  std::vector<TuningRecord> Best(const std::string& workload_hash, const std::string& target,
                                 size_t k) const override {
    std::lock_guard lock(mutex_);
    Bind(best_, 1, workload_hash);
    Bind(best_, 2, target);
    auto limit = static_cast<sqlite3_int64>(
        std::min<size_t>(k, static_cast<size_t>(std::numeric_limits<sqlite3_int64>::max())));
    Check(best_, sqlite3_bind_int64(best_.get(), 3, limit), "binding a value");
    return ReadRecords(best_);
  }

  size_t NumRecords() const override {
    std::lock_guard lock(mutex_);
    Step(count_records_, "counting the records");
    auto count = static_cast<size_t>(sqlite3_column_int64(count_records_.get(), 0));
    Reset(count_records_);
    return count;
  }

  std::vector<std::string> Targets(const std::string& workload_hash) const override {
    std::lock_guard lock(mutex_);
    Bind(targets_, 1, workload_hash);
    std::vector<std::string> result;
    while (Step(targets_, "reading the targets of a workload")) result.push_back(Text(targets_, 0));
    Reset(targets_);
    return result;
  }

  void PutBlob(const std::string& name, const std::string& bytes) override {
    CheckWritable("storing a blob");
    std::lock_guard lock(mutex_);
    Bind(put_blob_, 1, name);
    // A zero-length blob must not be bound from a null pointer (that binds NULL).
    static const char kEmpty = 0;
    Check(put_blob_,
          sqlite3_bind_blob64(put_blob_.get(), 2, bytes.empty() ? &kEmpty : bytes.data(),
                              bytes.size(), SQLITE_TRANSIENT),
          "binding a blob");
    RunToEnd(put_blob_, "storing a blob");
  }

  std::optional<std::string> GetBlob(const std::string& name) const override {
    std::lock_guard lock(mutex_);
    Bind(get_blob_, 1, name);
    std::optional<std::string> result;
    if (Step(get_blob_, "reading a blob")) {
      const void* data = sqlite3_column_blob(get_blob_.get(), 0);
      int size = sqlite3_column_bytes(get_blob_.get(), 0);
      result = data ? std::string(static_cast<const char*>(data), size) : std::string();
    }
    Reset(get_blob_);
    return result;
  }

 private:
  // A prepared statement, finalized on destruction.
  class Statement {
   public:
    Statement() = default;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    ~Statement() { sqlite3_finalize(statement_); }
    sqlite3_stmt* get() const { return statement_; }
    sqlite3_stmt** address() { return &statement_; }

   private:
    sqlite3_stmt* statement_ = nullptr;
  };

  [[noreturn]] void Fail(const std::string& what) const {
    ThrowIfLocked(what);
    throw Error(fmt::format("tuning database error while {}: {}", what, sqlite3_errmsg(db_)),
                {.file = path_});
  }

  // SQLITE_BUSY (past the busy timeout) is another process's lock, not a broken file.
  void ThrowIfLocked(const std::string& what) const {
    int code = sqlite3_errcode(db_) & 0xff;
    if (code != SQLITE_BUSY && code != SQLITE_LOCKED) return;
    throw Error(fmt::format("the database is locked by another process (waited {:g} s while {})",
                            std::max(options_.busy_timeout_milliseconds, 0) / 1e3, what),
                {.file = path_});
  }

  void CheckWritable(const char* what) const {
    if (!options_.read_only) return;
    throw Error(fmt::format("the tuning database was opened read-only; {} is not possible", what),
                {.file = path_});
  }

  void Check(const Statement& s, int status, const char* what) const {
    if (status != SQLITE_OK) {
      Reset(s);
      Fail(what);
    }
  }

  void Exec(const std::string& sql, const char* what) {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) Fail(what);
  }

  // Refuses files that are not SQLite, are corrupt, belong to another program or were written
  // by a newer Tandem. An empty or missing file passes (the schema is created next) and gives
  // false.
  bool CheckExistingSchema() {
    std::set<std::string> names;
    Statement tables;
    int status = sqlite3_prepare_v2(db_, "SELECT name FROM sqlite_master WHERE type = 'table'", -1,
                                    tables.address(), nullptr);
    while (status == SQLITE_OK || status == SQLITE_ROW) {
      status = sqlite3_step(tables.get());
      if (status == SQLITE_ROW) names.insert(Text(tables, 0));
    }
    if (status != SQLITE_DONE) {
      ThrowIfLocked("reading the schema");
      throw Error(fmt::format("cannot read the tuning database (not a SQLite file, or corrupt): {}",
                              sqlite3_errmsg(db_)),
                  {.file = path_});
    }
    if (names.empty()) return false;
    if (names.count("tandem_meta") == 0) {
      throw Error(fmt::format("not a Tandem tuning database: it is a SQLite database with other "
                              "tables ({}...) and no tandem_meta table",
                              *names.begin()),
                  {.file = path_});
    }
    Statement version;
    Prepare(version, "SELECT value FROM tandem_meta WHERE key = 'schema_version'");
    if (!Step(version, "reading the schema version")) {
      throw Error("not a Tandem tuning database: tandem_meta has no schema_version",
                  {.file = path_});
    }
    std::string text = Text(version, 0);
    int schema = 0;
    try {
      size_t used = 0;
      schema = std::stoi(text, &used);
      if (used != text.size()) schema = 0;
    } catch (const std::exception&) {
      schema = 0;
    }
    if (schema <= 0) {
      throw Error(fmt::format("corrupt tuning database: schema version '{}' is not a number", text),
                  {.file = path_});
    }
    if (schema > kDatabaseSchemaVersion) {
      throw Error(fmt::format("the tuning database was written by a newer Tandem (schema {}, this "
                              "build reads {})",
                              schema, kDatabaseSchemaVersion),
                  {.file = path_});
    }
    if (schema < kDatabaseSchemaVersion) {
      throw Error(fmt::format("the tuning database has the old schema {} and this build (schema "
                              "{}) cannot upgrade it; export it with the old Tandem and import it",
                              schema, kDatabaseSchemaVersion),
                  {.file = path_});
    }
    return true;
  }

  void Prepare(Statement& s, const std::string& sql) {
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, s.address(), nullptr) !=
        SQLITE_OK) {
      Fail("preparing \"" + sql + "\"");
    }
  }

  void PrepareStatements() {
    std::string columns = kRecordColumns;
    std::string where = " FROM records WHERE workload_hash = ? AND target = ?";
    Prepare(insert_workload_, "INSERT OR IGNORE INTO workloads(hash, kind, text) VALUES(?, ?, ?)");
    Prepare(get_workload_, "SELECT hash, kind, text FROM workloads WHERE hash = ?");
    Prepare(all_workloads_, "SELECT hash, kind, text FROM workloads ORDER BY id");
    Prepare(workload_exists_, "SELECT 1 FROM workloads WHERE hash = ?");
    Prepare(insert_record_,
            "INSERT INTO records(workload_hash, target, candidate_hash, trace_json, run_seconds, "
            "median_seconds, error, measured_at, measured_by) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Prepare(records_, "SELECT " + columns + where + " ORDER BY id");
    Prepare(find_record_,
            "SELECT " + columns + where + " AND candidate_hash = ? ORDER BY id DESC LIMIT 1");
    Prepare(best_, "SELECT " + columns + where +
                       " AND median_seconds IS NOT NULL ORDER BY median_seconds, id LIMIT ?");
    Prepare(count_records_, "SELECT COUNT(*) FROM records");
    Prepare(targets_,
            "SELECT target FROM records WHERE workload_hash = ? GROUP BY target ORDER BY MIN(id)");
    Prepare(put_blob_,
            "INSERT INTO blobs(name, data) VALUES(?, ?) "
            "ON CONFLICT(name) DO UPDATE SET data = excluded.data");
    Prepare(get_blob_, "SELECT data FROM blobs WHERE name = ?");
    if (!options_.read_only || HasTable("tuning_job_trials")) {
      Prepare(job_spent_, "SELECT COUNT(*) FROM tuning_job_trials WHERE job = ?");
      Prepare(job_trials_, "SELECT trial FROM tuning_job_trials WHERE job = ? ORDER BY trial");
      Prepare(reset_job_, "DELETE FROM tuning_job_trials WHERE job = ?");
      Prepare(add_job_trial_, "INSERT OR IGNORE INTO tuning_job_trials(job, trial) VALUES(?, ?)");
    }
  }

  bool HasTable(const char* name) {
    Statement s;
    Prepare(s, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    Bind(s, 1, name);
    bool found = Step(s, "reading the tables");
    Reset(s);
    return found;
  }

  void Bind(const Statement& s, int index, const std::string& value) const {
    Check(s,
          sqlite3_bind_text64(s.get(), index, value.data(), value.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8),
          "binding a value");
  }

  // True while a row is available; false when done. Resets the statement and throws on failure.
  bool Step(const Statement& s, const char* what) const {
    int status = sqlite3_step(s.get());
    if (status == SQLITE_ROW) return true;
    if (status == SQLITE_DONE) return false;
    std::string message = sqlite3_errmsg(db_);
    Reset(s);
    ThrowIfLocked(what);
    throw Error(fmt::format("tuning database error while {}: {}", what, message), {.file = path_});
  }

  void RunToEnd(const Statement& s, const char* what) const {
    while (Step(s, what)) {
    }
    Reset(s);
  }

  static void Reset(const Statement& s) {
    sqlite3_reset(s.get());
    sqlite3_clear_bindings(s.get());
  }

  static std::string Text(const Statement& s, int column) {
    const unsigned char* text = sqlite3_column_text(s.get(), column);
    if (text == nullptr) return "";
    return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(s.get(), column));
  }

  std::vector<TuningRecord> ReadRecords(const Statement& s) const {
    std::vector<TuningRecord> result;
    while (Step(s, "reading records")) {
      TuningRecord record;
      record.workload_hash = Text(s, 0);
      record.target = Text(s, 1);
      record.candidate_hash = Text(s, 2);
      record.trace_json = Text(s, 3);
      std::string runs = Text(s, 4);
      record.error = Text(s, 5);
      record.measured_at = Text(s, 6);
      record.measured_by = Text(s, 7);
      try {
        record.run_seconds = nlohmann::json::parse(runs).get<std::vector<double>>();
      } catch (const nlohmann::json::exception& e) {
        Reset(s);
        throw Error(fmt::format("corrupt tuning database: run_seconds '{}' of a record of "
                                "workload '{}' is not a JSON array of numbers",
                                runs, record.workload_hash),
                    {.file = path_});
      }
      result.push_back(std::move(record));
    }
    Reset(s);
    return result;
  }

  void Close() {
    for (Statement* s :
         {&insert_workload_, &get_workload_, &all_workloads_, &workload_exists_, &insert_record_,
          &records_, &find_record_, &best_, &count_records_, &targets_, &put_blob_, &get_blob_}) {
      sqlite3_finalize(s->get());
      *s->address() = nullptr;
    }
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  std::string path_;
  SqliteOpenOptions options_;
  sqlite3* db_ = nullptr;
  mutable std::mutex mutex_;
  mutable Statement insert_workload_, get_workload_, all_workloads_, workload_exists_,
      insert_record_, records_, find_record_, best_, count_records_, targets_, put_blob_, get_blob_,
      job_spent_, job_trials_, reset_job_, add_job_trial_;
};

}  // namespace

std::unique_ptr<Database> OpenSqliteDatabase(const std::string& path,
                                             const SqliteOpenOptions& options) {
  return std::make_unique<SqliteDatabase>(path, options);
}

}  // namespace tandem::tuning
