// BucketedExecutable: a model built for ranges of sizes of its dynamic symbols as several dynamic
// builds, one per bucket, each compiled (and, with a tuning database, scheduled) at its own
// bounds; a run goes to the bucket holding its sizes. The buckets split the ranges as a grid:
// each symbol's range into consecutive parts (a symbol not split keeps its whole range), one
// bucket per combination.
//
// One dynamic build for [1, 128] allocates and tiles for 128, so a run at 16 pays for partial
// tiles and loop overheads sized for 128. Buckets such as [1, 32] and [33, 128] bound that
// overhead by the ratio of a bucket's bound to its smallest size, at the cost of one build (and
// one tuning) per bucket; for an image's height and width, both split. Every bucket must give
// the model the same signature: the same inputs and outputs with the same extents along the
// dynamic axes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/runtime/dynamic_executable.h"

namespace tandem::backends {

class BucketedExecutable {
 public:
  // The builds, one per bucket, of the same symbols in the same order, whose ranges split each
  // symbol's whole range into consecutive parts and hold every combination of them once, with
  // equal signatures. Error naming the bucket otherwise.
  explicit BucketedExecutable(std::vector<std::unique_ptr<DynamicExecutable>> buckets);

  // Inputs in parameter order at sizes within the whole ranges (Error naming the input
  // otherwise). Runs the bucket holding the sizes; returns the outputs.
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);
  // The symbols' sizes the inputs' shapes give, in the order of ranges() (the same Errors as
  // Run).
  std::vector<int64_t> SizesOf(const std::vector<ir::Tensor>& inputs) const;
  // The bucket that runs `sizes` (one per symbol, within ranges()).
  DynamicExecutable& BucketFor(const std::vector<int64_t>& sizes);

  // The first symbol's whole range.
  const kernels::DynamicRange& range() const { return ranges_.front(); }
  // Every symbol's whole range.
  const kernels::DynamicRanges& ranges() const { return ranges_; }
  // Whether the buckets split the first symbol's range only: every other symbol keeps its whole
  // range in every bucket (a bucket is then named by its first range alone).
  bool SplitsFirstSymbolOnly() const;
  const std::vector<std::unique_ptr<DynamicExecutable>>& buckets() const { return buckets_; }
  std::vector<std::string> InputSignatures() const { return buckets_[0]->InputSignatures(); }
  std::vector<std::string> OutputSignatures() const { return buckets_[0]->OutputSignatures(); }

 private:
  std::vector<std::unique_ptr<DynamicExecutable>> buckets_;
  kernels::DynamicRanges ranges_;
};

// One BuildDynamic per bucket of the first of `source.ranges` (kernels::ParseDynamicBuckets),
// the other symbols keeping their whole ranges, with the same module source and build options.
std::unique_ptr<BucketedExecutable> BuildBucketed(const DynamicModuleSource& source,
                                                  const std::vector<kernels::DynamicRange>& buckets,
                                                  const BuildOptions& options = {});
// One BuildDynamic per bucket of a grid (kernels::ParseDynamicBucketGrid: one range per symbol
// of `source.ranges` each), each bucket's build options from `options_for` (called once per
// bucket, in order): a schedule provider of its own, say.
std::unique_ptr<BucketedExecutable> BuildBucketed(
    const DynamicModuleSource& source, const std::vector<kernels::DynamicRanges>& grid,
    const std::function<BuildOptions(const kernels::DynamicRanges& bucket)>& options_for);

}  // namespace tandem::backends
