// Rules 5 and 6 of the default schedules: case splits and the other spatial blocks.
#include <algorithm>
#include <numeric>
#include <optional>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/case_split.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"

namespace tandem::kernels::default_schedule {

namespace {

// Largest number of copies a case split's selecting loops are unrolled into.
constexpr int64_t kMaxCaseSplitCopies = 64;

// The gcd of the points where a comparison of `block`'s innermost iterator with a constant
// changes (i < c and i >= c between c - 1 and c, i <= c and i > c between c and c + 1) in the
// values it stores: a concat along its innermost axis selects its part by i < 256, i < 288, ...
// 0 when there is no such comparison.
int64_t InnermostThresholdGcd(const ir::Block& block) {
  if (block->iter_vars.empty()) return 0;
  const ir::Var& innermost = block->iter_vars.back().var;
  int64_t g = 0;
  ir::VisitStmtTree(block->body, [&](const ir::Stmt& st) {
    const auto* store = ir::As<ir::StoreNode>(st);
    if (!store) return;
    ir::VisitExprTree(store->value, [&](const ir::Expr& e) {
      bool compare = e->kind == ir::ExprKind::kLT || e->kind == ir::ExprKind::kGE ||
                     e->kind == ir::ExprKind::kLE || e->kind == ir::ExprKind::kGT;
      int64_t limit = 0;
      if (!compare || e->operands.size() != 2 || e->operands[0].get() != innermost.get() ||
          !ir::AsConstInt(e->operands[1], &limit)) {
        return;
      }
      bool after = e->kind == ir::ExprKind::kLE || e->kind == ir::ExprKind::kGT;
      g = std::gcd(g, std::abs(limit + (after ? 1 : 0)));
    });
  });
  return g;
}

}  // namespace

// A case split (kernels/case_split.h): the selecting loops move inside, between the outer
// loops (fused, parallel when large enough) and the vector loop (the innermost, split by
// the native width), and are unrolled, so that each copy computes only its own arm and the
// copies, side by side, share the loads and sums their arms have in common.
bool DefaultScheduler::ScheduleCaseSplit(const std::string& name) {
  const ir::Block block = BlockOf(s_, name);
  std::vector<int> axes = CaseSplitAxes(block);
  if (axes.empty()) return false;
  int innermost = static_cast<int>(block->iter_vars.size()) - 1;
  int64_t copies = 1;
  for (int axis : axes) copies *= block->iter_vars[static_cast<size_t>(axis)].extent;
  if (axes.back() == innermost || copies > kMaxCaseSplitCopies) return false;
  bool done = TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.size() != block->iter_vars.size()) throw ScheduleError("unexpected loop nest");
    std::vector<LoopRV> outer, selecting;
    for (int k = 0; k < innermost; ++k) {
      bool selects = std::find(axes.begin(), axes.end(), k) != axes.end();
      (selects ? selecting : outer).push_back(loops[static_cast<size_t>(k)]);
    }
    LoopRV last = loops.back();
    int64_t lanes = LargestDivisor(s_.LoopExtent(last), options_.vector_lanes);
    if (lanes >= 4) {
      auto parts = s_.Split(last, {-1, lanes});
      outer.push_back(parts[0]);
      last = parts[1];
    }
    std::vector<LoopRV> order = outer;
    order.insert(order.end(), selecting.begin(), selecting.end());
    order.push_back(last);
    s_.Reorder(order);
    for (const LoopRV& loop : selecting) s_.Unroll(loop);
    if (lanes >= 4) s_.Vectorize(last);
    if (outer.empty()) return;
    LoopRV fused = outer.size() > 1 ? s_.Fuse(outer) : outer[0];
    if (SpatialExtent(block) >= options_.parallel_min_work && threads_ > 1 &&
        s_.LoopExtent(fused) >= threads_) {
      s_.Parallel(fused);
    }
  });
  if (done) done_.insert(name);
  return done;
}

// Vectorizes the innermost loop of an epilogue placed under another block's loop.
void DefaultScheduler::ScheduleSpatialInner(const std::string& name) {
  TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    LoopRV last = loops.back();
    int64_t lanes = LargestDivisor(s_.LoopExtent(last), options_.vector_lanes);
    if (lanes < 4) return;
    auto parts = s_.Split(last, {-1, lanes});
    s_.Vectorize(parts[1]);
  });
}

// A spatial block: its innermost loop vectorized (index arithmetic of the other loops stays
// scalar; a cache line or a vector per step along a dynamic axis) and the others fused and
// parallel; when the innermost loop is too short, all loops fused, split by the vector width and
// vectorized. A transpose whose innermost loop is long is tiled first (ScheduleBlockedTranspose).
void DefaultScheduler::ScheduleSpatial(const std::string& name) {
  if (ScheduleBlockedTranspose(name)) {
    done_.insert(name);
    return;
  }
  bool done = TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.empty()) return;
    LoopRV last = loops.back();
    int64_t extent = s_.LoopExtent(last);
    // The whole loop when it is short (power-of-two pieces), else the widest tile dividing it;
    // a tile inside which no selecting comparison changes (a concat's parts), when there is one
    // of at least the vector width: each vector then reads one part.
    int64_t lanes = extent <= 2 * kMaxVectorTile ? extent : LargestDivisor(extent, kMaxVectorTile);
    if (int64_t g = InnermostThresholdGcd(BlockOf(s_, name)); g > 0) {
      int64_t fit = LargestDivisor(std::gcd(g, extent), kMaxVectorTile);
      if (fit >= options_.vector_lanes) lanes = fit;
    }
    if (lanes < options_.vector_lanes) throw ScheduleError("short innermost loop");
    // Along a dynamic axis, DynamicAxisLanes per step at most (a run far below the bound
    // computes at most a cache line or a vector past the valid length).
    const ir::Block block = BlockOf(s_, name);
    if (loops.size() == block->iter_vars.size() &&
        options_.IsDynamic(name, block->iter_vars.size() - 1)) {
      int64_t step = DynamicAxisLanes(options_.vector_lanes);
      if (extent % step == 0 && lanes > step) {
        lanes = step;
      } else if (extent % options_.vector_lanes == 0) {
        lanes = std::min<int64_t>(lanes, options_.vector_lanes);
      }
    }
    std::vector<LoopRV> outer(loops.begin(), loops.end() - 1);
    if (lanes < extent) {
      auto parts = s_.Split(last, {-1, lanes});
      outer.push_back(parts[0]);
      last = parts[1];
    }
    s_.Vectorize(last);
    bool parallel = SpatialExtent(BlockOf(s_, name)) >= options_.parallel_min_work && threads_ > 1;
    int64_t tasks = 1;
    for (const LoopRV& loop : outer) tasks *= s_.LoopExtent(loop);
    if (parallel && tasks < threads_) throw ScheduleError("too few outer iterations");
    if (outer.empty()) return;
    LoopRV fused = outer.size() > 1 ? s_.Fuse(outer) : outer[0];
    if (parallel) s_.Parallel(fused);
  });
  if (!done) ScheduleSpatialFused(name);
  done_.insert(name);
}

// A spatial block with a short innermost loop. When every load moves with the store along
// the innermost iterator (elementwise, broadcast, padding), the innermost loops are fused until
// they are long enough (a row of an NHWC tensor with 3 channels: w and c), split by the vector
// width and vectorized, the loops outside them fused and parallel: the division of the fused
// index by the row length then happens once per row, not in every vector (a stem convolution's
// padded copy ran 20% faster so). Without a split of the vector width into the rows, or where a
// wider vector divides the whole nest, all loops are fused, split and vectorized. A load that moves
// with another stride (a transpose such as an NCHW -> NHWC layout_transform) would make each vector
// a gather with per-lane index arithmetic, many times slower than scalar code: then the outer loops
// are fused and parallel and the short innermost loop is unrolled.
void DefaultScheduler::ScheduleSpatialFused(const std::string& name) {
  const ir::Block block = BlockOf(s_, name);
  AccessModel model(block);
  if (model.valid() && !block->iter_vars.empty()) {
    int innermost = static_cast<int>(block->iter_vars.size()) - 1;
    std::optional<int64_t> store_stride = model.Stride(model.store(), innermost);
    bool transposes = false;
    for (const ir::Expr& load : model.loads()) {
      std::optional<int64_t> stride = model.Stride(load, innermost);
      transposes |= !stride || (*stride != 0 && stride != store_stride);
    }
    if (transposes && ScheduleTranspose(name)) return;
  }
  if (ScheduleSpatialRows(name)) return;
  TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.empty()) return;
    LoopRV fused = loops.size() > 1 ? s_.Fuse(loops) : loops[0];
    int64_t extent = s_.LoopExtent(fused);
    int64_t lanes = LargestDivisor(extent, options_.vector_lanes);
    LoopRV outer = fused;
    if (lanes >= 4) {
      auto parts = s_.Split(fused, {-1, lanes});
      outer = parts[0];
      s_.Vectorize(parts[1]);
    }
    if (extent >= options_.parallel_min_work && threads_ > 1) s_.Parallel(outer);
  });
}

// ScheduleSpatialFused's rows: the innermost loops fused until they hold 4 vectors, split by a
// vector width of at least 4 dividing them and vectorized; the loops outside fused and parallel.
// False (nothing changed) when the rows are the whole nest, or no such width divides them, or a
// wider one divides the whole nest.
bool DefaultScheduler::ScheduleSpatialRows(const std::string& name) {
  const ir::Block block = BlockOf(s_, name);
  size_t rank = block->iter_vars.size();
  if (rank < 2) return false;
  for (const ir::IterVar& iv : block->iter_vars) {
    if (iv.kind != ir::IterKind::kSpatial || iv.extent < 1) return false;
  }
  size_t first = rank - 1;
  int64_t row = block->iter_vars[first].extent;
  while (first > 0 && row < 4 * options_.vector_lanes) {
    --first;
    row *= block->iter_vars[first].extent;
  }
  int64_t outer_extent = 1;
  for (size_t k = 0; k < first; ++k) outer_extent *= block->iter_vars[k].extent;
  int64_t lanes = LargestDivisor(row, options_.vector_lanes);
  // Rows that would take narrower vectors than the whole fused nest (an NCHW 7x7 map: 7 lanes
  // against 8) are not worth their shorter index arithmetic, unless the value selects by
  // position (a padded copy): across rows each lane has its own condition, from its own
  // divisions of the fused index, and the vectors become scalar code (the 226x226x3 padded
  // copy of a stem convolution on AVX-512: 12 such lanes against rows of 6, 5x slower).
  int64_t all_lanes = LargestDivisor(row * outer_extent, options_.vector_lanes);
  bool selects = false;
  ir::VisitStmtExprs(block->body, [&](const ir::Expr& top) {
    ir::VisitExprTree(top, [&](const ir::Expr& e) { selects |= e->kind == ir::ExprKind::kSelect; });
  });
  if (first == 0 || outer_extent == 1 || lanes < 4 || (lanes < all_lanes && !selects)) {
    return false;
  }
  return TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.size() != rank) throw ScheduleError("unexpected loop nest");
    std::vector<LoopRV> outer(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(first));
    std::vector<LoopRV> inner(loops.begin() + static_cast<std::ptrdiff_t>(first), loops.end());
    LoopRV fused_row = inner.size() > 1 ? s_.Fuse(inner) : inner[0];
    std::vector<LoopRV> parts = s_.Split(fused_row, {-1, lanes});
    s_.Vectorize(parts[1]);
    LoopRV fused = outer.size() > 1 ? s_.Fuse(outer) : outer[0];
    if (SpatialExtent(block) >= options_.parallel_min_work && threads_ > 1 &&
        s_.LoopExtent(fused) >= threads_) {
      s_.Parallel(fused);
    }
  });
}

// A block that stores contiguously along its innermost loop but loads an operand with another
// step along it, contiguously along another spatial loop (an NHWC -> NCHW layout_transform):
// vectorized as is, every lane of every vector reads its own cache line, and the next value of
// the other loop reads the same lines again after the whole slice has gone through the cache.
// Tiled, the two loops are split by the vector width, the other loop's tile unrolled just
// outside the vector loop, so that a tile's gathers read the same vector-width lines one after
// the other while they are in the first-level cache.
//
// Steps:
//   1. find the load and the other loop (`across`) along which it moves by one element;
//   2. split the innermost and the `across` loops by the largest divisors up to the vector
//      width (both must reach 4);
//   3. order [outer loops] [across tile, unrolled] [innermost tile, vectorized], the outer
//      loops fused and parallel when the block is large enough.
bool DefaultScheduler::ScheduleBlockedTranspose(const std::string& name) {
  const ir::Block block = BlockOf(s_, name);
  AccessModel model(block);
  int rank = static_cast<int>(block->iter_vars.size());
  if (!model.valid() || rank < 2) return false;
  for (const ir::IterVar& iv : block->iter_vars) {
    if (iv.kind != ir::IterKind::kSpatial) return false;
  }
  // 1. The transposed load.
  int innermost = rank - 1;
  if (model.Stride(model.store(), innermost) != 1) return false;
  int across = -1;
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> stride = model.Stride(load, innermost);
    if (stride && (*stride == 0 || *stride == 1)) continue;
    for (int axis = 0; axis < innermost && across < 0; ++axis) {
      if (model.Stride(load, axis) == 1) across = axis;
    }
  }
  if (across < 0) return false;
  // 2. The tiles.
  int64_t lanes = options_.vector_lanes;
  int64_t inner_tile =
      LargestDivisor(block->iter_vars[static_cast<size_t>(innermost)].extent, lanes);
  int64_t across_tile = LargestDivisor(block->iter_vars[static_cast<size_t>(across)].extent, lanes);
  if (inner_tile < 4 || across_tile < 4) return false;
  // 3. The loop nest.
  return TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (static_cast<int>(loops.size()) != rank) throw ScheduleError("unexpected loop nest");
    std::vector<LoopRV> across_parts =
        s_.Split(loops[static_cast<size_t>(across)], {-1, across_tile});
    std::vector<LoopRV> inner_parts = s_.Split(loops.back(), {-1, inner_tile});
    std::vector<LoopRV> outer;
    for (int axis = 0; axis < innermost; ++axis) {
      outer.push_back(axis == across ? across_parts[0] : loops[static_cast<size_t>(axis)]);
    }
    outer.push_back(inner_parts[0]);
    std::vector<LoopRV> order = outer;
    order.push_back(across_parts[1]);
    order.push_back(inner_parts[1]);
    s_.Reorder(order);
    s_.Unroll(across_parts[1]);
    s_.Vectorize(inner_parts[1]);
    LoopRV fused = s_.Fuse(outer);
    if (SpatialExtent(block) >= options_.parallel_min_work && threads_ > 1 &&
        s_.LoopExtent(fused) >= threads_) {
      s_.Parallel(fused);
    }
  });
}

// Outer loops fused and parallel (when large enough), the short innermost loop unrolled.
bool DefaultScheduler::ScheduleTranspose(const std::string& name) {
  return TrySteps(s_, [&] {
    BlockRV b = s_.GetBlock(name);
    std::vector<LoopRV> loops = s_.GetLoops(b);
    if (loops.size() < 2) throw ScheduleError("no outer loop");
    std::vector<LoopRV> outer(loops.begin(), loops.end() - 1);
    LoopRV fused = outer.size() > 1 ? s_.Fuse(outer) : outer[0];
    if (SpatialExtent(BlockOf(s_, name)) >= options_.parallel_min_work && threads_ > 1 &&
        s_.LoopExtent(fused) >= threads_) {
      s_.Parallel(fused);
    }
    s_.Unroll(loops.back());
  });
}

}  // namespace tandem::kernels::default_schedule
