// multi_level_tiling: the SSRSRS tile structure for CPUs.
//
// Every spatial loop of a reduction block with data reuse is split into four levels and every
// reduction loop into two (sample_perfect_tile), reordered S0 S1 R0 S2 R1 S3 (outermost first):
// S0 becomes the parallel outer loops, S1 a cache-sized tile, R0 S2 R1 the register-level
// reuse loops and S3 the innermost, vectorizable tile. Where S0 has loops that move the vector
// operands (a matmul's columns, a convolution's output channels) and loops that do not, a
// sample_categorical decision puts the first kind outermost or keeps iterator order
// (RewritePanelOrder carries it out, so that mutating it reorders): with the first, consecutive
// iterations of the parallel loop share a panel of those operands and RewritePrefetch fetches
// the next panel during the current one, as the default schedules do. The result is accumulated in
// a "local" cache written back under the S1 tile; or, when the block has an elementwise epilogue
// that was not inlined, the epilogue is computed under the S0 or S1 tile (a sample_categorical
// decision that RewriteEpilogueFusion carries out, so that mutating it moves the epilogue).
//
// On a CPU, a sample_categorical switch seeds the innermost tiles with the register tile the
// default schedule plans (PlanRegisterTile) in half of the samples: S3 of each spatial loop is
// that tile's extent along it (the largest divisor at most it), and every reduction loop but the
// one whose loads step least is kept whole in R0, so that R1 walks the contiguous operand run
// under the register tile as the default schedule's reduction order does; the other levels are
// sampled as usual. Uniform sampling alone rarely lands on a tile that fills the register file
// (a 14x32 tile of a convolution is one factorization among thousands): without the seed the
// space's samples of ResNet-50's 3x3 convolutions ran 1.7x and more slower than the default
// schedule.
#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/default_schedule/access_model.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/primitives.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class MultiLevelTiling : public ScheduleRule {
 public:
  explicit MultiLevelTiling(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "multi_level_tiling"; }

  std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const override {
    const ir::BlockRealizeNode* realize = PristineReduction(schedule, block);
    if (!realize) return {schedule};
    const ir::Block b = realize->block;
    if (b->annotations.Has(search::kTilingKey) || !HasDataReuse(b)) {
      return {schedule};
    }
    Schedule s = schedule;
    search::TrySteps(s, [&] { Tile(s, block, b); });
    return {s};
  }

 private:
  void Tile(Schedule& s, const BlockRV& block, const ir::Block& b) const {
    std::vector<LoopRV> loops = s.GetLoops(block);
    // The last spatial axis holds the innermost (vectorized) tile: bound it by a multiple of
    // the vector width.
    int64_t lanes = std::max(1, target_.vector_lanes);
    int64_t vector_bound = std::max(lanes, target_.max_innermost_factor / lanes * lanes);
    size_t last_spatial = loops.size();
    for (size_t k = 0; k < loops.size(); ++k) {
      if (b->iter_vars[k].kind == ir::IterKind::kSpatial && b->iter_vars[k].extent > 1) {
        last_spatial = k;
      }
    }
    // An operand packed in panels along that axis (packed_matmul's b[j / nb, k, j % nb]) is
    // contiguous only inside a panel: the vector tile stays within one.
    if (last_spatial < loops.size()) {
      int64_t panel = PanelWidth(b, b->iter_vars[last_spatial].var);
      if (panel >= lanes) vector_bound = std::min(vector_bound, panel);
    }
    std::vector<int64_t> seed = SeedTiles(b);
    std::optional<ExprRV> seeded;
    if (!seed.empty()) seeded = s.SampleCategorical({0, 1}, {0.5, 0.5});
    // S0 S1 R0 S2 R1 S3; loops of extent 1 stay unsplit at the front of S0 (spatial) or R0.
    std::vector<LoopRV> tiles[6];
    for (size_t k = 0; k < loops.size(); ++k) {
      const ir::IterVar& iv = b->iter_vars[k];
      bool spatial = iv.kind == ir::IterKind::kSpatial;
      if (iv.extent == 1) {
        std::vector<LoopRV>& group = spatial ? tiles[0] : tiles[2];
        group.insert(group.begin(), loops[k]);
        continue;
      }
      int n = spatial ? 4 : 2;
      int64_t bound = k == last_spatial ? vector_bound : target_.max_innermost_factor;
      std::optional<Schedule::PerfectTileSeed> tile_seed;
      if (seeded && seed[k] > 0) tile_seed = Schedule::PerfectTileSeed{*seeded, seed[k]};
      std::vector<ExprRV> factors = s.SamplePerfectTile(loops[k], n, bound, {}, tile_seed);
      std::vector<LoopRV> parts =
          s.Split(loops[k], std::vector<Factor>(factors.begin(), factors.end()));
      static constexpr int kSpatialLevels[] = {0, 1, 3, 5};
      static constexpr int kReductionLevels[] = {2, 4};
      for (int level = 0; level < n; ++level) {
        int tile = spatial ? kSpatialLevels[level] : kReductionLevels[level];
        tiles[tile].push_back(parts[static_cast<size_t>(level)]);
      }
    }
    if (tiles[1].empty()) throw ScheduleError("no spatial loop to tile");
    std::vector<LoopRV> order;
    for (const auto& tile : tiles) order.insert(order.end(), tile.begin(), tile.end());
    s.Reorder(order);
    s.Annotate(block, search::kTilingKey, std::string("SSRSRS"));
    // The S0 order, where it can differ.
    std::vector<bool> moves = search::MovesVectorOperands(s.function(), b);
    int moving = 0, still = 0;
    for (size_t k = 0; k < moves.size(); ++k) {
      if (b->iter_vars[k].kind != ir::IterKind::kSpatial || b->iter_vars[k].extent == 1) continue;
      (moves[k] ? moving : still) += 1;
    }
    if (moving > 0 && still > 0) {
      ExprRV panels_outer = s.SampleCategorical({0, 1}, {0.5, 0.5});
      s.Annotate(block, search::kPanelsOuterKey, panels_outer);
    }
    LoopRV outer = tiles[0].back();  // level 1: under S0
    LoopRV inner = tiles[1].back();  // level 2: under S1

    std::optional<std::string> epilogue = Epilogue(s, b, {outer, inner});
    if (epilogue) {
      ExprRV level = s.SampleCategorical({1, 2}, {0.5, 0.5});
      s.Annotate(outer, search::kTileLevelKey, int64_t{1});
      s.Annotate(inner, search::kTileLevelKey, int64_t{2});
      s.Annotate(s.GetBlock(*epilogue), search::kFuseLevelKey, level);
      return;
    }
    // Accumulate in a local cache written back once per S1 tile.
    search::TrySteps(s, [&] {
      BlockRV write_back = s.CacheWrite(block, 0, "local");
      s.ReverseComputeAt(write_back, inner);
    });
  }

  // Per iterator of the block, the innermost factor a seeded sample takes (0: sampled as
  // usual); empty on a GPU or when the default schedule plans no register tile for the block.
  std::vector<int64_t> SeedTiles(const ir::Block& b) const {
    if (target_.gpu) return {};
    int64_t lanes = std::max(1, target_.vector_lanes);
    int64_t registers = lanes >= 16 ? 32 : 16;  // AVX-512 and AVX2
    std::optional<default_schedule::RegisterTile> plan =
        default_schedule::PlanRegisterTile(b, lanes, registers, target_.num_cores, target_.core);
    if (!plan) return {};
    std::vector<int64_t> inner(b->iter_vars.size(), 1);
    inner[static_cast<size_t>(plan->vector_axis)] = plan->vector_tile;
    if (plan->broadcast_axis >= 0) {
      inner[static_cast<size_t>(plan->broadcast_axis)] = plan->broadcast_tile;
    }
    if (plan->second_axis >= 0) inner[static_cast<size_t>(plan->second_axis)] = plan->second_tile;
    // The reduction loop whose loads step least keeps a sampled R1; the others stay whole in R0.
    default_schedule::AccessModel model(b);
    int innermost = -1;
    int64_t least = std::numeric_limits<int64_t>::max();
    for (size_t k = 0; k < b->iter_vars.size(); ++k) {
      if (b->iter_vars[k].kind != ir::IterKind::kReduction) continue;
      int64_t step = default_schedule::SmallestLoadStep(model, static_cast<int>(k));
      if (innermost < 0 || step < least) {
        innermost = static_cast<int>(k);
        least = step;
      }
      inner[k] = 1;
    }
    if (innermost >= 0) inner[static_cast<size_t>(innermost)] = 0;
    return inner;
  }

  // The smallest c of the block's floormod(var, c) indices (an operand packed in panels c wide
  // along `var`), or 0.
  static int64_t PanelWidth(const ir::Block& b, const ir::Var& var) {
    int64_t width = 0;
    const auto* store = ir::As<ir::StoreNode>(b->body);
    if (!store) return 0;
    ir::VisitExprTree(store->value, [&](const ir::Expr& e) {
      int64_t c = 0;
      if (e->kind == ir::ExprKind::kFloorMod && e->operands[0].same_as(var) &&
          ir::AsConstInt(e->operands[1], &c) && c > 0) {
        width = width == 0 ? c : std::min(width, c);
      }
    });
    return width;
  }

  // The single elementwise consumer of the block that could be computed under either tile
  // level, if there is one.
  static std::optional<std::string> Epilogue(const Schedule& s, const ir::Block& b,
                                             const std::vector<LoopRV>& levels) {
    const ir::KernelFunction& fn = s.function();
    std::vector<std::string> consumers = ConsumersOf(fn, b);
    if (consumers.size() != 1) return std::nullopt;
    const ir::BlockRealizeNode* c = FindRealize(fn, consumers[0]);
    if (!c || IsReduction(c->block) || c->block->init || !IsPristineNest(fn, consumers[0])) {
      return std::nullopt;
    }
    for (const LoopRV& loop : levels) {
      try {
        primitive::ReverseComputeAt(fn, consumers[0], s.LoopVar(loop));
      } catch (const ScheduleError&) {
        return std::nullopt;
      }
    }
    return consumers[0];
  }

  SearchTarget target_;
};

}  // namespace

ScheduleRulePtr MakeMultiLevelTiling(const SearchTarget& target) {
  return std::make_shared<MultiLevelTiling>(target);
}

}  // namespace tandem::kernels
