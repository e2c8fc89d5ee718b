// Rule 2 of the default schedules: register-tiled reductions (see PlanRegisterTile).
#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include "ir/error.h"
#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::default_schedule {

namespace {

// Bytes of operands from which a reduction block runs on parallel threads whatever its
// arithmetic: a GEMV's weights come from the last-level cache or memory at every call (the
// network's other layers evict them), and one core streams them at a fraction of the rate two
// do (a squeeze-excite 1x1 convolution of 48 into 1152 channels, 221 KB of weights, took 37 us
// on one thread for 55 thousand multiply-adds).
constexpr int64_t kParallelMinOperandBytes = int64_t{128} << 10;

// Bytes of the whole of `buffer`.
int64_t BufferBytes(const ir::Buffer& buffer) {
  return ir::NumElements(buffer->shape) * ir::SizeOf(buffer->dtype);
}

// Bytes of the buffers `block` reads.
int64_t OperandBytes(const ir::Block& block) {
  int64_t bytes = 0;
  for (const ir::BufferRegion& read : block->reads) bytes += BufferBytes(read.buffer);
  return bytes;
}
constexpr int64_t kCacheLineBytes = 64;

// Whether a register tile's column panel of a row-major operand (`rows` cache lines, one per
// row, `row_bytes` apart) is evicted from `core`'s L2 between the tiles that reuse it: rows a
// multiple of a line apart fall into only sets / gcd(row_lines, sets) of the L2's sets, which
// hold that many times its ways in lines; the panel must fit in a quarter of them (the other
// operands, the next panel's prefetch and the hardware prefetchers' lines along the rows use
// the rest: at half, a 512-row panel 2 KB apart measured 15% slower in place than packed on a
// 2 MiB 16-way L2). An L2 of unknown geometry is taken as 1024 sets of 8 ways, the smallest of
// x86 cores of the last decade.
bool PanelOverflowsItsSets(int64_t row_bytes, int64_t rows, const CpuCoreModel& core) {
  if (row_bytes % kCacheLineBytes != 0) return false;  // lines straddle rows: sets spread
  int64_t ways = 8, sets = 1024;
  if (core.l2_ways > 0 && core.l2_bytes > 0) {
    ways = core.l2_ways;
    sets = std::max<int64_t>(1, core.l2_bytes / core.l2_ways / kCacheLineBytes);
  }
  int64_t row_sets = sets / std::gcd(row_bytes / kCacheLineBytes, sets);
  return rows > row_sets * ways / 4;
}

}  // namespace

// The register-tiled schedule of a reduction block (see PlanRegisterTile): spatial loops
// split into an outer part and the tile, order [outer spatial] [reduction] [tile], the
// accumulators in a "local" cache_write block computed per outer iteration (the code
// generator keeps them in registers), init decomposed, outer loops fused and parallel, and a
// pointwise epilogue inlined into the write-back. False (schedule unchanged) when the block
// does not fit that structure.
//
// Steps:
//   1. the tile planned (PlanRegisterTile), for the block's threads when it is large enough;
//   2. the spatial loops split by the tile and the loops grouped (SplitTileLoops), the
//      reduction loops ordered by their loads' steps (OrderReductionLoops), and the nest
//      reordered [outer] [reduction] [tile] [vector];
//   3. long matrix operands packed into panels (PackVectorOperands);
//   4. the accumulators cached in a "local" write-back block, a pointwise epilogue inlined
//      into it, and the write-back computed per fused outer iteration;
//   5. the tile loops unrolled, and the taps of an all-vector block with overlapping windows
//      too when they are few;
//   6. the vector loop vectorized, init decomposed, the init and write-back tiles unrolled and
//      vectorized, the fused outer loop parallel;
//   7. vector operands that stream from memory (weights beyond L1) prefetched one panel
//      ahead: the fused loop annotated with the iterations between panels.
bool DefaultScheduler::ScheduleRegisterTiled(const std::string& name) {
  const ir::Block block = BlockOf(s_, name);
  // 1. The plan. A long reduction into few outputs (a classifier's 1x1280x1000 GEMV), or one
  // over many operand bytes, is worth parallel threads too: its work is the reduction's or the
  // operands' streaming, not the output's size.
  int64_t reduction_work = ReductionExtent(block);
  bool parallel = threads_ > 1 && (SpatialExtent(block) >= options_.parallel_min_work ||
                                   SpatialExtent(block) * reduction_work >= kParallelMinMacs ||
                                   OperandBytes(block) >= kParallelMinOperandBytes);
  std::optional<RegisterTile> plan =
      PlanRegisterTile(block, options_.vector_lanes, options_.vector_registers,
                       parallel ? threads_ : 1, options_.core, options_.DynamicIteratorsOf(name));
  if (!plan) return false;
  bool ok = TrySteps(s_, [&] {
    // 2. The loop nest.
    BlockRV b = s_.GetBlock(name);
    AccessModel model(block);
    model.AlignLanes(plan->vector_axis, plan->vector_tile);
    TileLoops loops = SplitTileLoops(b, block, model, *plan);
    OrderReductionLoops(block, model, loops.reduction);
    std::vector<LoopRV> order = loops.outer;
    order.insert(order.end(), loops.reduction.begin(), loops.reduction.end());
    order.insert(order.end(), loops.tile.begin(), loops.tile.end());
    order.push_back(loops.vector_loop);
    s_.Reorder(order);
    // 3. Packed operands.
    PackVectorOperands(b, block, model, *plan);
    // 4. The accumulators and the epilogue.
    BlockRV writeback = s_.CacheWrite(b, 0, "local");
    InlineEpilogues(name, s_.BlockName(writeback));
    LoopRV fused = loops.outer.size() > 1 ? s_.Fuse(loops.outer) : loops.outer[0];
    s_.ReverseComputeAt(writeback, fused);
    // 5. Unrolled tile (and taps).
    for (const LoopRV& loop : loops.tile) s_.Unroll(loop);
    if (UnrollsWindowTaps(model, block, plan->vector_axis, plan->second_axis)) {
      for (const LoopRV& loop : loops.reduction) s_.Unroll(loop);
    }
    // 6. Vectors, init, write-back and threads.
    s_.Vectorize(loops.vector_loop);
    BlockRV init = s_.DecomposeReduction(b, loops.reduction.front());
    UnrollTileAndVectorize(init, loops.tile.size() + 1);
    std::vector<LoopRV> write_loops = s_.GetLoops(writeback);
    UnrollTileAndVectorize(writeback, write_loops.size() - 1);
    if (parallel) s_.Parallel(fused);
    // 7. The next vector operands prefetched while the current ones are in use.
    if (loops.panel_iterations > 0 && loops.panel_iterations < loops.outer_iterations) {
      s_.Annotate(fused, ir::kPrefetchDistanceKey, loops.panel_iterations);
    }
    done_.insert(name);
    done_.insert(s_.BlockName(writeback));
    done_.insert(s_.BlockName(init));
  });
  return ok;
}

// Splits the block's spatial loops by the tile of `plan` and groups the loops. Outer loops
// along which the vector operands stay the same go innermost among the outer loops, so that
// consecutive iterations (and each thread's chunk) reuse them from cache; unless the vector
// operands stay close anyway (a grouped convolution's weights in L1, a convolution's weights
// of up to L2ResidentConvolutionWeightBytes in L2): then the loops that move them go
// innermost, so that the broadcast operands (the input pixels, whose cache lines hold the
// channels of several groups or output-channel blocks) are reused instead.
DefaultScheduler::TileLoops DefaultScheduler::SplitTileLoops(const BlockRV& b,
                                                             const ir::Block& block,
                                                             const AccessModel& model,
                                                             const RegisterTile& plan) {
  std::vector<LoopRV> loops = s_.GetLoops(b);
  if (loops.size() != block->iter_vars.size()) throw ScheduleError("unexpected loop nest");
  TileLoops out;
  std::vector<LoopRV> vector_loads_depend, vector_loads_free;
  int64_t depend_iterations = 1, free_iterations = 1;
  // The vector operands (loads that move with the lanes) and their bytes.
  std::vector<bool> is_vector(model.loads().size());
  int64_t vector_operand_bytes = 0;
  for (size_t l = 0; l < model.loads().size(); ++l) {
    std::optional<int64_t> stride = model.Stride(model.loads()[l], plan.vector_axis);
    is_vector[l] = stride && *stride != 0;
    if (is_vector[l]) vector_operand_bytes += BufferBytes(model.load_exprs()[l]->buffer);
  }
  out.vector_loop = loops[static_cast<size_t>(plan.vector_axis)];
  std::optional<LoopRV> broadcast_loop, second_loop;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (block->iter_vars[k].kind == ir::IterKind::kReduction) {
      out.reduction.push_back(loops[k]);
      continue;
    }
    int axis = static_cast<int>(k);
    int64_t t = axis == plan.vector_axis      ? plan.vector_tile
                : axis == plan.broadcast_axis ? plan.broadcast_tile
                : axis == plan.second_axis    ? plan.second_tile
                                              : 1;
    LoopRV outer_loop = loops[k];
    if (t > 1) {
      std::vector<LoopRV> parts = s_.Split(loops[k], {-1, t});
      outer_loop = parts[0];
      if (axis == plan.vector_axis) out.vector_loop = parts[1];
      if (axis == plan.broadcast_axis) broadcast_loop = parts[1];
      if (axis == plan.second_axis) second_loop = parts[1];
    }
    bool vector_depends = false;
    for (size_t l = 0; l < model.loads().size(); ++l) {
      vector_depends =
          vector_depends ||
          (is_vector[l] && model.VariesInTile(model.loads()[l], axis, block->iter_vars[k].extent));
    }
    (vector_depends ? vector_loads_depend : vector_loads_free).push_back(outer_loop);
    int64_t iterations = (block->iter_vars[k].extent + t - 1) / t;
    (vector_depends ? depend_iterations : free_iterations) *= iterations;
  }
  // A convolution (several reduction iterators) whose weights stay in L2 gets the same order:
  // each position's input is then read once from beyond L1 for all its output channels, and
  // its output channels are written together. (Measured on 1x1 and 3x3 convolutions of up to
  // 256 KB of weights: as fast or up to 25% faster; on 2.4 MB of weights, slower.)
  bool convolution = CountIterators(block, ir::IterKind::kReduction) > 1;
  bool vector_operands_stay =
      vector_operand_bytes <= kL1ResidentOperandBytes ||
      (convolution && vector_operand_bytes <= L2ResidentConvolutionWeightBytes(options_.core));
  if (vector_operands_stay) std::swap(vector_loads_depend, vector_loads_free);
  out.outer_iterations = depend_iterations * free_iterations;
  // A panel reused by several iterations streams in bursts (the first of them misses): that is
  // what a prefetch evens out, where two panels fit in L2; operands used once stream steadily.
  int64_t panel_bytes = vector_operand_bytes / std::max<int64_t>(depend_iterations, 1);
  if (!vector_operands_stay && depend_iterations > 1 && free_iterations > 1 &&
      PrefetchedPanelFitsInL2(panel_bytes, options_.core)) {
    out.panel_iterations = free_iterations;
  }
  out.outer = vector_loads_depend;
  out.outer.insert(out.outer.end(), vector_loads_free.begin(), vector_loads_free.end());
  if (broadcast_loop) out.tile.push_back(*broadcast_loop);
  if (second_loop) out.tile.push_back(*second_loop);
  return out;
}

// Orders the reduction loops (in iterator order on entry): the one whose loads move least (a
// channel block walked contiguously) innermost, larger steps outside.
void DefaultScheduler::OrderReductionLoops(const ir::Block& block, const AccessModel& model,
                                           std::vector<LoopRV>& reduction) {
  std::vector<std::pair<int64_t, LoopRV>> steps;
  for (size_t k = 0, r = 0; k < block->iter_vars.size(); ++k) {
    if (block->iter_vars[k].kind != ir::IterKind::kReduction) continue;
    steps.emplace_back(SmallestLoadStep(model, static_cast<int>(k)), reduction[r++]);
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t r = 0; r < steps.size(); ++r) reduction[r] = steps[r].second;
}

// Packs a matrix operand read as X[..., k, j] (j the vector axis, k a reduction iterator) whose
// rows are so far apart that a tile's column panel does not stay in L2 (PanelOverflowsItsSets)
// into panels X'[..., j / tile, k, j % tile]: a register tile then streams one contiguous panel
// instead of rows that all fall into the same few cache sets. The copy runs once per call,
// vectorized and parallel.
void DefaultScheduler::PackVectorOperands(const BlockRV& b, const ir::Block& block,
                                          const AccessModel& model, const RegisterTile& plan) {
  const ir::Var& lane_var = block->iter_vars[static_cast<size_t>(plan.vector_axis)].var;
  for (const ir::Expr& load : model.load_exprs()) {
    const ir::Buffer& buffer = load->buffer;
    size_t rank = buffer->shape.size();
    if (rank < 2 || rank > 6 || !IsParam(s_.function(), buffer)) continue;
    int64_t row = buffer->shape.back();
    int64_t row_bytes = row * ir::SizeOf(buffer->dtype);
    if (!PanelOverflowsItsSets(row_bytes, buffer->shape[rank - 2], options_.core)) continue;
    if (row % plan.vector_tile != 0) continue;
    if (!load->operands.back().same_as(lane_var)) continue;
    const ir::Expr& k = load->operands[rank - 2];
    bool reduction = false;
    for (const ir::IterVar& iv : block->iter_vars) {
      reduction = reduction || (iv.kind == ir::IterKind::kReduction && k.same_as(iv.var));
    }
    if (!reduction) continue;
    int read_index = -1;
    for (size_t r = 0; r < block->reads.size(); ++r) {
      if (block->reads[r].buffer == buffer) read_index = static_cast<int>(r);
    }
    if (read_index < 0) continue;
    std::string source, target;
    for (size_t d = 0; d < rank; ++d) source += static_cast<char>('A' + d);
    target = source.substr(0, rank - 2) + source[rank - 1] + source[rank - 2] +
             std::to_string(plan.vector_tile) + static_cast<char>('a' + rank - 1);
    TrySteps(s_, [&] {
      BlockRV copy = s_.CacheRead(b, read_index, "global");
      s_.TransformLayout(copy, 0, true, source, target);
      std::vector<LoopRV> loops = s_.GetLoops(copy);
      std::vector<LoopRV> parts = s_.Split(loops.back(), {-1, plan.vector_tile});
      s_.Vectorize(parts[1]);
      std::vector<LoopRV> outer(loops.begin(), loops.end() - 1);
      outer.push_back(parts[0]);
      LoopRV fused = s_.Fuse(outer);
      if (threads_ > 1) s_.Parallel(fused);
      done_.insert(s_.BlockName(copy));
    });
  }
}

// Inlines pointwise consumers of the reduction's output into its write-back block, so that
// an epilogue (bias, batch norm, activation) runs on the accumulators before they are stored.
void DefaultScheduler::InlineEpilogues(const std::string& reduction, const std::string& writeback) {
  bool progress = true;
  while (progress) {
    progress = false;
    const ir::Block& producer = BlockOf(s_, writeback);
    for (const std::string& consumer : s_.BlockNames()) {
      if (consumer == reduction || consumer == writeback || done_.count(consumer)) continue;
      const ir::Block& c = BlockOf(s_, consumer);
      if (IsReduction(c) || c->init || !ReadsAnyOf(c, producer)) continue;
      try {
        primitive::ReverseComputeInline(s_.function(), consumer);
      } catch (const ScheduleError&) {
        continue;
      }
      if (TrySteps(s_, [&] { s_.ReverseComputeInline(s_.GetBlock(consumer)); })) {
        progress = true;
        break;
      }
    }
  }
}

// Unrolls the innermost `count` loops of a block but the last, which is vectorized.
void DefaultScheduler::UnrollTileAndVectorize(const BlockRV& block, size_t count) {
  std::vector<LoopRV> loops = s_.GetLoops(block);
  if (loops.size() < count || count == 0) throw ir::Error("unexpected tile loops");
  for (size_t k = loops.size() - count; k + 1 < loops.size(); ++k) s_.Unroll(loops[k]);
  s_.Vectorize(loops.back());
}

}  // namespace tandem::kernels::default_schedule
