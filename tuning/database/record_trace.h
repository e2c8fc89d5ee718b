// Decoding what a stored record holds, at the boundary between the database and its readers: a
// record that fails to decode (a number that overflows double, a trace of a newer format, a
// field a tool tampered with) becomes one ir::Error naming the record, whatever library failed,
// so that readers can skip it with a warning instead of stopping.
#pragma once

#include <string>

#include "ir/trace.h"
#include "tuning/database/database.h"

namespace tandem::tuning {

// "record of workload W, candidate C, on target T" (the candidate omitted when empty).
std::string DescribeRecord(const TuningRecord& record);

// The record's trace. Error "<DescribeRecord>: its trace does not decode: <reason>" for any
// failure (JSON, number range, unknown instructions).
ir::Trace DecodeRecordTrace(const TuningRecord& record);

}  // namespace tandem::tuning
