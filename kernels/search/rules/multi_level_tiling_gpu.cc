// multi_level_tiling_gpu: the SSSRRSRS tile structure of MetaSchedule's CUDA space.
//
// Every spatial loop of a reduction block with data reuse is split into five levels (S0..S4) and
// every reduction loop into three (R0..R2) by sample_perfect_tile (the decisions recorded in the
// trace). S0 of all spatial loops is fused and bound to blockIdx.x, S2 fused and bound to
// threadIdx.x; S1 is the virtual-thread level: its loops run inside each thread but index the
// output outside the thread level, so that one thread's outputs are strided by the block's
// threads. The outputs are accumulated in a "local" cache (registers) and written back under the
// block loop by the threads that computed them (the write-back's loops split like the tile);
// a single elementwise consumer (the epilogue) is inlined into the write-back. Two structures,
// each a design space:
//   1. registers: S0 S2 S1 R0 R1 S3 R2 S4;
//   2. cooperative fetch: S0 R0 S2 S1 R1 S3 R2 S4, every operand tile that the kernel takes as
//      input and indexes by sums of iterators read under R0 into a "shared" cache by all threads
//      of the block (the copy's loops fused and split by the block's threads).
// Applies to a reduction block in its own nest that reads some operand without one of its
// spatial iterators (data reuse) and writes one buffer indexed by its spatial iterators in order.
// A structure whose steps turn out illegal for the block is left out.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

// Tile levels of a spatial loop (S0..S4) and of a reduction loop (R0..R2).
constexpr int kSpatialLevels = 5;
constexpr int kReductionLevels = 3;

class MultiLevelTilingGpu : public ScheduleRule {
 public:
  explicit MultiLevelTilingGpu(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "multi_level_tiling_gpu"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    const ir::BlockRealizeNode* realize = PristineReduction(schedule, block);
    if (!realize) return {schedule};
    const ir::Block b = realize->block;
    if (b->annotations.Has(search::kTilingKey) || !HasDataReuse(b) ||
        !OutputFollowsIterators(b)) {
      return {schedule};
    }
    std::vector<Schedule> out;
    for (bool staged : {false, true}) {
      Schedule s = schedule;
      if (search::TrySteps(s, [&] { Tile(s, block, b, staged); })) out.push_back(s);
    }
    if (out.empty()) return {schedule};
    return out;
  }

 private:
  void Tile(Schedule& s, const BlockRV& block, const ir::Block& b, bool staged) const {
    // The reads to stage: operands (not the accumulated output) that are kernel inputs (an
    // intermediate, such as a padding stage left uninlined, would need its producer moved
    // under the block too), found before the caches change the reads.
    std::vector<int> operands;
    for (size_t r = 0; r < b->reads.size(); ++r) {
      bool output = false;
      for (const ir::BufferRegion& w : b->writes) output = output || w.buffer == b->reads[r].buffer;
      if (!output && IsParam(s.function(), b->reads[r].buffer) && SimpleIndices(b->reads[r])) {
        operands.push_back(static_cast<int>(r));
      }
    }
    std::optional<std::string> epilogue = Epilogue(s.function(), b);
    // 1. Split: levels[0..4] spatial, levels[5..7] reduction; loops of extent 1 stay unsplit at
    //    the front of S0 (spatial) or R0.
    std::vector<LoopRV> loops = s.GetLoops(block);
    std::vector<LoopRV> levels[kSpatialLevels + kReductionLevels];
    std::vector<std::vector<ExprRV>> spatial_factors;  // per split spatial loop
    for (size_t k = 0; k < loops.size(); ++k) {
      const ir::IterVar& iv = b->iter_vars[k];
      bool spatial = iv.kind == ir::IterKind::kSpatial;
      if (iv.extent == 1) {
        std::vector<LoopRV>& group = spatial ? levels[0] : levels[kSpatialLevels];
        group.insert(group.begin(), loops[k]);
        continue;
      }
      int n = spatial ? kSpatialLevels : kReductionLevels;
      std::vector<ExprRV> factors = s.SamplePerfectTile(loops[k], n, target_.max_innermost_factor);
      std::vector<LoopRV> parts =
          s.Split(loops[k], std::vector<Factor>(factors.begin(), factors.end()));
      for (int level = 0; level < n; ++level) {
        levels[spatial ? level : kSpatialLevels + level].push_back(
            parts[static_cast<size_t>(level)]);
      }
      if (spatial) spatial_factors.push_back(factors);
    }
    if (levels[2].empty()) throw ScheduleError("no spatial loop to spread over threads");
    // 2. Order: S0 S2 S1 R0 R1 S3 R2 S4, or S0 R0 S2 S1 R1 S3 R2 S4 when staged.
    const std::vector<int> order_of_levels = staged ? std::vector<int>{0, 5, 2, 1, 6, 3, 7, 4}
                                                    : std::vector<int>{0, 2, 1, 5, 6, 3, 7, 4};
    std::vector<LoopRV> order;
    for (int level : order_of_levels) {
      order.insert(order.end(), levels[level].begin(), levels[level].end());
    }
    s.Reorder(order);
    s.Annotate(block, search::kTilingKey, std::string("SSSRRSRS"));
    LoopRV block_loop = levels[0].size() > 1 ? s.Fuse(levels[0]) : levels[0][0];
    LoopRV thread_loop = levels[2].size() > 1 ? s.Fuse(levels[2]) : levels[2][0];
    s.Bind(block_loop, "blockIdx.x");
    s.Bind(thread_loop, "threadIdx.x");
    // 3. Accumulators per thread, written back under the block loop by the threads that
    //    computed them (the write-back's loops split like the tile), the epilogue inlined.
    BlockRV write_back = s.CacheWrite(block, 0, "local");
    s.ReverseComputeAt(write_back, block_loop);
    if (epilogue) search::TrySteps(s, [&] { s.ReverseComputeInline(s.GetBlock(*epilogue)); });
    //    Its loops below the block loop: one per output axis (the block's spatial iterators in
    //    order, as OutputFollowsIterators checked).
    std::vector<LoopRV> write_loops;
    bool below = false;
    for (const LoopRV& loop : s.GetLoops(write_back)) {
      if (below) write_loops.push_back(loop);
      below = below || s.LoopVar(loop).same_as(s.LoopVar(block_loop));
    }
    if (write_loops.size() != CountIterators(b, ir::IterKind::kSpatial)) {
      throw ScheduleError("the write-back's loops do not follow the tiled spatial loops");
    }
    std::vector<LoopRV> write_levels[4];
    size_t axis = 0, tiled = 0;
    for (const ir::IterVar& iv : b->iter_vars) {
      if (iv.kind != ir::IterKind::kSpatial) continue;
      const LoopRV& loop = write_loops[axis++];
      if (iv.extent == 1) continue;
      const std::vector<ExprRV>& f = spatial_factors[tiled++];
      int64_t tile = s.Value(f[1]) * s.Value(f[2]) * s.Value(f[3]) * s.Value(f[4]);
      if (s.LoopExtent(loop) != tile) {
        throw ScheduleError("the write-back's loops do not follow the tiled spatial loops");
      }
      std::vector<LoopRV> parts = s.Split(loop, {f[1], f[2], f[3], f[4]});
      for (size_t level = 0; level < 4; ++level) write_levels[level].push_back(parts[level]);
    }
    std::vector<LoopRV> write_order = write_levels[1];
    for (int level : {0, 2, 3}) {
      write_order.insert(write_order.end(), write_levels[level].begin(), write_levels[level].end());
    }
    s.Reorder(write_order);
    s.Bind(write_levels[1].size() > 1 ? s.Fuse(write_levels[1]) : write_levels[1][0],
           "threadIdx.x");
    if (!staged) return;
    // 4. Operand tiles in shared memory, copied by all the block's threads.
    if (levels[kSpatialLevels].empty()) throw ScheduleError("no reduction loop to stage under");
    if (operands.empty()) throw ScheduleError("no operand to stage");
    LoopRV stage = levels[kSpatialLevels].back();
    std::vector<Factor> thread_factors{-1};
    for (const std::vector<ExprRV>& f : spatial_factors) thread_factors.push_back(f[2]);
    for (auto it = operands.rbegin(); it != operands.rend(); ++it) {
      BlockRV copy = s.CacheRead(block, *it, "shared");
      std::vector<LoopRV> copy_loops = s.GetLoops(copy);
      bool placed = false;
      for (const LoopRV& loop : copy_loops) {
        placed = placed || s.LoopVar(loop).same_as(s.LoopVar(stage));
      }
      if (!placed) {
        s.ComputeAt(copy, stage);
        copy_loops = s.GetLoops(copy);
      }
      std::vector<LoopRV> region;
      below = false;
      for (const LoopRV& loop : copy_loops) {
        if (below) region.push_back(loop);
        below = below || s.LoopVar(loop).same_as(s.LoopVar(stage));
      }
      if (region.empty()) throw ScheduleError("the operand copy has no loop to spread");
      LoopRV fused = region.size() > 1 ? s.Fuse(region) : region[0];
      std::vector<LoopRV> parts = s.Split(fused, thread_factors);
      std::vector<LoopRV> threads(parts.begin() + 1, parts.end());
      LoopRV thread = threads.size() > 1 ? s.Fuse(threads) : threads[0];
      s.Reorder({thread, parts[0]});
      s.Bind(thread, "threadIdx.x");
    }
  }

  // True when every index of the region is a sum of variables and constants (matmul's a[i, k],
  // a convolution's x[y + ry]): tiles whose size the code generator can find for shared memory.
  // Strides and dilations (y * 2 + ry) and divisions are left unstaged.
  static bool SimpleIndices(const ir::BufferRegion& region) {
    std::function<bool(const ir::Expr&)> simple = [&](const ir::Expr& e) {
      switch (e->kind) {
        case ir::ExprKind::kVar:
        case ir::ExprKind::kIntImm:
          return true;
        case ir::ExprKind::kAdd:
          return simple(e->operands[0]) && simple(e->operands[1]);
        case ir::ExprKind::kSub:
          return simple(e->operands[0]) && e->operands[1]->kind == ir::ExprKind::kIntImm;
        default:
          return false;
      }
    };
    for (const ir::Range& range : region.region) {
      if (!simple(range.min)) return false;
    }
    return true;
  }

  // True when the block writes one buffer, indexed by its spatial iterators in order (what lets
  // the write-back's loops be split like the block's spatial loops).
  static bool OutputFollowsIterators(const ir::Block& b) {
    if (b->writes.size() != 1) return false;
    const std::vector<ir::Range>& region = b->writes[0].region;
    size_t axis = 0;
    for (const ir::IterVar& iv : b->iter_vars) {
      if (iv.kind != ir::IterKind::kSpatial) continue;
      if (axis >= region.size() || !region[axis].min.same_as(iv.var)) return false;
      ++axis;
    }
    return axis == region.size();
  }

  // The single elementwise consumer of the block (computed from the block's output element by
  // element), if there is one: what the write-back can absorb.
  static std::optional<std::string> Epilogue(const ir::KernelFunction& fn, const ir::Block& b) {
    std::vector<std::string> consumers = ConsumersOf(fn, b);
    if (consumers.size() != 1) return std::nullopt;
    const ir::BlockRealizeNode* c = FindRealize(fn, consumers[0]);
    if (!c || IsReduction(c->block) || c->block->init || !IsPristineNest(fn, consumers[0])) {
      return std::nullopt;
    }
    return consumers[0];
  }

  SearchTarget target_;
};

}  // namespace

ScheduleRulePtr MakeMultiLevelTilingGpu(const SearchTarget& target) {
  return std::make_shared<MultiLevelTilingGpu>(target);
}

}  // namespace tandem::kernels
