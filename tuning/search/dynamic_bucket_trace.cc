#include "tuning/search/dynamic_bucket_trace.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "tuning/search/apply_history_best.h"

namespace tandem::tuning {

ir::Trace DynamicBucketTrace(const std::vector<DynamicBucketDecision>& buckets) {
  ir::Trace trace;
  for (const DynamicBucketDecision& bucket : buckets) {
    ir::Instruction instruction;
    instruction.kind = kDynamicBucketInstruction;
    instruction.attrs.Set("symbol", bucket.range.symbol);
    instruction.attrs.Set("minimum", bucket.range.minimum);
    instruction.attrs.Set("bound", bucket.range.bound);
    SetScheduleDecision(instruction, bucket.schedules);
    trace.Append(std::move(instruction));
  }
  return trace;
}

bool IsDynamicBucketTrace(const ir::Trace& trace) {
  return !trace.instructions().empty() &&
         trace.instructions().front().kind == kDynamicBucketInstruction;
}

std::vector<DynamicBucketDecision> ReadDynamicBucketTrace(const ir::Trace& trace) {
  std::vector<DynamicBucketDecision> buckets;
  for (size_t i = 0; i < trace.instructions().size(); ++i) {
    const ir::Instruction& instruction = trace.instructions()[i];
    auto fail = [&](const std::string& reason) {
      return ir::Error(fmt::format("instruction {} ({}) of the dynamic bucket trace: {}", i,
                                   instruction.kind, reason));
    };
    if (instruction.kind != kDynamicBucketInstruction) {
      throw fail(fmt::format("not a {} instruction", kDynamicBucketInstruction));
    }
    DynamicBucketDecision bucket;
    try {
      bucket.range.symbol = instruction.attrs.GetString("symbol");
      bucket.range.minimum = instruction.attrs.GetInt("minimum");
      bucket.range.bound = instruction.attrs.GetInt("bound");
      bucket.schedules = ScheduleDecision(instruction);
    } catch (const ir::Error& e) {
      throw fail(e.what());
    }
    if (bucket.range.minimum < 1 || bucket.range.bound <= bucket.range.minimum) {
      throw fail(fmt::format("the bucket [{}, {}] holds fewer than two sizes", bucket.range.minimum,
                             bucket.range.bound));
    }
    if (!buckets.empty() && (bucket.range.symbol != buckets.back().range.symbol ||
                             bucket.range.minimum != buckets.back().range.bound + 1)) {
      throw fail(fmt::format("the bucket {} does not follow {}", kernels::ToString(bucket.range),
                             kernels::ToString(buckets.back().range)));
    }
    buckets.push_back(std::move(bucket));
  }
  if (buckets.empty()) throw ir::Error("the dynamic bucket trace has no buckets");
  return buckets;
}

}  // namespace tandem::tuning
