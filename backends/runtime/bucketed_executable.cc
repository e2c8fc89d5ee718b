#include "backends/runtime/bucketed_executable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/error.h"

namespace tandem::backends {

using kernels::ToString;

BucketedExecutable::BucketedExecutable(std::vector<std::unique_ptr<DynamicExecutable>> buckets)
    : buckets_(std::move(buckets)) {
  if (buckets_.empty()) throw ir::Error("a bucketed build needs at least one bucket");
  const DynamicExecutable& first = *buckets_[0];
  for (size_t b = 1; b < buckets_.size(); ++b) {
    const DynamicExecutable& bucket = *buckets_[b];
    const kernels::DynamicRange& previous = buckets_[b - 1]->range();
    bool same_others = bucket.ranges().size() == first.ranges().size();
    for (size_t k = 1; same_others && k < first.ranges().size(); ++k) {
      const kernels::DynamicRange& a = first.ranges()[k];
      const kernels::DynamicRange& b = bucket.ranges()[k];
      same_others = a.symbol == b.symbol && a.minimum == b.minimum && a.bound == b.bound;
    }
    if (!same_others) {
      throw ir::Error(fmt::format("the bucket {} has other symbols than the bucket {}",
                                  ToString(bucket.ranges()), ToString(first.ranges())));
    }
    if (bucket.range().symbol != first.range().symbol ||
        bucket.range().minimum != previous.bound + 1) {
      throw ir::Error(fmt::format("the bucket {} does not follow the bucket {}",
                                  ToString(bucket.range()), ToString(previous)));
    }
    auto differ = [&](const std::vector<std::string>& a, const std::vector<std::string>& b) {
      return a != b ? fmt::format("{}", fmt::join(a, ", ")) + " against " +
                          fmt::format("{}", fmt::join(b, ", "))
                    : std::string();
    };
    std::string inputs = differ(first.InputSignatures(), bucket.InputSignatures());
    std::string outputs = differ(first.OutputSignatures(), bucket.OutputSignatures());
    if (!inputs.empty() || !outputs.empty()) {
      throw ir::Error(fmt::format(
          "the bucket {} gives the model another signature than the bucket {}: {}",
          ToString(bucket.range()), ToString(first.range()), inputs.empty() ? outputs : inputs));
    }
  }
  range_ = {first.range().symbol, first.range().minimum, buckets_.back()->range().bound};
}

std::vector<int64_t> BucketedExecutable::SizesOf(const std::vector<ir::Tensor>& inputs) const {
  // Every bucket reads sizes alike (equal signatures); the first one checks the whole range.
  return buckets_[0]->SizesWithin(inputs, range_);
}

DynamicExecutable& BucketedExecutable::BucketFor(int64_t n) {
  for (const std::unique_ptr<DynamicExecutable>& bucket : buckets_) {
    if (n <= bucket->range().bound) return *bucket;
  }
  throw ir::Error(fmt::format("{}={} is outside the range {}", range_.symbol, n, ToString(range_)));
}

std::vector<ir::Tensor> BucketedExecutable::Run(const std::vector<ir::Tensor>& inputs) {
  std::vector<int64_t> sizes = SizesOf(inputs);
  return BucketFor(sizes.front()).RunAt(inputs, sizes);
}

std::unique_ptr<BucketedExecutable> BuildBucketed(const DynamicModuleSource& source,
                                                  const std::vector<kernels::DynamicRange>& buckets,
                                                  const BuildOptions& options) {
  return BuildBucketed(source, buckets, [&](const kernels::DynamicRange&) { return options; });
}

std::unique_ptr<BucketedExecutable> BuildBucketed(
    const DynamicModuleSource& source, const std::vector<kernels::DynamicRange>& buckets,
    const std::function<BuildOptions(const kernels::DynamicRange& bucket)>& options_for) {
  std::vector<std::unique_ptr<DynamicExecutable>> builds;
  for (const kernels::DynamicRange& bucket : buckets) {
    const kernels::DynamicRange& whole = source.ranges.at(0);
    if (bucket.symbol != whole.symbol || bucket.minimum < whole.minimum ||
        bucket.bound > whole.bound) {
      throw ir::Error(fmt::format("the bucket {} is not part of the range {}", ToString(bucket),
                                  ToString(whole)));
    }
    DynamicModuleSource part = source;
    part.ranges.front() = bucket;
    builds.push_back(BuildDynamic(part, options_for(bucket)));
  }
  return std::make_unique<BucketedExecutable>(std::move(builds));
}

}  // namespace tandem::backends
