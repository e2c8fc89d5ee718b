#include "tuning/search/dynamic_bucket_trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

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
    if (!bucket.others.empty()) {
      std::vector<std::string> others;
      for (const kernels::DynamicRange& other : bucket.others) {
        others.push_back(fmt::format("{}={}:{}", other.symbol, other.minimum, other.bound));
      }
      instruction.attrs.Set("others", fmt::format("{}", fmt::join(others, ",")));
    }
    SetScheduleDecision(instruction, bucket.schedules);
    trace.Append(std::move(instruction));
  }
  return trace;
}

kernels::DynamicRanges DynamicBucketDecision::ranges() const {
  kernels::DynamicRanges all = {range};
  all.insert(all.end(), others.begin(), others.end());
  return all;
}

std::vector<kernels::DynamicRanges> GridOf(const std::vector<DynamicBucketDecision>& buckets) {
  std::vector<kernels::DynamicRanges> grid;
  for (const DynamicBucketDecision& bucket : buckets) grid.push_back(bucket.ranges());
  return grid;
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
      std::string others = instruction.attrs.GetString("others", "");
      for (size_t start = 0; !others.empty() && start <= others.size();) {
        size_t end = std::min(others.find(',', start), others.size());
        bucket.others.push_back(kernels::ParseDynamicRange(others.substr(start, end - start)));
        start = end + 1;
      }
      if (!bucket.others.empty()) kernels::CheckDynamicRanges(bucket.ranges());
    } catch (const ir::Error& e) {
      throw fail(e.what());
    }
    if (bucket.range.minimum < 1 || bucket.range.bound <= bucket.range.minimum) {
      throw fail(fmt::format("the bucket [{}, {}] holds fewer than two sizes", bucket.range.minimum,
                             bucket.range.bound));
    }
    buckets.push_back(std::move(bucket));
  }
  if (buckets.empty()) throw ir::Error("the dynamic bucket trace has no buckets");
  // The buckets split the same symbols as a grid. When they do not, the first bucket that the
  // ones before it cannot be followed by is named (a grid is written bucket by bucket, the last
  // symbol's parts innermost: it covers its combinations only at the end).
  std::vector<kernels::DynamicRanges> grid = GridOf(buckets);
  try {
    kernels::CheckDynamicBucketGrid(grid);
  } catch (const ir::Error&) {
    for (size_t i = 1; i <= grid.size(); ++i) {
      try {
        kernels::CheckDynamicBucketGrid(
            {grid.begin(), grid.begin() + static_cast<std::ptrdiff_t>(i)},
            /*complete=*/false);
      } catch (const ir::Error& e) {
        throw ir::Error(fmt::format("instruction {} ({}) of the dynamic bucket trace: {}", i - 1,
                                    kDynamicBucketInstruction, e.what()));
      }
    }
    throw;
  }
  return buckets;
}

}  // namespace tandem::tuning
