// BucketedExecutable: a model built for a range of sizes of one dynamic axis as several dynamic
// builds, one per bucket (a consecutive part of the range), each compiled (and, with a tuning
// database, scheduled) at its own bound; a run goes to the bucket holding its size.
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
  // The builds, one per bucket, in order of their ranges, which must be consecutive (each
  // bucket's minimum one past the previous bound) and of one symbol, with equal signatures.
  // Error naming the bucket otherwise.
  explicit BucketedExecutable(std::vector<std::unique_ptr<DynamicExecutable>> buckets);

  // Inputs in parameter order at one n within the whole range (Error naming the input
  // otherwise). Runs the bucket holding n; returns the outputs at n.
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);
  // The n the inputs' shapes give (the same Errors as Run).
  int64_t SizeOf(const std::vector<ir::Tensor>& inputs) const;
  // The bucket that runs size n (n within range()).
  DynamicExecutable& BucketFor(int64_t n);

  // The whole range: the first bucket's minimum to the last one's bound.
  const kernels::DynamicRange& range() const { return range_; }
  const std::vector<std::unique_ptr<DynamicExecutable>>& buckets() const { return buckets_; }
  std::vector<std::string> InputSignatures() const { return buckets_[0]->InputSignatures(); }
  std::vector<std::string> OutputSignatures() const { return buckets_[0]->OutputSignatures(); }

 private:
  std::vector<std::unique_ptr<DynamicExecutable>> buckets_;
  kernels::DynamicRange range_;
};

// One BuildDynamic per bucket of `source.range` (kernels::ParseDynamicBuckets), with the same
// module source and build options.
std::unique_ptr<BucketedExecutable> BuildBucketed(const DynamicModuleSource& source,
                                                  const std::vector<kernels::DynamicRange>& buckets,
                                                  const BuildOptions& options = {});
// The same with each bucket's build options from `options_for` (called once per bucket, in
// order): a schedule provider of its own, say.
std::unique_ptr<BucketedExecutable> BuildBucketed(
    const DynamicModuleSource& source, const std::vector<kernels::DynamicRange>& buckets,
    const std::function<BuildOptions(const kernels::DynamicRange& bucket)>& options_for);

}  // namespace tandem::backends
