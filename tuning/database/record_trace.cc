#include "tuning/database/record_trace.h"

#include <fmt/format.h>

#include <exception>

#include "ir/error.h"

namespace tandem::tuning {

std::string DescribeRecord(const TuningRecord& record) {
  std::string candidate =
      record.candidate_hash.empty() ? "" : fmt::format(", candidate {}", record.candidate_hash);
  return fmt::format("record of workload {}{}, on target {}", record.workload_hash, candidate,
                     record.target);
}

ir::Trace DecodeRecordTrace(const TuningRecord& record) {
  std::string reason;
  try {
    return ir::Trace::FromJson(record.trace_json);
  } catch (const ir::Error& e) {
    reason = e.message();
  } catch (const std::exception& e) {  // the JSON library's own errors (number overflow, ...)
    reason = e.what();
  }
  throw ir::Error(fmt::format("{}: its trace does not decode: {}", DescribeRecord(record), reason));
}

}  // namespace tandem::tuning
