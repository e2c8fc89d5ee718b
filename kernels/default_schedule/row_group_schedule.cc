// Rule 2a of the default schedules: a row-wise group (softmax, layer norm) computed row by row,
// each row's reductions and its elementwise output in one pass over a row that stays in L1.
#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "kernels/default_schedule/register_tiling.h"
#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/schedule_error.h"

namespace tandem::kernels::default_schedule {

namespace {

// How many leading iterators of `block` are spatial when all its spatial iterators lead (0 when
// a spatial iterator follows a reduction one).
size_t LeadingSpatialIterators(const ir::Block& block) {
  size_t spatial = 0;
  while (spatial < block->iter_vars.size() &&
         block->iter_vars[spatial].kind == ir::IterKind::kSpatial) {
    ++spatial;
  }
  return CountIterators(block, ir::IterKind::kSpatial) == spatial ? spatial : 0;
}

// Vectors of partials per row: independent accumulation chains, so that a row's max or sum is
// not one chain of dependent vector operations.
constexpr int64_t kPartialVectors = 2;
// Rows computed together, and the bytes they may span: each stage runs over a few rows, so that
// the latency of combining one row's partials (a chain of scalar operations) overlaps with the
// next row's work, while the rows stay in L1.
constexpr int64_t kRowsPerStep = 8;
constexpr int64_t kRowStepBytes = int64_t{16} << 10;

}  // namespace

void DefaultScheduler::ComputeElementwiseStageAt(const std::string& name, const LoopRV& row,
                                                 size_t row_axes) {
  BlockRV stage = s_.GetBlock(name);
  s_.ComputeAt(stage, row);
  s_.SetScope(stage, 0, "local");
  std::vector<LoopRV> loops = s_.GetLoops(stage);
  size_t depth = loops.size() - BlockOf(s_, name)->iter_vars.size() + row_axes;
  std::vector<LoopRV> columns(loops.begin() + static_cast<ptrdiff_t>(depth), loops.end());
  if (columns.empty()) throw ScheduleError("no column loops under the row loop");
  LoopRV column = columns.size() > 1 ? s_.Fuse(columns) : columns[0];
  s_.Vectorize(s_.Split(column, {-1, options_.vector_lanes})[1]);
}

std::pair<LoopRV, LoopRV> DefaultScheduler::FuseRowsAndColumns(const RowGroup& group) {
  std::vector<LoopRV> loops = s_.GetLoops(s_.GetBlock(group.elementwise));
  if (loops.size() != BlockOf(s_, group.elementwise)->iter_vars.size()) {
    throw ScheduleError("unexpected loops");
  }
  auto middle = loops.begin() + static_cast<ptrdiff_t>(group.row_axes);
  std::vector<LoopRV> rows(loops.begin(), middle), columns(middle, loops.end());
  LoopRV row = rows.size() > 1 ? s_.Fuse(rows) : rows[0];
  LoopRV column = columns.size() > 1 ? s_.Fuse(columns) : columns[0];
  return {row, column};
}

std::optional<RowGroup> DefaultScheduler::FindRowGroup() const {
  std::vector<std::string> names;
  for (const std::string& name : s_.BlockNames()) {
    if (Exists(name) && !done_.count(name)) names.push_back(name);
  }
  if (names.size() < 2) return std::nullopt;
  RowGroup group;
  group.elementwise = names.back();
  group.stages.assign(names.begin(), names.end() - 1);
  if (IsReduction(BlockOf(s_, group.elementwise))) return std::nullopt;
  // The rows: the leading spatial iterators of the reductions.
  for (const std::string& name : group.stages) {
    const ir::Block block = BlockOf(s_, name);
    if (!IsReduction(block)) continue;
    size_t spatial = LeadingSpatialIterators(block);
    if (spatial == 0 || (group.row_axes != 0 && spatial != group.row_axes)) return std::nullopt;
    group.row_axes = spatial;
    group.rows = SpatialExtent(block);
    group.reduced_gcd = std::gcd(group.reduced_gcd, ReductionExtent(block));
    group.reductions.push_back(name);
  }
  if (group.reductions.empty()) return std::nullopt;
  // Every elementwise block (the last one, then any stage) over the same rows of one length.
  for (auto name = names.rbegin(); name != names.rend(); ++name) {
    const ir::Block block = BlockOf(s_, *name);
    if (IsReduction(block)) continue;
    if (block->init || block->iter_vars.size() <= group.row_axes) return std::nullopt;
    int64_t rows = 1, row_length = 1;
    for (size_t a = 0; a < block->iter_vars.size(); ++a) {
      (a < group.row_axes ? rows : row_length) *= block->iter_vars[a].extent;
    }
    if (rows != group.rows) return std::nullopt;
    if (group.row_length != 0 && row_length != group.row_length) return std::nullopt;
    group.row_length = row_length;
  }
  return group;
}

// A row group (FindRowGroup) whose rows are whole vectors long:
//   1. the partials' width: kPartialVectors vectors when every reduction's extent is a multiple
//      of it (at most DynamicAxisLanes when one walks a dynamic axis), else one vector;
//   2. the elementwise block's row loops fused and split into steps of a few rows (parallel
//      when the group is large enough), its other loops fused, split by the vector width and
//      vectorized;
//   3. each stage, last first: an elementwise one computed at the step loop into a "local"
//      buffer (a step's worth), its columns vectorized; a reduction's loops fused, split by the
//      width and factored into per-lane partials (rfactor), the combination and the partials
//      computed at the step loop into "local" buffers, the partials' lane loop vectorized and
//      their init decomposed.
// A row is then read once per reduction and once by the output while it stays in L1, instead of
// each stage sweeping the whole tensor. Skipped (false, schedule unchanged) when the blocks
// do not have that shape, a row is not whole vectors, or a step is illegal.
bool DefaultScheduler::ScheduleRowGroup() {
  std::optional<RowGroup> group = FindRowGroup();
  if (!group) return false;
  // 1. The width.
  int64_t native = options_.vector_lanes;
  if (group->reduced_gcd % native != 0 || group->row_length % native != 0) return false;
  // Partials at most DynamicAxisLanes wide where a reduction walks a dynamic axis (a row of a
  // few valid elements reads no more than one cache line or one vector of each).
  bool dynamic_reduction = false;
  for (const std::string& name : group->reductions) {
    const ir::Block reduction = BlockOf(s_, name);
    for (size_t k = 0; k < reduction->iter_vars.size(); ++k) {
      dynamic_reduction =
          dynamic_reduction ||
          (reduction->iter_vars[k].kind == ir::IterKind::kReduction && options_.IsDynamic(name, k));
    }
  }
  int64_t partial_lanes = kPartialVectors * native;
  if (dynamic_reduction) partial_lanes = std::min(partial_lanes, DynamicAxisLanes(native));
  int64_t lanes = group->reduced_gcd % partial_lanes == 0 && group->reduced_gcd / partial_lanes >= 2
                      ? partial_lanes
                      : native;
  // A step divides the innermost row axis, so that its rows are one box of the row axes (a step
  // across two rows of an outer axis would cover both whole).
  const ir::Block elementwise = BlockOf(s_, group->elementwise);
  int64_t row_bytes = group->row_length * ir::SizeOf(elementwise->writes.front().buffer->dtype);
  int64_t innermost_rows = elementwise->iter_vars[group->row_axes - 1].extent;
  int64_t step_rows = LargestDivisor(
      innermost_rows, std::max<int64_t>(1, std::min(kRowsPerStep, kRowStepBytes / row_bytes)));
  bool parallel = threads_ > 1 && group->rows / step_rows >= threads_ &&
                  group->rows * group->row_length >= options_.parallel_min_work;
  std::vector<std::string> scheduled;  // the blocks of the group, once every step succeeded
  bool ok = TrySteps(s_, [&] {
    // 2. The elementwise block.
    auto [row, column] = FuseRowsAndColumns(*group);
    if (step_rows > 1) row = s_.Split(row, {-1, step_rows})[0];
    s_.Vectorize(s_.Split(column, {-1, native})[1]);
    // 3. The stages, consumers before their producers.
    for (auto name = group->stages.rbegin(); name != group->stages.rend(); ++name) {
      const ir::Block block = BlockOf(s_, *name);
      scheduled.push_back(*name);
      if (!IsReduction(block)) {
        ComputeElementwiseStageAt(*name, row, group->row_axes);
        continue;
      }
      size_t rank = block->writes.front().buffer->shape.size();
      std::vector<LoopRV> reduction_loops = s_.GetLoops(s_.GetBlock(*name));
      std::vector<LoopRV> reduced(reduction_loops.begin() + static_cast<ptrdiff_t>(group->row_axes),
                                  reduction_loops.end());
      LoopRV fused = reduced.size() > 1 ? s_.Fuse(reduced) : reduced[0];
      BlockRV partials = s_.RFactor(s_.Split(fused, {-1, lanes})[1], static_cast<int>(rank));
      BlockRV combination = s_.GetBlock(*name);
      s_.ComputeAt(combination, row);
      s_.SetScope(combination, 0, "local");
      s_.ComputeAt(partials, row);
      s_.SetScope(partials, 0, "local");
      // Under the row loop, compute_at leaves the partials' loops in iterator order: the lane
      // (spatial) loop, then the reduction loop. The lanes go innermost.
      std::vector<LoopRV> partial_loops = s_.GetLoops(partials);
      if (partial_loops.size() < 3) throw ScheduleError("unexpected partial loops");
      LoopRV lane = partial_loops[partial_loops.size() - 2];
      LoopRV step = partial_loops.back();
      s_.Reorder({step, lane});
      s_.Vectorize(lane);
      BlockRV init = s_.DecomposeReduction(partials, step);
      s_.Vectorize(s_.GetLoops(init).back());
      scheduled.push_back(s_.BlockName(partials));
      scheduled.push_back(s_.BlockName(init));
    }
    if (parallel) s_.Parallel(row);
    scheduled.push_back(group->elementwise);
  });
  if (ok) done_.insert(scheduled.begin(), scheduled.end());
  return ok;
}

}  // namespace tandem::kernels::default_schedule
