// Step 1 of BuildDynamic (backends/runtime/dynamic_executable.h): the extents of a module's
// values, found by comparing the module made at several sizes of its symbols.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/dynamic_extent.h"

namespace tandem::backends {

// Copies the common prefix block of `from` (shape `from_shape`) into `to` (shape `to_shape`):
// index tuples below both shapes on every axis.
void CopyPrefix(const uint8_t* from, const ir::Shape& from_shape, uint8_t* to,
                const ir::Shape& to_shape, int64_t element_bytes);

// The low size at which BuildDynamic compares the module: the range's minimum, or 2 when the
// minimum is 1 and the range reaches 4. At size 1 broadcasting and constant folding degenerate:
// an expand to [1, ...] is no op, and a rotary table sliced to position 0 holds cos 0 = 1 and
// sin 0 = 0, so SimplifyExpr drops its multiply. Such a module has fewer nodes but computes the
// same function as the module at the bounds restricted to size 1; every size the samples do not
// reach, 1 among them, is run as the bounds' module restricted to it.
int64_t LowSample(const kernels::DynamicRange& range);

// Thrown by the comparison when the sizes compared do not tell which of two windows an axis's
// length is: `sizes` is where they differ, one more size to compare the module at.
struct UndecidedLength {
  std::vector<int64_t> sizes;
};

// The extents of every value of `functions` (the same graph made at each of `sizes`, one size per
// symbol of `ranges` in each) with a dynamic axis, by value name (a tuple element's by
// kernels::TupleElementName). sizes[0] must have every symbol at its bound and sizes[1 + k]
// symbol k one below it; every further size checks the extents found. An extent is affine in one
// symbol, or a window of an operand's extent (floor((operand + c) / stride)). Error naming the
// value and the sizes when the graphs differ otherwise, an extent is neither, or a constant that
// changes with a size is not the prefix of its value at the bounds; UndecidedLength when two
// windows fit every size compared (compare once more at its sizes).
std::map<std::string, kernels::TensorExtents> CompareAtSizes(
    const kernels::DynamicRanges& ranges, const std::vector<std::vector<int64_t>>& sizes,
    const std::vector<const ir::GraphFunction*>& functions);

}  // namespace tandem::backends
