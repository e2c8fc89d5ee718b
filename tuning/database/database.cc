// The parts of the tuning database shared by every implementation: JSON lines export/import,
// the target descriptor and record helpers.
#include "tuning/database/database.h"

#include <fmt/format.h>
#include <llvm/Config/llvm-config.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <istream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <utility>

#include "backends/external/external_backend.h"
#include "backends/llvm/codegen.h"
#include "backends/target/resolved_target.h"
#include "ir/error.h"
#include "ir/json_depth.h"
#include "tuning/database/database_internal.h"
#include "tuning/database/record_trace.h"

namespace tandem::tuning {

using ir::Check;
using nlohmann::json;

namespace internal {

void CheckRecordFields(const TuningRecord& record) {
  for (double seconds : record.run_seconds) {
    Check(std::isfinite(seconds) && seconds >= 0,
          fmt::format("CommitRecord: run time {} of workload '{}' is not a finite non-negative "
                      "number of seconds",
                      seconds, record.workload_hash));
  }
}

void ThrowMissingWorkload(const std::string& workload_hash) {
  throw Error(
      fmt::format("CommitRecord: workload '{}' is not in the database (commit the "
                  "workload before its records)",
                  workload_hash));
}

}  // namespace internal

double TuningRecord::median_seconds() const {
  if (!ok()) return std::numeric_limits<double>::infinity();
  std::vector<double> sorted = run_seconds;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

namespace {

// Written with ordered keys, so "type" comes first and the fields keep the struct's order.
nlohmann::ordered_json WorkloadToJson(const Workload& workload) {
  return nlohmann::ordered_json{{"type", "workload"},
                                {"hash", workload.hash},
                                {"kind", workload.kind},
                                {"text", workload.text}};
}

nlohmann::ordered_json RecordToJson(const TuningRecord& record) {
  return nlohmann::ordered_json{{"type", "record"},
                                {"workload_hash", record.workload_hash},
                                {"target", record.target},
                                {"candidate_hash", record.candidate_hash},
                                {"trace_json", record.trace_json},
                                {"run_seconds", record.run_seconds},
                                {"error", record.error},
                                {"measured_at", record.measured_at},
                                {"measured_by", record.measured_by}};
}

std::string StringField(const json& object, const char* name) {
  auto it = object.find(name);
  Check(it != object.end(), fmt::format("missing field '{}'", name));
  Check(it->is_string(), fmt::format("field '{}' is not a string", name));
  return it->get<std::string>();
}

Workload WorkloadFromJson(const json& object) {
  Workload workload{StringField(object, "hash"), StringField(object, "kind"),
                    StringField(object, "text")};
  Check(!workload.hash.empty(), "field 'hash' is empty");
  return workload;
}

TuningRecord RecordFromJson(const json& object) {
  TuningRecord record;
  record.workload_hash = StringField(object, "workload_hash");
  record.target = StringField(object, "target");
  record.candidate_hash = StringField(object, "candidate_hash");
  record.trace_json = StringField(object, "trace_json");
  record.error = StringField(object, "error");
  record.measured_at = StringField(object, "measured_at");
  record.measured_by = StringField(object, "measured_by");
  auto runs = object.find("run_seconds");
  Check(runs != object.end(), "missing field 'run_seconds'");
  Check(runs->is_array(), "field 'run_seconds' is not an array");
  for (const json& value : *runs) {
    Check(value.is_number(), "field 'run_seconds' holds a value that is not a number");
    record.run_seconds.push_back(value.get<double>());
  }
  return record;
}

std::string DumpLine(const nlohmann::ordered_json& object) {
  // Invalid UTF-8 in IR text is replaced rather than failing the whole export.
  return object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

void Database::ExportJsonLines(std::ostream& out) const {
  for (const Workload& workload : Workloads()) {
    out << DumpLine(WorkloadToJson(workload)) << '\n';
    for (const std::string& target : Targets(workload.hash)) {
      for (const TuningRecord& record : Records(workload.hash, target)) {
        out << DumpLine(RecordToJson(record)) << '\n';
      }
    }
  }
  out.flush();
  Check(static_cast<bool>(out), "ExportJsonLines: writing the output failed");
}

size_t Database::ImportJsonLines(std::istream& in) {
  // Records already in the database per (workload, target), loaded on first use, so importing
  // the same file twice adds nothing.
  std::map<std::pair<std::string, std::string>, std::vector<TuningRecord>> present;
  size_t added = 0;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ErrorLocation where;
    where.line = line_number;
    where.column = 1;
    try {
      json object;
      try {
        ir::CheckJsonDepth(line);
      } catch (const Error& e) {
        where.column = e.where().column;
        throw Error(e.message());
      }
      try {
        object = json::parse(line);
      } catch (const json::parse_error& e) {
        where.column = static_cast<int>(std::max<size_t>(e.byte, 1));
        // Drop nlohmann's prefix ("[json.exception...] parse error at line 1, column 7: "):
        // its line is always 1 and the column is in the Error's location.
        std::string reason = e.what();
        size_t column = reason.find(", column ");
        size_t start = column == std::string::npos ? column : reason.find(": ", column);
        if (start != std::string::npos) reason = reason.substr(start + 2);
        throw Error(fmt::format("not valid JSON: {}", reason));
      } catch (const json::exception& e) {  // a number that overflows double, ...
        std::string reason = e.what();
        if (size_t start = reason.find("] "); start != std::string::npos) {
          reason = reason.substr(start + 2);
        }
        throw Error(fmt::format("not valid JSON: {}", reason));
      }
      Check(object.is_object(), "not a JSON object");
      std::string type = StringField(object, "type");
      if (type == "workload") {
        Workload workload = WorkloadFromJson(object);
        if (GetWorkload(workload.hash)) continue;
        CommitWorkload(workload);
        ++added;
      } else if (type == "record") {
        TuningRecord record = RecordFromJson(object);
        // A trace that is not JSON (a number overflowing double) would be skipped by every
        // reader: refused here. (Its instructions are checked where it is replayed.)
        if (!record.trace_json.empty()) {
          try {
            (void)json::parse(record.trace_json);
          } catch (const json::exception& e) {
            throw Error(fmt::format("{}: its trace is not valid JSON: {}", DescribeRecord(record),
                                    e.what()));
          }
        }
        auto key = std::make_pair(record.workload_hash, record.target);
        auto it = present.find(key);
        if (it == present.end()) {
          it = present.emplace(key, Records(record.workload_hash, record.target)).first;
        }
        if (std::find(it->second.begin(), it->second.end(), record) != it->second.end()) continue;
        CommitRecord(record);
        it->second.push_back(std::move(record));
        ++added;
      } else {
        throw Error(fmt::format("unknown type '{}' (expected \"workload\" or \"record\")", type));
      }
    } catch (const Error& e) {
      throw Error(fmt::format("ImportJsonLines: {}", e.what()), where);
    }
  }
  return added;
}

std::string TargetDescriptor(const ir::Target& target) {
  ir::Target resolved = backends::ResolveTarget(target);
  if (resolved.kind != "llvm") {
    throw Error(fmt::format("no tuning records for the {} target yet: Tandem tunes CPU code only",
                            resolved.kind));
  }
  std::string libraries;
  const backends::ExternalBackendRegistry& registry = backends::ExternalBackendRegistry::Global();
  for (const std::string& name : registry.Names()) {
    std::string version = registry.Get(name).version();
    if (!version.empty()) libraries += fmt::format("|{}={}", name, version);
  }
  return fmt::format("{}|vector-bits={}|llvm={}{}|codegen={}|schema={}", ir::ToString(resolved),
                     backends::VectorUnitBits(resolved), LLVM_VERSION_STRING, libraries,
                     backends::kCodegenVersion, kDatabaseSchemaVersion);
}

std::string RecordKey(const ir::Target& target, const MeasureOptions& measure) {
  return fmt::format("{}|measure=warmup:{},repeats:{},min-repeat:{},flush:{}",
                     TargetDescriptor(target), measure.warmup_runs, measure.repeats,
                     measure.min_repeat_seconds, measure.flush_cache ? 1 : 0);
}

std::string DescriptorField(const std::string& descriptor, const std::string& key) {
  size_t start = descriptor.find('|');
  while (start != std::string::npos) {
    size_t end = descriptor.find('|', start + 1);
    std::string field =
        descriptor.substr(start + 1, end == std::string::npos ? end : end - start - 1);
    if (field.rfind(key + "=", 0) == 0) return field.substr(key.size() + 1);
    start = end;
  }
  return "";
}

ir::Target TargetOfDescriptor(const std::string& descriptor) {
  ir::Target target = ir::ParseTarget(descriptor.substr(0, descriptor.find('|')));
  std::string cpu = DescriptorField(descriptor, "cpu");
  if (target.cpu == "host" && !cpu.empty()) {
    target.cpu = cpu;
    target.features = DescriptorField(descriptor, "features");
  }
  return target;
}

bool IsStaleDescriptor(const std::string& descriptor) {
  return DescriptorField(descriptor, "codegen") != std::to_string(backends::kCodegenVersion);
}

std::string JobTrialName(const std::string& workload_hash, const std::string& candidate_hash) {
  return workload_hash + "/" + candidate_hash;
}

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  size_t length = std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(buffer, length);
}

}  // namespace tandem::tuning
