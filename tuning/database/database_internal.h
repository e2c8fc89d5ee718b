// Checks shared by the database implementations, so both refuse the same records with the same
// messages. Not part of the public API.
#pragma once

#include <string>

#include "tuning/database/database.h"

namespace tandem::tuning::internal {

// Throws Error unless the record can be stored: every run time finite and non-negative.
void CheckRecordFields(const TuningRecord& record);

// The Error of CommitRecord for a record whose workload was never committed.
[[noreturn]] void ThrowMissingWorkload(const std::string& workload_hash);

}  // namespace tandem::tuning::internal
