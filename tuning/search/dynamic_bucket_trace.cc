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
      if (!bucket.others.empty()) {
        kernels::DynamicRanges all = {bucket.range};
        all.insert(all.end(), bucket.others.begin(), bucket.others.end());
        kernels::CheckDynamicRanges(all);
      }
    } catch (const ir::Error& e) {
      throw fail(e.what());
    }
    if (bucket.range.minimum < 1 || bucket.range.bound <= bucket.range.minimum) {
      throw fail(fmt::format("the bucket [{}, {}] holds fewer than two sizes", bucket.range.minimum,
                             bucket.range.bound));
    }
    buckets.push_back(std::move(bucket));
    // The buckets so far split the same symbols as a grid (complete once all are read).
    std::vector<kernels::DynamicRanges> grid;
    for (const DynamicBucketDecision& b : buckets) {
      grid.push_back({b.range});
      grid.back().insert(grid.back().end(), b.others.begin(), b.others.end());
    }
    try {
      kernels::CheckDynamicBucketGrid(grid);
    } catch (const ir::Error& e) {
      // A grid is read bucket by bucket, the last symbol's parts innermost: it covers its
      // combinations only at the end.
      if (std::string(e.what()).find("do not cover") == std::string::npos) throw fail(e.what());
    }
  }
  if (buckets.empty()) throw ir::Error("the dynamic bucket trace has no buckets");
  std::vector<kernels::DynamicRanges> grid;
  for (const DynamicBucketDecision& b : buckets) {
    grid.push_back({b.range});
    grid.back().insert(grid.back().end(), b.others.begin(), b.others.end());
  }
  kernels::CheckDynamicBucketGrid(grid);
  return buckets;
}

}  // namespace tandem::tuning
