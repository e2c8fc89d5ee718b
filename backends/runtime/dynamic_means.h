// Means over a dynamic axis in a dynamic build (backends/runtime/dynamic_executable.h).
//
// A mean divides by the number of elements it reduces; along a dynamic axis that number is the
// axis's valid length at run time, not its length at the bound, so a mean's own kernel (which
// divides by a constant) cannot serve every size. DivideMeansByValidLength rewrites each such
// mean into the sum of the same axes divided by the count computed at run time from the build's
// extent parameter.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "kernels/dynamic_extent.h"

namespace tandem::backends {

// `fn` with every `mean` call that reduces a dynamic axis of its operand (its extents in
// `values`, by value name) replaced by:
//   1. the valid length of each reduced dynamic axis, scale * n + offset with n read from
//      `extent` (the graph parameter i64[number of symbols] holding the sizes), in the mean's
//      data type, times the extents of the reduced static axes: one small call chain per mean;
//   2. `sum` of the same axes, named after the mean with "_sum" appended;
//   3. `divide` of that sum by the count, under the mean's name.
// The sum and the division keep the mean's annotations (its fusion group: the count is read
// from outside it), and `values` gains the sum's extents, which are the mean's. Other nodes are
// copied unchanged; a graph without such a mean is returned as it is.
ir::GraphFunction DivideMeansByValidLength(const ir::GraphFunction& fn, ir::ValueId extent,
                                           const kernels::DynamicRanges& ranges,
                                           std::map<std::string, kernels::TensorExtents>& values);

}  // namespace tandem::backends
