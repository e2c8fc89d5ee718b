// BucketedExecutable: a model built for a range of sizes of a dynamic symbol as several dynamic
// builds, one per bucket (a consecutive part of the range of the build's first symbol; any other
// symbols keep their whole ranges in every bucket), each compiled (and, with a tuning database,
// scheduled) at its own bound; a run goes to the bucket holding its size.
//
// One dynamic build for [1, 128] allocates and tiles for 128, so a run at 16 pays for partial
// tiles and loop overheads sized for 128. Buckets such as [1, 32] and [33, 128] bound that
// overhead by the ratio of a bucket's bound to its smallest size, at the cost of one build (and
// one tuning) per bucket. Every bucket must give the model the same signature: the same inputs
// and outputs with the same extents (scale * n + offset) along the dynamic axis.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/runtime/dynamic_executable.h"

namespace tandem::backends {

class BucketedExecutable {
 public:
  // The builds, one per bucket, in order of their first ranges, which must be consecutive (each
  // bucket's minimum one past the previous bound) and of one symbol, with the same other
  // symbols and ranges and with equal signatures.
  // Error naming the bucket otherwise.
  explicit BucketedExecutable(std::vector<std::unique_ptr<DynamicExecutable>> buckets);

  // Inputs in parameter order at sizes within the whole ranges (Error naming the input
  // otherwise). Runs the bucket holding the first symbol's size; returns the outputs.
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);
  // The symbols' sizes the inputs' shapes give, in the order of ranges() (the same Errors as
  // Run).
  std::vector<int64_t> SizesOf(const std::vector<ir::Tensor>& inputs) const;
  // The bucket that runs the first symbol's size n (n within range()).
  DynamicExecutable& BucketFor(int64_t n);

  // The first symbol's whole range: the first bucket's minimum to the last one's bound.
  const kernels::DynamicRange& range() const { return range_; }
  // The symbols of every bucket, the first one with its whole range.
  kernels::DynamicRanges ranges() const {
    kernels::DynamicRanges all = buckets_[0]->ranges();
    all.front() = range_;
    return all;
  }
  const std::vector<std::unique_ptr<DynamicExecutable>>& buckets() const { return buckets_; }
  std::vector<std::string> InputSignatures() const { return buckets_[0]->InputSignatures(); }
  std::vector<std::string> OutputSignatures() const { return buckets_[0]->OutputSignatures(); }

 private:
  std::vector<std::unique_ptr<DynamicExecutable>> buckets_;
  kernels::DynamicRange range_;
};

// One BuildDynamic per bucket of the first of `source.ranges` (kernels::ParseDynamicBuckets),
// with the same module source and build options.
std::unique_ptr<BucketedExecutable> BuildBucketed(const DynamicModuleSource& source,
                                                  const std::vector<kernels::DynamicRange>& buckets,
                                                  const BuildOptions& options = {});
// The same with each bucket's build options from `options_for` (called once per bucket, in
// order): a schedule provider of its own, say.
std::unique_ptr<BucketedExecutable> BuildBucketed(
    const DynamicModuleSource& source, const std::vector<kernels::DynamicRange>& buckets,
    const std::function<BuildOptions(const kernels::DynamicRange& bucket)>& options_for);

}  // namespace tandem::backends
