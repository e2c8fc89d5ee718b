// `tandem db`: look into a tuning database, and move its contents in and out as JSON lines.
//   tandem db list   --db FILE                          every workload with its best time
//   tandem db show   --db FILE HASH [--top K] [--target T]
//   tandem db export --db FILE [--output F]             JSON lines (stdout by default)
//   tandem db import --db FILE F                        JSON lines ("-" reads stdin)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "ir/error.h"
#include "ir/file_read.h"
#include "tools/commands.h"
#include "tools/option_checks.h"
#include "tuning/database/database.h"

namespace tandem::tools {

namespace fs = std::filesystem;

std::unique_ptr<tuning::Database> OpenExistingDatabase(const std::string& path) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw Error("no tuning database here: the file does not exist", {.file = path});
  }
  if (fs::is_directory(path, error)) {
    throw Error("is a directory, not a tuning database file", {.file = path});
  }
  return tuning::OpenSqliteDatabase(path, {.read_only = true});
}

namespace {

std::string FirstLine(const std::string& text, size_t max_length) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max_length) line = line.substr(0, max_length - 3) + "...";
  return line;
}

std::string Microseconds(double seconds) {
  return fmt::format("{:.3f}", seconds * 1e6);
}

// The stored hash the user meant: the exact hash or a unique prefix of one. Otherwise an Error
// that lists the candidates (hashes starting with it, or sharing the longest prefix with it).
std::string ResolveHash(const tuning::Database& db, const std::string& hash,
                        const std::string& path) {
  if (db.GetWorkload(hash)) return hash;
  std::vector<std::string> starting, all;
  for (const tuning::Workload& workload : db.Workloads()) {
    all.push_back(workload.hash);
    if (!hash.empty() && workload.hash.rfind(hash, 0) == 0) starting.push_back(workload.hash);
  }
  if (starting.size() == 1) return starting[0];
  if (starting.size() > 1) {
    throw Error(fmt::format("workload hash prefix '{}' is ambiguous; it begins {}", hash,
                            fmt::join(starting, ", ")),
                {.file = path});
  }
  auto common = [&](const std::string& other) {
    size_t n = 0;
    while (n < hash.size() && n < other.size() && hash[n] == other[n]) ++n;
    return n;
  };
  size_t best = 0;
  for (const std::string& other : all) best = std::max(best, common(other));
  std::vector<std::string> close;
  for (const std::string& other : all) {
    if (best > 0 && common(other) == best && close.size() < 5) close.push_back(other);
  }
  std::string hint = close.empty()
                         ? fmt::format(" ({} workloads; `tandem db list` shows them)", all.size())
                         : fmt::format("; did you mean {}?", fmt::join(close, ", "));
  throw Error(fmt::format("no workload with hash '{}'{}", hash, hint), {.file = path});
}

// The stored targets that --target selects: an exact descriptor, the records of a target text
// resolved on this machine ("llvm -threads=4"), or every descriptor containing the text.
std::vector<std::string> SelectTargets(const std::vector<std::string>& stored,
                                       const std::string& wanted) {
  if (wanted.empty()) return stored;
  if (std::find(stored.begin(), stored.end(), wanted) != stored.end()) return {wanted};
  try {
    // Records are stored under the descriptor and the measurement options that follow it.
    std::string descriptor = tuning::TargetDescriptor(ir::ParseTarget(wanted));
    std::vector<std::string> measured_there;
    for (const std::string& target : stored) {
      if (target == descriptor || target.rfind(descriptor + "|", 0) == 0) {
        measured_there.push_back(target);
      }
    }
    if (!measured_there.empty()) return measured_there;
  } catch (const Error&) {
    // Not a target text; try it as a substring below.
  }
  std::vector<std::string> matching;
  for (const std::string& target : stored) {
    if (target.find(wanted) != std::string::npos) matching.push_back(target);
  }
  if (matching.empty()) {
    throw Error(fmt::format("no records on target '{}'; the workload has records on:\n  {}", wanted,
                            fmt::join(stored, "\n  ")));
  }
  return matching;
}

// Records of another code generation version (IsStaleDescriptor) are counted apart: they are
// kept, but no run is served from them, and the best time is of the others.
void List(const std::string& path) {
  std::unique_ptr<tuning::Database> db = OpenExistingDatabase(path);
  std::vector<tuning::Workload> workloads = db->Workloads();
  fmt::print("{:<16}  {:<6}  {:>7}  {:>5}  {:>12}  {}\n", "hash", "kind", "records", "stale",
             "best (us)", "text");
  size_t total_stale = 0;
  for (const tuning::Workload& workload : workloads) {
    size_t records = 0, stale = 0;
    double best = INFINITY;
    for (const std::string& target : db->Targets(workload.hash)) {
      size_t count = db->Records(workload.hash, target).size();
      records += count;
      if (tuning::IsStaleDescriptor(target)) {
        stale += count;
        continue;
      }
      std::vector<tuning::TuningRecord> top = db->Best(workload.hash, target, 1);
      if (!top.empty()) best = std::min(best, top[0].median_seconds());
    }
    total_stale += stale;
    fmt::print("{:<16}  {:<6}  {:>7}  {:>5}  {:>12}  {}\n", workload.hash, workload.kind, records,
               stale, std::isinf(best) ? "-" : Microseconds(best), FirstLine(workload.text, 60));
  }
  fmt::print("{} workloads, {} records", workloads.size(), db->NumRecords());
  if (total_stale > 0) {
    fmt::print(" ({} stale: made by another code generation version, kept but never served)",
               total_stale);
  }
  fmt::print("\n");
}

void Show(const std::string& path, const std::string& hash_text, size_t top,
          const std::string& target_text) {
  std::unique_ptr<tuning::Database> db = OpenExistingDatabase(path);
  std::string hash = ResolveHash(*db, hash_text, path);
  tuning::Workload workload = *db->GetWorkload(hash);
  std::vector<std::string> stored = db->Targets(hash);
  fmt::print("workload {} ({}), records on {} target(s)\n\n{}\n", hash, workload.kind,
             stored.size(), workload.text);
  if (!workload.text.empty() && workload.text.back() != '\n') fmt::print("\n");
  if (stored.empty()) {
    fmt::print("no records\n");
    return;
  }
  for (const std::string& target : SelectTargets(stored, target_text)) {
    std::vector<tuning::TuningRecord> records = db->Records(hash, target);
    size_t failed = std::count_if(records.begin(), records.end(),
                                  [](const tuning::TuningRecord& r) { return !r.ok(); });
    fmt::print("target {}{}\n  {} records, {} failed; best {}:\n", target,
               tuning::IsStaleDescriptor(target) ? " (stale: another code generation version)" : "",
               records.size(), failed, std::min(top, records.size() - failed));
    std::vector<tuning::TuningRecord> best = db->Best(hash, target, top);
    for (size_t i = 0; i < best.size(); ++i) {
      const tuning::TuningRecord& record = best[i];
      fmt::print("  #{} median {} us over {} runs, candidate {}, measured {} by {}\n", i + 1,
                 Microseconds(record.median_seconds()), record.run_seconds.size(),
                 record.candidate_hash.empty() ? "(the workload)" : record.candidate_hash,
                 record.measured_at, record.measured_by);
      fmt::print("     trace {}\n", record.trace_json);
    }
  }
}

void Export(const std::string& path, const std::string& output) {
  std::unique_ptr<tuning::Database> db = OpenExistingDatabase(path);
  if (output.empty() || output == "-") {
    db->ExportJsonLines(std::cout);
    return;
  }
  std::ofstream out(output, std::ios::binary);
  if (!out) throw Error("cannot open the output file for writing", {.file = output});
  db->ExportJsonLines(out);
  fmt::print(stderr, "exported {} workloads and {} records to {}\n", db->Workloads().size(),
             db->NumRecords(), output);
}

void Import(const std::string& path, const std::string& input) {
  std::ifstream file;
  if (input != "-") {
    if (!fs::exists(input)) throw Error("no such file to import", {.file = input});
    std::string kind = ir::NotRegularFileKind(input);
    if (!kind.empty()) {
      throw Error(fmt::format("the file to import is {}, not a regular file", kind),
                  {.file = input});
    }
    file.open(input, std::ios::binary);
    if (!file) throw Error("cannot open the file to import", {.file = input});
  }
  std::unique_ptr<tuning::Database> db = tuning::OpenSqliteDatabase(path);
  size_t added = 0;
  try {
    added = db->ImportJsonLines(input == "-" ? std::cin : file);
  } catch (const Error& e) {
    throw e.WithFile(input == "-" ? "<stdin>" : input);
  }
  fmt::print(
      "imported {} new workloads and records from {}; {} now holds {} workloads and {} "
      "records\n",
      added, input == "-" ? "stdin" : input, path, db->Workloads().size(), db->NumRecords());
}

}  // namespace

Command AddDbCommand(CLI::App& app) {
  struct Options {
    std::string db, hash, target, output, input;
    size_t top = 5;
  };
  auto options = std::make_shared<Options>();
  CLI::App* db = app.add_subcommand("db", "inspect a tuning database, export or import records");
  db->require_subcommand(1);
  auto add_db = [&](CLI::App* command) {
    command->add_option("--db", options->db, "tuning database file (SQLite)")->required();
  };
  CLI::App* list =
      db->add_subcommand("list", "list the workloads with their record counts and best times");
  add_db(list);
  CLI::App* show = db->add_subcommand("show", "show a workload and its best records");
  add_db(show);
  show->add_option("hash", options->hash, "workload hash (or a unique prefix of one)")->required();
  show->add_option("--top", options->top, "how many of the best records to show")
      ->capture_default_str()
      ->check(IntegerIn(0));
  show->add_option(
      "--target", options->target,
      "only this target: a stored descriptor, a target text such as \"llvm -threads=4\" "
      "(this machine's descriptor of it), or part of a descriptor");
  CLI::App* exporter = db->add_subcommand("export", "write workloads and records as JSON lines");
  add_db(exporter);
  exporter->add_option("--output,-o", options->output, "output file (stdout by default)");
  CLI::App* importer =
      db->add_subcommand("import", "add the workloads and records of a JSON lines file");
  add_db(importer);
  importer->add_option("file", options->input, "JSON lines file (\"-\" reads stdin)")->required();
  return [=]() {
    if (!*db) return -1;
    if (*list) List(options->db);
    if (*show) Show(options->db, options->hash, options->top, options->target);
    if (*exporter) Export(options->db, options->output);
    if (*importer) Import(options->db, options->input);
    return 0;
  };
}

}  // namespace tandem::tools
