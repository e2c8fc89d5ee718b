// Means over a dynamic axis in a dynamic kernel (kernels/dynamic_extent.h).
//
// `mean`'s compute definition sums into a buffer (a block named "mean_sum", made unique in a
// fused group; "global_avg_pool2d_sum" for a global average pool, likewise) and divides the sum
// by the number of reduced elements. Built at the bound, that
// number is a constant; at a smaller size only the valid prefix of a dynamic axis is summed, so
// the division must use the valid length instead. The kernel is scheduled (and tuned) as the
// mean at the bound is, and the applied plan replaces the constant divisor by the count at run
// time: the tuned schedule of a mean serves the dynamic build.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/kernel/expr.h"
#include "ir/kernel/stmt.h"
#include "kernels/dynamic_extent.h"

namespace tandem::kernels {

// The means of the unscheduled kernel `kernel` whose sum reduces over a dynamic iterator of
// `iterators` (its plan's), with their counts.
std::vector<MeanCount> PlanMeanCounts(const ir::KernelFunction& kernel,
                                      const std::vector<DynamicIterator>& iterators);

// The mean a buffer holds the sum of, by buffer name: the buffer each mean sums into, and in a
// scheduled kernel the buffers its sum block writes there (an accumulator cache).
using MeanOfBuffer = std::map<std::string, const MeanCount*>;
MeanOfBuffer MeansByBuffer(const std::vector<MeanCount>& means, const ir::Stmt& scheduled_body);

// `e` with every division of a load of a mean's sum (found by `means`) by the mean's count at
// the bound rewritten to divide by the count at run time: static_count times the valid lengths
// `limit` gives (an i64 expression) of its dynamic axes, cast to the division's type. Each
// rewrite adds one to `rewritten[block]` (the mean's sum block).
ir::Expr DivideMeansByValidCount(const ir::Expr& e, const MeanOfBuffer& means,
                                 const std::function<ir::Expr(const AxisExtent&)>& limit,
                                 std::map<std::string, int>& rewritten);

}  // namespace tandem::kernels
