// The tuning database: workloads and the measured records of their candidates.
//
// A workload is a program being tuned: a kernel function (kernel search) or a whole graph
// module (graph-level tuning), identified by a hash that is stable across processes, machines
// and compiler versions (ir::StructuralHash, XXH64 of a canonical serialization). A record is
// one measurement of one candidate of a workload on one target: the trace that produced the
// candidate (JSON), the run times or the failure reason, and when and how it was measured.
// Records of a workload are looked up per target descriptor (TargetDescriptor below), so
// measurements from another CPU or another library version are never reused.
//
// Two implementations: SQLite (one file, WAL mode, every commit durable once the call returns,
// so a tuning process killed at any point leaves a consistent file and resumes without
// repeating the committed measurements) and in-memory (tests). Both behave identically.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/target.h"
#include "tuning/measure/measure.h"

namespace tandem::tuning {

// Bumped whenever the schema or the meaning of a stored field changes. Opening a file with a
// newer version is an error; an older version is upgraded or refused with a clear message.
inline constexpr int kDatabaseSchemaVersion = 1;

struct Workload {
  std::string hash;  // 16 hex digits of ir::StructuralHash
  std::string kind;  // "kernel" or "graph"
  std::string text;  // readable IR text of the workload (large constants may be elided)

  bool operator==(const Workload& other) const = default;
};

struct TuningRecord {
  std::string workload_hash;
  std::string target;               // TargetDescriptor(...) of the machine that measured it
  std::string candidate_hash;       // identifies the measured program within the workload (hash of
                                    // the scheduled kernel / optimized module); "" = the workload
  std::string trace_json;           // ir::Trace::ToJson of the decisions that produced it
  std::vector<double> run_seconds;  // empty when the candidate failed
  std::string error;                // failure reason; "" when measured
  std::string measured_at;          // UTC, ISO 8601 ("2026-11-22T05:40:00Z")
  std::string measured_by;          // JSON object: runner kind, repeats, warm-up, threads, ...

  bool ok() const { return error.empty() && !run_seconds.empty(); }
  double median_seconds() const;  // +inf when !ok()
  bool operator==(const TuningRecord& other) const = default;
};

class Database {
 public:
  virtual ~Database() = default;

  // Adds the workload unless one with its hash exists (then nothing changes).
  virtual void CommitWorkload(const Workload& workload) = 0;
  virtual std::optional<Workload> GetWorkload(const std::string& hash) const = 0;
  // Every workload, in the order first committed.
  virtual std::vector<Workload> Workloads() const = 0;

  // Appends a record (its workload must have been committed: Error otherwise). Durable once
  // this returns.
  virtual void CommitRecord(const TuningRecord& record) = 0;
  // Every record of the workload on the target, in commit order.
  virtual std::vector<TuningRecord> Records(const std::string& workload_hash,
                                            const std::string& target) const = 0;
  // The latest record of exactly this candidate, if it was measured (or failed) before.
  virtual std::optional<TuningRecord> FindRecord(const std::string& workload_hash,
                                                 const std::string& target,
                                                 const std::string& candidate_hash) const = 0;
  // The `k` successful records with the smallest median, best first (ties: earlier first).
  virtual std::vector<TuningRecord> Best(const std::string& workload_hash,
                                         const std::string& target, size_t k) const = 0;
  virtual size_t NumRecords() const = 0;
  // The distinct targets that have records of the workload, in the order first committed (lets
  // the export and the `tandem db` command reach every record).
  virtual std::vector<std::string> Targets(const std::string& workload_hash) const = 0;

  // Named binary blobs stored with the database (the cost model's saved state).
  virtual void PutBlob(const std::string& name, const std::string& bytes) = 0;
  virtual std::optional<std::string> GetBlob(const std::string& name) const = 0;

  // Tuning jobs: the trials a job's budget has spent, kept so that a rerun of the job after a
  // kill spends only what is left (TuningJobKey in tuning/session/tuning_run.h names a job). A
  // trial is a measured candidate, named "<workload hash>/<candidate hash>". A job never seen
  // has spent none. Jobs are not part of the JSON-lines export.
  virtual int64_t JobSpent(const std::string& job) const = 0;
  virtual std::vector<std::string> JobTrials(const std::string& job) const = 0;
  // Forgets the job's trials (its records stay).
  virtual void ResetJob(const std::string& job) = 0;
  // Appends a record (as CommitRecord) and counts it as a trial of `job`: both or neither (one
  // transaction), so a kill never leaves the count and the records apart.
  virtual void CommitChargedRecord(const TuningRecord& record, const std::string& job) = 0;

  // JSON lines: one object per line, {"type":"workload",...} or {"type":"record",...}; Import
  // skips records already present and returns how many lines it added. A malformed line (not
  // JSON, a number out of range, a missing field, a record whose trace is not JSON) is an
  // Error naming its line number (nothing after it is imported).
  void ExportJsonLines(std::ostream& out) const;
  size_t ImportJsonLines(std::istream& in);
};

struct SqliteOpenOptions {
  // Opened read-only (SQLITE_OPEN_READONLY): the file must exist and hold a Tandem database; it
  // is never changed (no WAL switch, no schema written), so it may be a file without write
  // permission. Commit* and PutBlob are then an Error.
  bool read_only = false;
  // How long a statement waits for a lock another process holds; then it fails with "the
  // database is locked by another process".
  int busy_timeout_milliseconds = 30000;
};

// Opens (creating when missing, unless read-only) a SQLite database file. Errors: the file is
// not a Tandem database (or not SQLite at all), is corrupt, has a newer schema version, or is
// locked by another process past the busy timeout; each names the file.
std::unique_ptr<Database> OpenSqliteDatabase(const std::string& path,
                                             const SqliteOpenOptions& options = {});
std::unique_ptr<Database> MakeInMemoryDatabase();

// The target descriptor: the resolved target (backends::ResolveTarget: CPU, features, threads;
// never "host") with its vector width, the versions of LLVM and of each external backend's
// library (ExternalBackend::version), the code generation version (backends::kCodegenVersion)
// and the database schema version, e.g. "llvm -cpu=x86-64-v3
// -threads=2|vector-bits=256|llvm=16.0.6|onednn=2.6.3|codegen=1|schema=1". Error for a target
// kind other than llvm (GPU records are not defined yet).
std::string TargetDescriptor(const ir::Target& target);

// What records are stored and looked up under: the target descriptor and how candidates are
// measured ("...|measure=warmup:1,repeats:5,min-repeat:0.002,flush:0"), so that measurements
// taken another way are never compared with these.
std::string RecordKey(const ir::Target& target, const MeasureOptions& measure);

// The value of "key=value" among a descriptor's '|'-separated fields ("" when absent).
std::string DescriptorField(const std::string& descriptor, const std::string& key);

// The target a descriptor was made for: the resolved target before its first '|'. Descriptors
// written before targets were resolved ("llvm -threads=2|cpu=znver3|features=+avx,...|...")
// name the recording machine's CPU and features in fields instead; those are taken.
ir::Target TargetOfDescriptor(const std::string& descriptor);

// True when records under `descriptor` were made by another code generation version than this
// build's: kept in the database, never served (`tandem db list` counts them as stale).
bool IsStaleDescriptor(const std::string& descriptor);

// The trial name of a record in a tuning job: "<workload hash>/<candidate hash>".
std::string JobTrialName(const std::string& workload_hash, const std::string& candidate_hash);

// The current UTC time in ISO 8601, for TuningRecord::measured_at.
std::string NowUtc();

}  // namespace tandem::tuning
