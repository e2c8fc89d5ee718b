// Rules 3 and 4 of the default schedules: reductions split into per-lane partials, and the
// simple rule for the other reductions.
#include <optional>

#include "ir/error.h"
#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"

namespace tandem::kernels::default_schedule {

// A reduction whose innermost reduction iterator walks its input contiguously (a row sum, a
// softmax's max and sum, a norm) while the spatial axes would need gathers: the innermost
// reduction loop is split by a vector tile and factored out (rfactor) into partial results,
// one per lane, computed with contiguous vector loads (several vectors for independent
// accumulation chains); a small loop then combines the partials. This reassociates the
// reduction (results differ in rounding, as with any vectorized sum).
//
// Steps:
//   1. the block qualifies: one store, every load contiguous or constant along the innermost
//      (reduction) iterator;
//   2. the partials' width: several vectors for a single reduction, one per row otherwise;
//   3. the innermost loop split by it and factored out (rfactor), the partial loop vectorized,
//      the partials' init decomposed and vectorized;
//   4. the spatial loops of the partials, and of their combination, fused and parallel when
//      the work is large enough.
bool DefaultScheduler::ScheduleRowReduction(const std::string& name) {
  // 1. The block.
  const ir::Block block = BlockOf(s_, name);
  AccessModel model(block);
  if (!model.valid() || block->iter_vars.back().kind != ir::IterKind::kReduction) return false;
  int axis = static_cast<int>(block->iter_vars.size()) - 1;
  int64_t extent = block->iter_vars.back().extent;
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> stride = model.Stride(load, axis);
    if (!stride || (*stride != 0 && *stride != 1)) return false;
  }
  // 2. The width. One reduction (a norm): several vectors of partials for independent chains; many
  // rows (softmax): one vector per row, so that combining the partials stays cheap.
  int64_t lanes = 0;
  int64_t native = options_.vector_lanes;
  std::vector<int64_t> widths{native};
  if (SpatialExtent(block) == 1) widths = {4 * native, 2 * native, native};
  for (int64_t t : widths) {
    if (lanes == 0 && extent % t == 0 && extent / t >= 2) lanes = t;
  }
  if (lanes == 0) return false;
  int64_t work = SpatialExtent(block) * ReductionExtent(block);
  return TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.size() != block->iter_vars.size()) throw ScheduleError("unexpected loop nest");
    // 3. The partials.
    std::vector<LoopRV> parts = s_.Split(loops.back(), {-1, lanes});
    size_t rank = 0;
    for (const ir::BufferRegion& w : block->writes) rank = w.buffer->shape.size();
    BlockRV rf = s_.RFactor(parts[1], static_cast<int>(rank));
    std::vector<LoopRV> rf_loops = s_.GetLoops(rf);
    // The partial loop (now spatial) is innermost: vectorize it; spatial loops outside.
    s_.Vectorize(rf_loops.back());
    size_t first_reduction = 0;
    while (first_reduction < block->iter_vars.size() &&
           block->iter_vars[first_reduction].kind == ir::IterKind::kSpatial) {
      ++first_reduction;
    }
    BlockRV init = s_.DecomposeReduction(rf, rf_loops[first_reduction]);
    std::vector<LoopRV> init_loops = s_.GetLoops(init);
    s_.Vectorize(init_loops.back());
    // 4. Threads.
    if (first_reduction > 0 && work >= options_.parallel_min_work && threads_ > 1) {
      std::vector<LoopRV> spatial(rf_loops.begin(),
                                  rf_loops.begin() + static_cast<std::ptrdiff_t>(first_reduction));
      LoopRV fused = spatial.size() > 1 ? s_.Fuse(spatial) : spatial[0];
      if (s_.LoopExtent(fused) >= threads_) {
        s_.Parallel(fused);
        // The combination of the partials: its spatial loops parallel too.
        TrySteps(s_, [&] {
          std::vector<LoopRV> combine = s_.GetLoops(s_.GetBlock(name));
          std::vector<LoopRV> outer(combine.begin(),
                                    combine.begin() + static_cast<std::ptrdiff_t>(first_reduction));
          s_.Parallel(outer.size() > 1 ? s_.Fuse(outer) : outer[0]);
        });
      }
    }
    done_.insert(name);
    done_.insert(s_.BlockName(rf));
    done_.insert(s_.BlockName(init));
  });
}

// The simple rule for a reduction block.
//
// Steps:
//   1. the innermost spatial loop split by the widest divisor up to the vector width, the one
//      before it by up to 4 (the register tile);
//   2. order [outer spatial] [vector outer] [reduction] [tile] [vector], the tile unrolled, the
//      vector loop vectorized, init decomposed;
//   3. the outer spatial loops fused and parallel when the block is large enough;
//   4. pointwise epilogues computed under the fused loop, each vectorized.
void DefaultScheduler::ScheduleReduction(const std::string& name) {
  const ir::Block block = BlockOf(s_, name);
  size_t num_spatial = CountIterators(block, ir::IterKind::kSpatial);
  if (num_spatial == 0) return;
  TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.size() != block->iter_vars.size()) throw ScheduleError("unexpected loop nest");
    std::vector<LoopRV> spatial(loops.begin(),
                                loops.begin() + static_cast<std::ptrdiff_t>(num_spatial));
    std::vector<LoopRV> reduction(loops.begin() + static_cast<std::ptrdiff_t>(num_spatial),
                                  loops.end());
    // 1. Vectorize the innermost spatial axis, register-tile the one before it.
    LoopRV last = spatial.back();
    int64_t lanes = LargestDivisor(s_.LoopExtent(last), options_.vector_lanes);
    std::vector<LoopRV> outer_spatial(spatial.begin(), spatial.end() - 1);
    LoopRV vec_outer = last;
    std::optional<LoopRV> vec;
    if (lanes >= 4) {
      auto parts = s_.Split(last, {-1, lanes});
      vec_outer = parts[0];
      vec = parts[1];
    }
    std::optional<LoopRV> tile;
    if (!outer_spatial.empty()) {
      LoopRV second = outer_spatial.back();
      int64_t t = LargestDivisor(s_.LoopExtent(second), 4);
      if (t > 1) {
        auto parts = s_.Split(second, {-1, t});
        outer_spatial.back() = parts[0];
        tile = parts[1];
      }
    }
    // 2. The order.
    std::vector<LoopRV> order = outer_spatial;
    order.push_back(vec_outer);
    order.insert(order.end(), reduction.begin(), reduction.end());
    if (tile) order.push_back(*tile);
    if (vec) order.push_back(*vec);
    s_.Reorder(order);
    if (tile) s_.Unroll(*tile);
    if (vec) s_.Vectorize(*vec);
    if (!reduction.empty()) {
      TrySteps(s_, [&] { s_.DecomposeReduction(b, reduction.front()); });
    }
    // 3. Parallelize the outer spatial loops.
    std::vector<LoopRV> to_fuse = outer_spatial;
    to_fuse.push_back(vec_outer);
    LoopRV parallel = to_fuse.front();
    if (to_fuse.size() > 1) {
      TrySteps(s_, [&] { parallel = s_.Fuse(to_fuse); });
    }
    if (SpatialExtent(block) >= options_.parallel_min_work && threads_ > 1) {
      TrySteps(s_, [&] { s_.Parallel(parallel); });
    }
    done_.insert(name);
    // 4. A pointwise epilogue that reads this block's output runs right after each tile.
    for (const std::string& consumer : s_.BlockNames()) {
      if (consumer == name || done_.count(consumer)) continue;
      const ir::Block& c = BlockOf(s_, consumer);
      if (IsReduction(c) || c->init || !ReadsAnyOf(c, block)) continue;
      if (TrySteps(s_, [&] { s_.ReverseComputeAt(s_.GetBlock(consumer), parallel); })) {
        done_.insert(consumer);
        ScheduleSpatialInner(consumer);
      }
    }
  });
}

}  // namespace tandem::kernels::default_schedule
