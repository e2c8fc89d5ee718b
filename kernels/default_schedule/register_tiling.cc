#include "kernels/default_schedule/register_tiling.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "kernels/default_schedule/access_model.h"
#include "kernels/schedule/block_analysis.h"

namespace tandem::kernels::default_schedule {

namespace {

// Cycles a GEMM step takes at least, whatever its accumulators: an accumulator's FMA chain
// (4-cycle latency on Zen 3 and Skylake-X) plus slack for load and issue jitter. With two FMA
// units a tile needs about 2 x this many accumulators to keep them busy (a padded
// 12-accumulator 6x16 tile ran a BERT-sized GEMM faster than the 8-accumulator 4x16 tile).
constexpr double kAccumulatorChainCycles = 6;
// A GEMM register tile with more accumulators is preferred to the best-rated one when it rates
// at least this fraction of it (a 12x32 tile padded over 128 rows to an exact 8x32 one), on a
// core that starts two FMAs of the widest vector per cycle. Where it starts one (Zen 4's
// 512-bit vectors), the exact 8x32 tile ran BERT's 128-row GEMMs 6-14% faster: ratings then
// count as equal only within kExactTolerance.
constexpr double kGemmTileTolerance = 0.95;
constexpr double kExactTolerance = 0.9999;
// Bytes of an L1 cache line.
constexpr int64_t kCacheLineBytes = 64;
// Largest stride (elements) of a vector load the code generator loads as a span and shuffles
// (backends/llvm: kMaxStridedLoad); larger strides are gathers.
constexpr int64_t kMaxLoadStride = 4;

// Vector registers a register tile may hold as accumulators; the rest hold the operands. A
// GEMM keeps a quarter of the file (at least 4) for its operands: 24 of AVX-512's 32, 12 of
// AVX2's 16. A convolution's operand vectors are its weights alone (the input pixels are
// broadcasts, one live at a time), so it keeps an eighth (at least 4): 28 on AVX-512, where
// 14-pixel tiles (each weight vector loaded once per 14 FMAs instead of 7 or 8) ran 4-17%
// faster than 7- and 8-pixel ones on ResNet-50's 1x1 and 3x3 convolutions; still 12 on AVX2.
int64_t AccumulatorRegisters(int64_t vector_registers, bool gemm) {
  int64_t operands = std::max<int64_t>(4, vector_registers / (gemm ? 4 : 8));
  return std::clamp<int64_t>(vector_registers - operands, 4, gemm ? 24 : 28);
}

// Vector registers a vector tile of `lanes` takes: the code generator emits power-of-two
// pieces (56 lanes: 32 + 16 + 8), each piece of up to `native` lanes one register.
int64_t VectorRegisters(int64_t lanes, int64_t native) {
  int64_t registers = 0;
  for (int64_t bit = int64_t{1} << 6; bit > 0; bit >>= 1) {
    if (lanes & bit) registers += std::max<int64_t>(1, bit / native);
  }
  return registers;
}

// What the loads of a block do along its vector axis.
struct LoadMix {
  std::vector<bool> is_vector;       // per load: moves with the lanes
  std::vector<double> vector_costs;  // per load: load instructions of one vector (0: broadcast)
  double vector_cost = 0;            // load instructions of one vector of each vector operand
  double broadcast_count = 0;        // loads that stay the same along the lanes
  int64_t vector_operands = 0;
};

// A candidate vector tile.
struct VectorTile {
  int64_t lanes;
  int64_t registers;
  double efficiency;  // useful lanes / computed lanes
};

// A candidate tile of another spatial axis.
struct Candidate {
  int axis;
  int64_t tile;
  bool broadcast;     // the broadcast operands move along it, the vector operands do not
  double efficiency;  // useful / computed iterations (below 1 when the tile does not divide)
  // Along a vector-operand axis: the load cost of one vector of the vector operands that move
  // along it (a depthwise convolution's input moves along w, its weights do not).
  double moving_vector_cost = 0;
};

// Operands packed in panels along the vector axis (packed_matmul's b[j / nb, k, j % nb]) are
// contiguous only inside a panel, and a grouped convolution's input (x[..., j / g * g + c])
// is the same element for a whole group of outputs: the vector tile is then at most the widest
// aligned tile (a power of two, at least kMinVectorTile) inside which every load has a constant
// step. Below the native width (groups of 4 or 8 channels on AVX-512) the vectors are partly
// filled, which still beats a gather per step. nullopt when some load has no such tile.
std::optional<int64_t> LaneLimit(const AccessModel& model, int vector_axis, int64_t native) {
  int64_t lane_limit = kMaxVectorTile;
  int64_t least = std::min(native, kMinVectorTile);
  for (const ir::Expr& load : model.loads()) {
    if (model.Stride(load, vector_axis)) continue;
    int64_t tile = lane_limit;
    while (tile >= least && !model.LaneStride(load, vector_axis, tile)) tile /= 2;
    if (tile < least) return std::nullopt;
    lane_limit = tile;
  }
  return lane_limit;
}

// The loads split into vector operands (contiguous or small-stride along the vector axis) and
// broadcasts (constant along it); nullopt when a load would be a gather.
std::optional<LoadMix> ClassifyLoads(const AccessModel& model, int vector_axis) {
  LoadMix mix;
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> stride = model.Stride(load, vector_axis);
    if (!stride || *stride < 0 || *stride > kMaxLoadStride) return std::nullopt;
    mix.is_vector.push_back(*stride != 0);
    mix.vector_costs.push_back(*stride == 0 ? 0.0 : *stride == 1 ? 1.0 : 2.5);
    if (*stride == 0) {
      mix.broadcast_count += 1;
    } else {
      mix.vector_cost += mix.vector_costs.back();
      ++mix.vector_operands;
    }
  }
  return mix;
}

// Vector tiles: multiples of the native width (a tile that does not divide the axis leaves a
// masked tail, costed by the lanes it wastes and a little for the masks), the whole axis in
// power-of-two pieces when it is short, and a single vector of the next power of two for an
// axis shorter than the native width.
std::vector<VectorTile> VectorTiles(int64_t extent, int64_t native, int64_t lane_limit) {
  std::vector<VectorTile> vector_tiles;
  if (lane_limit < native) {
    // One partly filled register per vector (LaneLimit); the tile divides the axis, since
    // each of its loads steps in aligned groups of lane_limit.
    if (extent % lane_limit == 0) vector_tiles.push_back({lane_limit, 1, 1.0});
    return vector_tiles;
  }
  for (int64_t t = native; t <= lane_limit && t < 2 * extent; t *= 2) {
    int64_t computed = (extent + t - 1) / t * t;
    double efficiency = static_cast<double>(extent) / static_cast<double>(computed);
    vector_tiles.push_back({t, t / native, computed == extent ? 1.0 : 0.9 * efficiency});
  }
  if (extent % native != 0 && extent <= 2 * kMaxVectorTile && lane_limit == kMaxVectorTile) {
    vector_tiles.push_back({extent, VectorRegisters(extent, native), 1.0});
  }
  if (extent < native) {
    int64_t pow2 = 1;
    while (pow2 < extent) pow2 *= 2;
    vector_tiles.push_back({pow2, 1, 0.9 * static_cast<double>(extent) / pow2});
  }
  return vector_tiles;
}

// Tiles of the other spatial axes along which either only the vector operands or only the
// broadcasts move. Only a GEMM's rows may be padded (a tile that does not divide the axis),
// wasting at most 1/8, and only along an axis the broadcasts move along.
std::vector<Candidate> TileAxisCandidates(const ir::Block& block, const AccessModel& model,
                                          const LoadMix& mix, int vector_axis,
                                          int64_t max_accumulators, bool gemm) {
  std::vector<Candidate> candidates;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    int axis = static_cast<int>(k);
    if (block->iter_vars[k].kind != ir::IterKind::kSpatial || axis == vector_axis) continue;
    int64_t n = block->iter_vars[k].extent;
    for (int64_t t = 2; t <= std::min<int64_t>(n, max_accumulators); ++t) {
      bool divides = n % t == 0;
      int64_t padded = (n + t - 1) / t * t;
      bool gemm_pad = gemm && n >= 8 * t;
      bool conv_pad = !gemm && 7 * padded <= 8 * n;  // wastes at most 1/8
      if (!divides && !gemm_pad && !conv_pad) continue;
      bool vector_moves = false, broadcast_moves = false;
      double moving_vector_cost = 0;
      for (size_t l = 0; l < model.loads().size(); ++l) {
        bool moves = model.VariesInTile(model.loads()[l], axis, t);
        (mix.is_vector[l] ? vector_moves : broadcast_moves) |= moves;
        if (moves && mix.is_vector[l]) moving_vector_cost += mix.vector_costs[l];
      }
      double efficiency = static_cast<double>(n) / static_cast<double>((n + t - 1) / t * t);
      if (!divides && !broadcast_moves) continue;
      if (vector_moves != broadcast_moves) {
        candidates.push_back({axis, t, broadcast_moves, efficiency, moving_vector_cost});
      }
    }
  }
  return candidates;
}

// False when a tile of `rows` along `axis` (and `second_rows` along `second_axis`, -1 for none)
// reads, through one broadcast operand, more rows whose lines fall into one L1 set than the cache
// has ways: the rows then evict each other within a few reduction steps (rows 12 KB apart, a GEMM
// with K = 3072: a 12-row tile ran 8% slower than an 8-row one on Zen 4's 8-way L1). True when
// the cache is not known.
bool RowsFitL1Sets(const AccessModel& model, const LoadMix& mix, int axis, int64_t rows,
                   int second_axis, int64_t second_rows, const CpuCoreModel& core) {
  if (core.l1_data_ways <= 0 || core.l1_data_bytes <= 0) return true;
  int64_t sets = core.l1_data_bytes / core.l1_data_ways / kCacheLineBytes;
  if (sets <= 0 || rows * second_rows <= core.l1_data_ways) return true;
  for (size_t l = 0; l < model.loads().size(); ++l) {
    if (mix.is_vector[l]) continue;
    int64_t bytes = ir::SizeOf(model.load_exprs()[l]->dtype);
    auto step = [&](int along) -> int64_t {
      if (along < 0) return 0;
      std::optional<int64_t> stride = model.Stride(model.loads()[l], along);
      return stride ? std::abs(*stride) * bytes : 0;
    };
    int64_t step_first = step(axis), step_second = step(second_axis);
    // Lines the tile's rows start at, counted once each, by the set they fall into.
    std::set<int64_t> lines;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t q = 0; q < second_rows; ++q) {
        lines.insert((r * step_first + q * step_second) / kCacheLineBytes);
      }
    }
    std::map<int64_t, int64_t> lines_per_set;
    for (int64_t line : lines) {
      if (++lines_per_set[line % sets] > core.l1_data_ways) return false;
    }
  }
  return true;
}

// Rates register tiles (a vector tile with up to two other axes' tiles) by useful lanes per
// cycle of one reduction step and keeps the best.
class TileRater {
 public:
  TileRater(const ir::Block& block, const AccessModel& model, const LoadMix& mix, bool gemm,
            int64_t vector_registers, int64_t min_tiles, const CpuCoreModel& core,
            RegisterTile plan)
      : block_(block),
        model_(model),
        mix_(mix),
        gemm_(gemm),
        vector_registers_(vector_registers),
        max_accumulators_(AccumulatorRegisters(vector_registers, gemm)),
        min_tiles_(min_tiles),
        core_(core),
        plan_(plan) {}

  // Keeps the tile of `vt` with tiles `b` (along which the broadcasts move) and `v` (the
  // second axis) when it fits the registers and rates best so far.
  void Consider(const VectorTile& vt, const Candidate* b, const Candidate* v);

  // The best tile considered, or nullopt when none fits.
  std::optional<RegisterTile> Best() const {
    if (best_ < 0) return std::nullopt;
    return plan_;
  }

 private:
  const ir::Block& block_;
  const AccessModel& model_;
  const LoadMix& mix_;
  bool gemm_;
  int64_t vector_registers_;
  int64_t max_accumulators_;
  int64_t min_tiles_;
  CpuCoreModel core_;
  RegisterTile plan_;
  double best_ = -1;
  int64_t best_accumulators_ = 0;
  double best_loads_ = 0;
};

void TileRater::Consider(const VectorTile& vt, const Candidate* b, const Candidate* v) {
  int64_t vector_tile = vt.lanes, registers = vt.registers;
  int64_t tb = b ? b->tile : 1, tv = v ? v->tile : 1;
  int64_t accumulators = registers * tb * tv;
  if (accumulators > max_accumulators_) return;
  if (!gemm_ && v && accumulators > kMaxUnrolledWindowAccumulators &&
      UnrollsWindowTaps(model_, block_, plan_.vector_axis, v->axis)) {
    return;
  }
  bool padded = (b && b->efficiency < 1) || (v && v->efficiency < 1);
  if (padded && vt.efficiency < 1) return;
  // A convolution pads one row axis only, tiled alone (a padded row tile next to a second
  // axis's tile measured slower than the exact tile it displaced).
  if (padded && !gemm_ && v) return;
  if (gemm_) {
    // Operands live during one step: the step's vector operands stay in registers while the
    // broadcasts stream past them, or the broadcasts stay while the vectors stream. A GEMM
    // tile that leaves no register spare spilled in the reduction loop (3x32 on AVX2).
    int64_t vectors = mix_.vector_operands * registers * tv;
    int64_t operands = mix_.broadcast_count > 0 ? std::min(vectors + 1, tb + 1) : 1;
    if (accumulators + operands >= vector_registers_) return;
  }
  if (SpatialExtent(block_) / (vector_tile * tb * tv) < min_tiles_) return;
  if (b && !RowsFitL1Sets(model_, mix_, b->axis, tb, v && v->broadcast ? v->axis : -1,
                          v && v->broadcast ? tv : 1, core_)) {
    return;
  }
  // A second axis the broadcasts move along (a convolution's w next to its h) multiplies the
  // broadcasts; one the vector operands move along multiplies the loads of those vector
  // operands that move along it (a depthwise convolution's weights are loaded once for a tile
  // along w, its input once per column).
  bool second_broadcasts = v && v->broadcast;
  double vector_loads = mix_.vector_cost;
  if (v && !second_broadcasts) {
    vector_loads += v->moving_vector_cost * static_cast<double>(tv - 1);
  }
  double loads = mix_.broadcast_count * static_cast<double>(tb * (second_broadcasts ? tv : 1)) +
                 vector_loads * static_cast<double>(registers);
  double cycles = std::max(
      {static_cast<double>(accumulators) / 2, loads / 2, gemm_ ? kAccumulatorChainCycles : 0.0});
  double efficiency = vt.efficiency * (b ? b->efficiency : 1.0) * (v ? v->efficiency : 1.0);
  double lanes = static_cast<double>(vector_tile * tb * tv) * efficiency / cycles;
  // Rates within `tolerance` of each other count as equal and the tile with more accumulators
  // wins: for a GEMM the model counts a padded row tile's wasted lanes but not what a larger
  // tile saves (loop overhead and operand traffic per FMA), so its tolerance is wider.
  bool two_fmas_per_cycle = core_.fma_per_cycle <= 0 || core_.fma_per_cycle >= 2;
  double tolerance = gemm_ && two_fmas_per_cycle ? kGemmTileTolerance : kExactTolerance;
  bool faster = lanes * tolerance > best_;
  bool close = !faster && lanes >= best_ * tolerance;
  // With no broadcast operand (a depthwise convolution) tiles along h and along w rate the
  // same; where the windows overlap (WindowsOverlapAlong: stride 1, or channels-last with the
  // taps spanning more than the stride) the innermost axis wins: its tile reads a few
  // neighbouring vectors of a few rows instead of one vector from each of many rows. Where
  // they do not (an NCHW stride-2 window, read by strided vector loads) the tile along h
  // measured faster.
  bool innermost = mix_.broadcast_count == 0 && v && v->axis > plan_.second_axis &&
                   WindowsOverlapAlong(model_, block_, v->axis);
  auto better = [&] {
    if (faster) return true;
    if (!close) return false;
    if (accumulators != best_accumulators_) return accumulators > best_accumulators_;
    if (lanes > best_ * 1.0001) return true;
    if (lanes < best_ * 0.9999) return false;
    return loads < best_loads_ || (loads == best_loads_ && innermost);
  };
  if (!better()) return;
  best_ = lanes;
  best_accumulators_ = accumulators;
  best_loads_ = loads;
  plan_.vector_tile = vector_tile;
  plan_.broadcast_axis = b ? b->axis : -1;
  plan_.broadcast_tile = tb;
  plan_.second_axis = v ? v->axis : -1;
  plan_.second_tile = tv;
}

}  // namespace

// Steps:
//   1. the vector axis: the innermost spatial iterator, along which the output is contiguous;
//   2. the widest vector tile inside which every load has a constant step (LaneLimit);
//   3. the loads split into vector operands and broadcasts (ClassifyLoads);
//   4. the candidate vector tiles (VectorTiles) and tiles of the other axes
//      (TileAxisCandidates);
//   5. every combination rated (TileRater): a vector tile alone, with a broadcast-axis tile,
//      with a broadcast-axis and a second-axis tile, or with a second-axis tile alone;
//   6. for a convolution, last, tiles along two axes the broadcasts move along (h and w): a
//      14x14 map has no row tile of 4-6 along one axis, and 2x16 keeps too few FMAs in flight;
//      considered last, so that such a tile wins only when it is better or holds more
//      accumulators.
std::optional<RegisterTile> PlanRegisterTile(const ir::Block& block, int64_t native,
                                             int64_t vector_registers, int64_t min_tiles,
                                             const CpuCoreModel& core,
                                             const std::vector<size_t>& dynamic) {
  // GEMM-like blocks (one reduction iterator: matmul, dense, batch_matmul) are planned with
  // the FMA latency, register pressure and padded row tiles counted; convolutions keep the
  // throughput-only model, which measured better for them (several of MobileNetV2's 1x1
  // convolutions ran slower under the GEMM rules).
  bool gemm = CountIterators(block, ir::IterKind::kReduction) == 1;
  // 1. The vector axis.
  AccessModel model(block);
  if (!model.valid()) return std::nullopt;
  RegisterTile plan;
  plan.vector_axis = InnermostSpatialAxis(block);
  if (plan.vector_axis < 0) return std::nullopt;
  int64_t extent = block->iter_vars[static_cast<size_t>(plan.vector_axis)].extent;
  if (extent < 4 || model.Stride(model.store(), plan.vector_axis) != 1) return std::nullopt;
  // 2. The lane limit.
  std::optional<int64_t> lane_limit = LaneLimit(model, plan.vector_axis, native);
  if (!lane_limit) return std::nullopt;
  // Steps are taken inside aligned tiles of the lane limit where it is below the widest tile, or
  // where a load is contiguous only inside panels of exactly that width.
  bool panels = false;
  for (const ir::Expr& load : model.loads()) {
    panels = panels || !model.Stride(load, plan.vector_axis);
  }
  if (*lane_limit < kMaxVectorTile || panels) model.AlignLanes(plan.vector_axis, *lane_limit);
  // 3. Vector operands and broadcasts.
  std::optional<LoadMix> mix = ClassifyLoads(model, plan.vector_axis);
  if (!mix) return std::nullopt;
  // 4. Candidates.
  std::vector<VectorTile> vector_tiles = VectorTiles(extent, native, *lane_limit);
  // Along a dynamic axis, DynamicAxisLanes at most (when such a tile is among the candidates).
  auto wide = [&](const VectorTile& tile) { return tile.lanes > DynamicAxisLanes(native); };
  if (std::find(dynamic.begin(), dynamic.end(), static_cast<size_t>(plan.vector_axis)) !=
          dynamic.end() &&
      !std::all_of(vector_tiles.begin(), vector_tiles.end(), wide)) {
    std::erase_if(vector_tiles, wide);
  }
  std::vector<Candidate> candidates = TileAxisCandidates(
      block, model, *mix, plan.vector_axis, AccumulatorRegisters(vector_registers, gemm), gemm);
  // 5. Every combination rated.
  TileRater rater(block, model, *mix, gemm, vector_registers, min_tiles, core, plan);
  for (const VectorTile& vector_tile : vector_tiles) {
    rater.Consider(vector_tile, nullptr, nullptr);
    for (const Candidate& b : candidates) {
      if (!b.broadcast) continue;
      rater.Consider(vector_tile, &b, nullptr);
      for (const Candidate& v : candidates) {
        if (!v.broadcast && v.axis != b.axis) rater.Consider(vector_tile, &b, &v);
      }
    }
    for (const Candidate& v : candidates) {
      if (!v.broadcast) rater.Consider(vector_tile, nullptr, &v);
    }
  }
  // 6. Two broadcast axes of a convolution.
  if (!gemm) {
    for (const VectorTile& vector_tile : vector_tiles) {
      for (const Candidate& b : candidates) {
        for (const Candidate& v : candidates) {
          if (b.broadcast && v.broadcast && b.axis < v.axis) rater.Consider(vector_tile, &b, &v);
        }
      }
    }
  }
  return rater.Best();
}

}  // namespace tandem::kernels::default_schedule
