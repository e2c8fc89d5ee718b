#include "backends/runtime/bucketed_executable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ir/error.h"

namespace tandem::backends {

using kernels::ToString;

namespace {

// "A against B" when two buckets' signatures (of the inputs, or of the outputs) differ; empty
// when they are the same.
std::string Signature(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a != b ? fmt::format("{} against {}", fmt::join(a, ", "), fmt::join(b, ", "))
                : std::string();
}

}  // namespace

BucketedExecutable::BucketedExecutable(std::vector<std::unique_ptr<DynamicExecutable>> buckets)
    : buckets_(std::move(buckets)) {
  if (buckets_.empty()) throw ir::Error("a bucketed build needs at least one bucket");
  const DynamicExecutable& first = *buckets_[0];
  // 1. The same signature in every bucket.
  for (const std::unique_ptr<DynamicExecutable>& bucket : buckets_) {
    std::string inputs = Signature(first.InputSignatures(), bucket->InputSignatures());
    std::string outputs = Signature(first.OutputSignatures(), bucket->OutputSignatures());
    if (!inputs.empty() || !outputs.empty()) {
      throw ir::Error(fmt::format(
          "the bucket {} gives the model another signature than the bucket {}: {}",
          ToString(bucket->ranges()), ToString(first.ranges()), inputs.empty() ? outputs : inputs));
    }
  }
  // 2. Each symbol's parts consecutive, and every combination of them once.
  std::vector<kernels::DynamicRanges> grid;
  for (const std::unique_ptr<DynamicExecutable>& bucket : buckets_)
    grid.push_back(bucket->ranges());
  ranges_ = kernels::CheckDynamicBucketGrid(grid);
}

bool BucketedExecutable::SplitsFirstSymbolOnly() const {
  return std::all_of(buckets_.begin(), buckets_.end(), [&](const auto& bucket) {
    return std::equal(ranges_.begin() + 1, ranges_.end(), bucket->ranges().begin() + 1);
  });
}

std::vector<int64_t> BucketedExecutable::SizesOf(const std::vector<ir::Tensor>& inputs) const {
  // Every bucket reads sizes alike (equal signatures); the first one checks the whole ranges.
  return buckets_[0]->SizesWithin(inputs, ranges_);
}

DynamicExecutable& BucketedExecutable::BucketFor(const std::vector<int64_t>& sizes) {
  for (const std::unique_ptr<DynamicExecutable>& bucket : buckets_) {
    bool holds = sizes.size() == bucket->ranges().size();
    for (size_t k = 0; holds && k < sizes.size(); ++k) {
      holds = sizes[k] >= bucket->ranges()[k].minimum && sizes[k] <= bucket->ranges()[k].bound;
    }
    if (holds) return *bucket;
  }
  throw ir::Error(fmt::format("{} is outside the ranges {}", kernels::SizesText(ranges_, sizes),
                              ToString(ranges_)));
}

std::vector<ir::Tensor> BucketedExecutable::Run(const std::vector<ir::Tensor>& inputs) {
  std::vector<int64_t> sizes = SizesOf(inputs);
  return BucketFor(sizes).RunAt(inputs, sizes);
}

std::unique_ptr<BucketedExecutable> BuildBucketed(const DynamicModuleSource& source,
                                                  const std::vector<kernels::DynamicRange>& buckets,
                                                  const BuildOptions& options) {
  std::vector<kernels::DynamicRanges> grid;
  for (const kernels::DynamicRange& bucket : buckets) {
    grid.push_back(source.ranges);
    grid.back().front() = bucket;
  }
  return BuildBucketed(source, grid, [&](const kernels::DynamicRanges&) { return options; });
}

std::unique_ptr<BucketedExecutable> BuildBucketed(
    const DynamicModuleSource& source, const std::vector<kernels::DynamicRanges>& grid,
    const std::function<BuildOptions(const kernels::DynamicRanges& bucket)>& options_for) {
  std::vector<std::unique_ptr<DynamicExecutable>> builds;
  for (const kernels::DynamicRanges& bucket : grid) {
    bool inside = bucket.size() == source.ranges.size();
    for (size_t k = 0; inside && k < bucket.size(); ++k) {
      const kernels::DynamicRange& whole = source.ranges[k];
      inside = bucket[k].symbol == whole.symbol && bucket[k].minimum >= whole.minimum &&
               bucket[k].bound <= whole.bound;
    }
    if (!inside) {
      throw ir::Error(fmt::format("the bucket {} is not part of the range {}", ToString(bucket),
                                  ToString(source.ranges)));
    }
    DynamicModuleSource part = source;
    part.ranges = bucket;
    builds.push_back(BuildDynamic(part, options_for(bucket)));
  }
  return std::make_unique<BucketedExecutable>(std::move(builds));
}

}  // namespace tandem::backends
