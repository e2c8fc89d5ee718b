// DynamicExecutable: a model built once for every size n in [minimum, bound] of one dynamic axis
// (a sequence length, a batch), instead of once per size.
//
// BuildDynamic:
//   1. makes the module at n = bound, bound - 1 and minimum through the caller's `make` (the
//      same import and graph pipeline each time, stopping before kernels are lowered) and
//      compares them value by value: every extent must be scale * n + offset (scale >= 0), the
//      graphs must otherwise be the same, and a constant that changes with n must be, at each
//      smaller size, the valid prefix of its value at the bound (a position table sliced to n
//      is; a table computed from n may not be);
//   2. adds the graph parameter `dynamic_extent` (i64[1], last) and builds the module at the
//      bound with kernels::DynamicLowering: every kernel touching a dynamic value is planned on
//      its compute definition and guarded so that only the valid prefix is computed
//      (kernels/dynamic_extent.h); what cannot be (a window or a concatenation along the axis,
//      a mean over it) is an Error naming the op and the reason.
// Run finds n from the inputs' shapes, copies the inputs into tensors at the bound, runs, and
// returns the valid prefixes of the outputs.
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
  kernels::DynamicRange range;
  // The module for the dynamic size n: graph-level passes applied, op calls not yet lowered.
  std::function<ir::IRModule(int64_t n)> make;
};

class DynamicExecutable {
 public:
  // Inputs in parameter order, each of the shape its extents give at one n within the range
  // (Error naming the input otherwise). Returns the outputs at that n.
  std::vector<ir::Tensor> Run(const std::vector<ir::Tensor>& inputs);
  // The n the inputs' shapes give (the same Errors as Run).
  int64_t SizeOf(const std::vector<ir::Tensor>& inputs) const;
  // The same within `allowed` instead of this build's range (for a caller choosing among the
  // builds of several ranges of the same symbol, BucketedExecutable).
  int64_t SizeWithin(const std::vector<ir::Tensor>& inputs,
                     const kernels::DynamicRange& allowed) const;

  const kernels::DynamicRange& range() const { return range_; }
  Executable& executable() { return *executable_; }
  // "[1, seq]" per input and output.
  std::vector<std::string> InputSignatures() const;
  std::vector<std::string> OutputSignatures() const;

 private:
  friend class BucketedExecutable;  // runs a bucket at the size it checked itself
  // Run at n, which the inputs' shapes give (SizeOf or SizeWithin checked them).
  std::vector<ir::Tensor> RunAt(const std::vector<ir::Tensor>& inputs, int64_t n);

  friend std::unique_ptr<DynamicExecutable> BuildDynamic(const DynamicModuleSource& source,
                                                         const BuildOptions& options);

  kernels::DynamicRange range_;
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
