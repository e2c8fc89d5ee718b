// The decisions of a dynamic build by buckets as a trace (backends/runtime/bucketed_executable.h):
// one "DynamicBucket" instruction per bucket, in order, with the bucket's symbol, minimum and
// bound as attributes (and, for a build over several symbols, "others": the other symbols'
// ranges, whole in every bucket, as "batch=1:4,..."), carrying the kernel schedules its build
// took as nested traces labelled by workload hash (SetScheduleDecision's form). `tandem tune
// --dynamic --buckets` writes it in a trace file; `tandem run --dynamic --trace` rebuilds the same
// buckets with the same schedules (TraceMapProvider) and no database.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/trace.h"
#include "kernels/dynamic_extent.h"

namespace tandem::tuning {

inline constexpr const char* kDynamicBucketInstruction = "DynamicBucket";

struct DynamicBucketDecision {
  kernels::DynamicRange range;                 // a part of the first symbol's range
  std::map<std::string, ir::Trace> schedules;  // by workload hash
  // The other symbols of a build over several, each with its part of its range (a grid's
  // bucket) or its whole range; empty for a build over one symbol.
  kernels::DynamicRanges others;

  // The bucket's range of every symbol: `range`, then `others`.
  kernels::DynamicRanges ranges() const;
};

// The buckets' ranges, one DynamicRanges per bucket, in order (a grid for
// kernels::CheckDynamicBucketGrid).
std::vector<kernels::DynamicRanges> GridOf(const std::vector<DynamicBucketDecision>& buckets);

ir::Trace DynamicBucketTrace(const std::vector<DynamicBucketDecision>& buckets);
// Whether the trace is a DynamicBucketTrace (its first instruction is a DynamicBucket).
bool IsDynamicBucketTrace(const ir::Trace& trace);
// The buckets of a DynamicBucketTrace; Error naming the instruction when one is not a
// DynamicBucket with its attributes and schedules, the buckets do not follow one another, or
// their other symbols differ.
std::vector<DynamicBucketDecision> ReadDynamicBucketTrace(const ir::Trace& trace);

}  // namespace tandem::tuning
