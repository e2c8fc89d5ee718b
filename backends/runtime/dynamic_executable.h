// DynamicExecutable: a model built once for every size within the ranges of one or more dynamic
// symbols (a sequence length, a batch), instead of once per size.
//
// BuildDynamic:
//   1. makes the module through the caller's `make` (the same import and graph pipeline each
//      time, stopping before kernels are lowered) with every symbol at its bound, then with one
//      symbol at a time one below it, then with all at their minimum (2 instead of a minimum
//      of 1 when the range reaches 4: at size 1 folding degenerates), and compares them value
//      by value: every extent must be scale * n + offset (scale >= 0) in the size n of one
//      symbol at most, or a window of an operand's extent, floor((operand + c) / stride) (a
//      convolution or pooling with strides along the axis; where two windows fit the sizes
//      compared, the module is made once more at a size where they differ), the graphs must
//      otherwise be the same, and a constant that changes with a size must be, at the smaller
//      sizes, the valid prefix of its value at the bounds (a position table sliced to n is; a
//      table computed from n may not be);
//   2. adds the graph parameter `dynamic_extent` (i64[number of symbols], last) and builds the
//      module at the bounds with kernels::DynamicLowering: every kernel touching a dynamic
//      value is planned on its compute definition and guarded so that only the valid prefix is
//      computed (kernels/dynamic_extent.h); a mean over a dynamic axis divides by the valid
//      length (kernels/dynamic_means.h); what cannot be computed so (an average pool padded
//      along a dynamic axis, an axis merging two symbols) is an Error naming the op or value
//      and the reason.
// Run finds the sizes from the inputs' shapes, copies the inputs into tensors at the bounds,
// runs, and returns the valid prefixes of the outputs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/runtime/executable.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "kernels/dynamic_extent.h"

namespace tandem::backends {

struct DynamicModuleSource {
  // The symbols and their ranges (kernels::CheckDynamicRanges); BuildBucketed splits the first.
  kernels::DynamicRanges ranges;
  // The module at the symbols' sizes (in the order of `ranges`): graph-level passes applied, op
  // calls not yet lowered.
  std::function<ir::IRModule(const std::vector<int64_t>& sizes)> make;
};

class DynamicExecutable {
 public:
  // Inputs in parameter order, each of the shape its extents give at sizes within the ranges
  // (Error naming the input otherwise). Returns the outputs at those sizes.
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);
  // The symbols' sizes the inputs' shapes give, in the order of ranges() (the same Errors as
  // Run).
  std::vector<int64_t> SizesOf(const std::vector<ir::Tensor>& inputs) const;
  // The same with the symbols within `allowed` (one range per symbol, in order) instead of
  // their ranges in this build (for a caller choosing among the builds of several ranges of
  // them, BucketedExecutable).
  std::vector<int64_t> SizesWithin(const std::vector<ir::Tensor>& inputs,
                                   const kernels::DynamicRanges& allowed) const;

  const kernels::DynamicRanges& ranges() const { return ranges_; }
  // The first symbol's range (the one buckets split).
  const kernels::DynamicRange& range() const { return ranges_.front(); }
  Executable& executable() { return *executable_; }
  // "ids: i64[batch, seq]" per input, "f32[batch, seq, 64]" per output.
  std::vector<std::string> InputSignatures() const;
  std::vector<std::string> OutputSignatures() const;

 private:
  friend class BucketedExecutable;  // runs a bucket at the size it checked itself
  // Run at `sizes`, which the inputs' shapes give (SizesOf or SizesWithin checked them).
  std::vector<ir::Tensor> RunAt(const std::vector<ir::Tensor>& inputs,
                                const std::vector<int64_t>& sizes);

  friend std::unique_ptr<DynamicExecutable> BuildDynamic(const DynamicModuleSource& source,
                                                         const BuildOptions& options);

  kernels::DynamicRanges ranges_;
  std::unique_ptr<Executable> executable_;
  std::vector<std::string> input_names_;
  std::vector<ir::TensorType> input_types_;  // at the bound
  std::vector<kernels::TensorExtents> input_extents_;
  std::vector<kernels::TensorExtents> output_extents_;
  std::vector<ir::Tensor> staged_inputs_;  // per dynamic input, at the bound
  std::vector<ir::Tensor> staged_outputs_;
  ir::Tensor extent_;
};

std::unique_ptr<DynamicExecutable> BuildDynamic(const DynamicModuleSource& source,
                                                const BuildOptions& options = {});

}  // namespace tandem::backends
