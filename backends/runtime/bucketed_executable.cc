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

int64_t BucketedExecutable::SizeOf(const std::vector<ir::Tensor>& inputs) const {
  // Every bucket reads sizes alike (equal signatures); the first one checks the whole range.
  return buckets_[0]->SizeWithin(inputs, range_);
}

DynamicExecutable& BucketedExecutable::BucketFor(int64_t n) {
  for (const std::unique_ptr<DynamicExecutable>& bucket : buckets_) {
    if (n <= bucket->range().bound) return *bucket;
  }
  throw ir::Error(fmt::format("{}={} is outside the range {}", range_.symbol, n, ToString(range_)));
}

std::vector<ir::Tensor> BucketedExecutable::Run(const std::vector<ir::Tensor>& inputs) {
  int64_t n = SizeOf(inputs);
  return BucketFor(n).RunAt(inputs, n);
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
    if (bucket.symbol != source.range.symbol || bucket.minimum < source.range.minimum ||
        bucket.bound > source.range.bound) {
      throw ir::Error(fmt::format("the bucket {} is not part of the range {}", ToString(bucket),
                                  ToString(source.range)));
    }
    builds.push_back(BuildDynamic({bucket, source.make}, options_for(bucket)));
  }
  return std::make_unique<BucketedExecutable>(std::move(builds));
}

}  // namespace tandem::backends
