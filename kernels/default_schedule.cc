#include "kernels/default_schedule.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>
#include <thread>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"
#include "kernels/case_split.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels {

namespace {

// Vector registers a register tile may hold as accumulators; the rest hold the operands (at
// least 4: a few vector operands and a broadcast). 16 of AVX-512's 32, 12 of AVX2's 16.
int64_t AccumulatorRegisters(int vector_registers) {
  return std::clamp<int64_t>(vector_registers - 4, 4, 16);
}
// Cycles a GEMM step takes at least, whatever its accumulators: an accumulator's FMA chain
// (4-cycle latency on Zen 3 and Skylake-X) plus slack for load and issue jitter. With two FMA
// units a tile needs about 2 x this many accumulators to keep them busy: the 8-accumulator
// 4x16 tile ran BERT's 128x256x768 GEMM at 61 GFLOP/s on one Zen 3 core, the padded
// 12-accumulator 6x16 tile at 70 (C micro-kernels: 50 vs 75-95).
constexpr double kAccumulatorChainCycles = 6;
// Multiply-adds of a reduction block from which it runs on parallel threads whatever the size
// of its output (a thread pool dispatch costs a few microseconds; this is about 0.5 ms serial).
constexpr int64_t kParallelMinMacs = int64_t{1} << 20;
// Widest vector tile (lanes) of a register tile.
constexpr int64_t kMaxVectorTile = 64;
// Largest stride (elements) of a vector load the code generator loads as a span and shuffles
// (backends/llvm: kMaxStridedLoad); larger strides are gathers.
constexpr int64_t kMaxLoadStride = 4;
// A producer is inlined into a reduction only when the reduction reads each of its elements
// at most this many times on average.
constexpr int64_t kMaxInlineReuse = 16;
// ... and a pad growing its input by at most kLargePadGrowth only when at most this many.
constexpr int64_t kMaxPaddedReuse = 4;
constexpr double kLargePadGrowth = 1.1;
// A producer is inlined into a spatial block only when that block's value reads it at most
// this many times (a transform reading a whole tile per element keeps its producer separate).
constexpr int64_t kMaxInlineLoads = 4;
// Reduction loops of a block whose operands all move with the lanes (a depthwise convolution's
// or a pooling window's taps) and whose tile covers overlapping windows are unrolled up to this
// many iterations in all: the taps' input vectors are then loaded once for several outputs and
// the weights stay in registers (MobileNetV2's stride-1 3x3 depthwise convolutions ran 1.3-2x
// faster on AVX2; at stride 2 unrolling measured slower).
constexpr int64_t kMaxUnrolledTaps = 25;
// Largest number of copies a case split's selecting loops are unrolled into.
constexpr int64_t kMaxCaseSplitCopies = 64;
// Matrix operands with rows of at least this many elements (a multiple of 4 KiB) are packed
// into panels (see PackVectorOperands).
constexpr int64_t kPackMinRow = 1024;

const ir::Block& BlockOf(const Schedule& s, const std::string& name) {
  return ir::As<ir::BlockRealizeNode>(GetBlockPath(s.function(), name).target)->block;
}

bool IsReduction(const ir::Block& b) {
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kReduction) return true;
  }
  return false;
}

int64_t SpatialWork(const ir::Block& b) {
  int64_t n = 1;
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kSpatial) n *= iv.extent;
  }
  return n;
}

// The largest divisor of `extent` that is at most `limit`.
int64_t LargestDivisor(int64_t extent, int64_t limit) {
  for (int64_t d = std::min(extent, limit); d > 1; --d) {
    if (extent % d == 0) return d;
  }
  return 1;
}

bool ReadsAnyOf(const ir::Block& reader, const ir::Block& writer) {
  for (const ir::BufferRegion& r : reader->reads) {
    for (const ir::BufferRegion& w : writer->writes) {
      if (r.buffer == w.buffer) return true;
    }
  }
  return false;
}

// How many loads of `writer`'s outputs the value of `reader` holds.
int64_t LoadsOf(const ir::Block& reader, const ir::Block& writer) {
  int64_t count = 0;
  ir::VisitStmtExprs(reader->body, [&](const ir::Expr& top) {
    ir::VisitExprTree(top, [&](const ir::Expr& e) {
      if (e->kind != ir::ExprKind::kLoad) return;
      for (const ir::BufferRegion& w : writer->writes) count += e->buffer == w.buffer;
    });
  });
  return count;
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

// The register tile of a reduction block, MetaSchedule-style: the innermost spatial iterator
// is the vector axis (tile `vector_tile`, vectorized); `broadcast_axis` is a spatial iterator
// along which the vector operands stay the same (reused from registers) while the scalar
// (broadcast) operands change; `vector_axis2` one along which the broadcast operands stay the
// same. The tile is vector_tile x broadcast_tile x second_tile accumulators held in registers
// across the reduction loops.
struct RegisterTile {
  int vector_axis = -1;
  int64_t vector_tile = 1;
  int broadcast_axis = -1;
  int64_t broadcast_tile = 1;
  int second_axis = -1;
  int64_t second_tile = 1;
};

// What a reduction block's loads do along its iterators.
class AccessModel {
 public:
  explicit AccessModel(const ir::Block& block) : block_(block) {
    for (const ir::IterVar& iv : block->iter_vars) ranges_[iv.var.get()] = {0, iv.extent - 1};
    const auto* store = ir::As<ir::StoreNode>(block->body);
    if (!store) return;
    store_ = FlatIndex(store->buffer, store->indices);
    ir::VisitExprTree(store->value, [&](const ir::Expr& e) {
      if (e->kind == ir::ExprKind::kLoad && e->buffer != store->buffer) {
        loads_.push_back(FlatIndex(e->buffer, e->operands));
        load_exprs_.push_back(e);
      }
    });
    valid_ = store_.defined() && !loads_.empty();
  }

  bool valid() const { return valid_; }
  const std::vector<ir::Expr>& loads() const { return loads_; }
  // The load expressions themselves (buffer and indices), parallel to loads().
  const std::vector<ir::Expr>& load_exprs() const { return load_exprs_; }
  const ir::Expr& store() const { return store_; }

  // The constant step of `index` when iterator `axis` grows by one, or nullopt. Along the axis
  // given to AlignLanes the step is taken inside its aligned tiles.
  std::optional<int64_t> Stride(const ir::Expr& index, int axis) const {
    const ir::Var& v = block_->iter_vars[static_cast<size_t>(axis)].var;
    ir::Expr step = ir::Simplify(
        ir::Substitute(index, ir::VarMap{{v.get(), v + ir::IntImm(1)}}) - index, ranges_);
    int64_t value = 0;
    if (ir::AsConstInt(step, &value)) return value;
    if (axis == lane_axis_) return LaneStride(index, axis, lane_tile_);
    return std::nullopt;
  }

  // The step of `index` when iterator `axis` grows by one inside aligned tiles of `tile` values
  // (axis = outer * tile + inner, inner < tile), or nullopt: an operand packed in panels
  // (b[j / 16, k, j % 16]) moves contiguously only inside a panel.
  std::optional<int64_t> LaneStride(const ir::Expr& index, int axis, int64_t tile) const {
    const ir::IterVar& iv = block_->iter_vars[static_cast<size_t>(axis)];
    if (tile <= 1 || iv.extent % tile != 0) return std::nullopt;
    ir::Var outer = ir::MakeVar("outer"), inner = ir::MakeVar("inner");
    ir::VarRanges ranges = ranges_;
    ranges[outer.get()] = {0, iv.extent / tile - 1};
    ranges[inner.get()] = {0, tile - 2};  // inner + 1 stays in the tile
    ir::Expr at =
        ir::Substitute(index, ir::VarMap{{iv.var.get(), outer * ir::IntImm(tile) + inner}});
    ir::Expr next = ir::Substitute(at, ir::VarMap{{inner.get(), inner + ir::IntImm(1)}});
    ir::Expr step = ir::Simplify(ir::Simplify(next, ranges) - ir::Simplify(at, ranges), ranges);
    int64_t value = 0;
    if (!ir::AsConstInt(step, &value)) return std::nullopt;
    return value;
  }

  // From now on, steps along `axis` are taken inside aligned tiles of `tile` values (the vector
  // tile of the register tile).
  void AlignLanes(int axis, int64_t tile) {
    lane_axis_ = axis;
    lane_tile_ = tile;
  }

  // True when `index` changes inside a tile of `tile` consecutive values of iterator `axis`
  // (tiles aligned at multiples of `tile`).
  bool VariesInTile(const ir::Expr& index, int axis, int64_t tile) const {
    const ir::IterVar& iv = block_->iter_vars[static_cast<size_t>(axis)];
    ir::Var outer = ir::MakeVar("outer"), inner = ir::MakeVar("inner");
    ir::VarRanges ranges = ranges_;
    ranges[outer.get()] = {0, iv.extent / tile - 1};
    ranges[inner.get()] = {0, tile - 1};
    ir::Expr split = ir::Simplify(
        ir::Substitute(index, ir::VarMap{{iv.var.get(), outer * ir::IntImm(tile) + inner}}),
        ranges);
    return ir::UsesVar(split, inner);
  }

 private:
  ir::Expr FlatIndex(const ir::Buffer& buffer, const std::vector<ir::Expr>& indices) const {
    if (!buffer || indices.size() != buffer->shape.size()) return ir::Expr();
    ir::Expr flat = ir::IntImm(0);
    for (size_t d = 0; d < indices.size(); ++d) {
      if (indices[d]->dtype != ir::DataType::kInt64) return ir::Expr();
      flat = flat * ir::IntImm(buffer->shape[d]) + indices[d];
    }
    return ir::Simplify(flat, ranges_);
  }

  ir::Block block_;
  ir::VarRanges ranges_;
  ir::Expr store_;
  std::vector<ir::Expr> loads_;
  std::vector<ir::Expr> load_exprs_;
  bool valid_ = false;
  int lane_axis_ = -1;
  int64_t lane_tile_ = 0;
};

// True when every load of `model` that moves along spatial iterator `axis` moves by the same
// step along one of the block's reduction iterators: neighbouring outputs along `axis` read
// overlapping windows (a stride-1 convolution's taps), so a tile along it with its taps
// unrolled loads each input vector once for several outputs.
bool WindowsOverlapAlong(const AccessModel& model, const ir::Block& block, int axis) {
  bool moves = false;
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> step = model.Stride(load, axis);
    if (!step) return false;
    if (*step == 0) continue;
    moves = true;
    bool overlaps = false;
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (block->iter_vars[k].kind != ir::IterKind::kReduction) continue;
      std::optional<int64_t> tap = model.Stride(load, static_cast<int>(k));
      overlaps = overlaps || (tap && *tap == *step);
    }
    if (!overlaps) return false;
  }
  return moves;
}

// Chooses the register tile of a reduction block by a simple model of one reduction step:
// it issues one FMA per accumulator register and one load per operand register (a strided
// vector load counts 2.5: two loads and a shuffle), two of each per cycle; the tile with the
// most useful lanes per cycle wins (ties: more accumulators, then fewer loads).
// nullopt when the innermost spatial iterator cannot be vectorized with loads (a load would
// be a gather) or the output is not contiguous along it.
std::optional<RegisterTile> PlanRegisterTile(const ir::Block& block, int64_t native,
                                             int64_t vector_registers, int64_t min_tiles) {
  int64_t max_accumulators = AccumulatorRegisters(vector_registers);
  // GEMM-like blocks (one reduction iterator: matmul, dense, batch_matmul) are planned with
  // the FMA latency, register pressure and padded row tiles counted; convolutions keep the
  // throughput-only model, which measured better for them (several of MobileNetV2's 1x1
  // convolutions ran 1.5-3x slower under the GEMM rules).
  int64_t reduction_iterators = 0;
  for (const ir::IterVar& iv : block->iter_vars) {
    reduction_iterators += iv.kind == ir::IterKind::kReduction ? 1 : 0;
  }
  bool gemm = reduction_iterators == 1;
  AccessModel model(block);
  if (!model.valid()) return std::nullopt;
  std::vector<int> spatial;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    if (block->iter_vars[k].kind == ir::IterKind::kSpatial) spatial.push_back(static_cast<int>(k));
  }
  if (spatial.empty()) return std::nullopt;
  RegisterTile plan;
  plan.vector_axis = spatial.back();
  int64_t extent = block->iter_vars[static_cast<size_t>(plan.vector_axis)].extent;
  if (extent < 4 || model.Stride(model.store(), plan.vector_axis) != 1) return std::nullopt;
  // Operands packed in panels along the vector axis (packed_matmul's b[j / nb, k, j % nb]) are
  // contiguous only inside a panel: the vector tile is then at most the widest aligned tile
  // (a power of two, at least the native width) inside which every load has a constant step.
  int64_t lane_limit = kMaxVectorTile;
  for (const ir::Expr& load : model.loads()) {
    if (model.Stride(load, plan.vector_axis)) continue;
    int64_t tile = lane_limit;
    while (tile >= native && !model.LaneStride(load, plan.vector_axis, tile)) tile /= 2;
    if (tile < native) return std::nullopt;
    lane_limit = tile;
  }
  if (lane_limit < kMaxVectorTile) model.AlignLanes(plan.vector_axis, lane_limit);
  std::vector<bool> is_vector;  // per load: moves with the lanes
  double vector_cost = 0, broadcast_count = 0;
  int64_t vector_operands = 0;
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> stride = model.Stride(load, plan.vector_axis);
    if (!stride || *stride < 0 || *stride > kMaxLoadStride) return std::nullopt;
    is_vector.push_back(*stride != 0);
    if (*stride == 0) {
      broadcast_count += 1;
    } else {
      vector_cost += *stride == 1 ? 1.0 : 2.5;
      ++vector_operands;
    }
  }
  // Vector tiles: multiples of the native width (a tile that does not divide the axis leaves a
  // masked tail, costed by the lanes it wastes and a little for the masks), the whole axis in
  // power-of-two pieces when it is short, and a single vector of the next power of two for an
  // axis shorter than the native width.
  struct VectorTile {
    int64_t lanes;
    int64_t registers;
    double efficiency;  // useful lanes / computed lanes
  };
  std::vector<VectorTile> vector_tiles;
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
  // Candidate tile axes: (axis, tile, varies for vector loads, varies for broadcast loads).
  struct Candidate {
    int axis;
    int64_t tile;
    bool broadcast;     // the broadcast operands move along it, the vector operands do not
    double efficiency;  // useful / computed iterations (below 1 when the tile does not divide)
  };
  std::vector<Candidate> candidates;
  for (int axis : spatial) {
    if (axis == plan.vector_axis) continue;
    int64_t n = block->iter_vars[static_cast<size_t>(axis)].extent;
    for (int64_t t = 2; t <= std::min<int64_t>(n, max_accumulators); ++t) {
      // Only a GEMM's rows may be padded (see `gemm` above), wasting at most 1/8; whether the
      // axis is its broadcast axis is checked below, once the loads' movement is known.
      bool divides = n % t == 0;
      if (!divides && (!gemm || n < 8 * t)) continue;
      bool vector_moves = false, broadcast_moves = false;
      for (size_t l = 0; l < model.loads().size(); ++l) {
        bool moves = model.VariesInTile(model.loads()[l], axis, t);
        (is_vector[l] ? vector_moves : broadcast_moves) |= moves;
      }
      double efficiency = static_cast<double>(n) / static_cast<double>((n + t - 1) / t * t);
      if (!divides && !broadcast_moves) continue;
      if (vector_moves != broadcast_moves) {
        candidates.push_back({axis, t, broadcast_moves, efficiency});
      }
    }
  }
  double best = -1;
  int64_t best_accumulators = 0;
  double best_loads = 0;
  auto consider = [&](const VectorTile& vt, const Candidate* b, const Candidate* v) {
    int64_t vector_tile = vt.lanes, registers = vt.registers;
    int64_t tb = b ? b->tile : 1, tv = v ? v->tile : 1;
    int64_t accumulators = registers * tb * tv;
    if (accumulators > max_accumulators) return;
    bool padded = (b && b->efficiency < 1) || (v && v->efficiency < 1);
    if (padded && vt.efficiency < 1) return;
    if (gemm) {
      // Operands live during one step: the step's vector operands stay in registers while the
      // broadcasts stream past them, or the broadcasts stay while the vectors stream. A GEMM
      // tile that leaves no register spare spilled in the reduction loop (3x32 on AVX2).
      int64_t vectors = vector_operands * registers * tv;
      int64_t operands = broadcast_count > 0 ? std::min(vectors + 1, tb + 1) : 1;
      if (accumulators + operands >= vector_registers) return;
    }
    if (SpatialWork(block) / (vector_tile * tb * tv) < min_tiles) return;
    // A second axis the broadcasts move along (a convolution's w next to its h) multiplies the
    // broadcasts; one the vector operands move along multiplies the vector loads.
    bool second_broadcasts = v && v->broadcast;
    double loads = broadcast_count * static_cast<double>(tb * (second_broadcasts ? tv : 1)) +
                   vector_cost * static_cast<double>(registers * (second_broadcasts ? 1 : tv));
    double cycles = std::max(
        {static_cast<double>(accumulators) / 2, loads / 2, gemm ? kAccumulatorChainCycles : 0.0});
    double efficiency = vt.efficiency * (b ? b->efficiency : 1.0) * (v ? v->efficiency : 1.0);
    double lanes = static_cast<double>(vector_tile * tb * tv) * efficiency / cycles;
    bool tie = lanes > best * 0.9999 && lanes < best * 1.0001;
    // With no broadcast operand (a depthwise convolution) tiles along h and along w rate the
    // same; where the windows overlap (stride 1) the innermost axis wins: its tile reads a few
    // neighbouring vectors of a few rows instead of one vector from each of many rows (1.2-1.3x
    // faster at 112x112 and 28x28). At stride 2 the tile along h measured faster.
    bool innermost = broadcast_count == 0 && v && v->axis > plan.second_axis &&
                     WindowsOverlapAlong(model, block, v->axis);
    bool better = lanes > best * 1.0001 ||
                  (tie && (accumulators > best_accumulators ||
                           (accumulators == best_accumulators &&
                            (loads < best_loads || (loads == best_loads && innermost)))));
    if (!better) return;
    best = lanes;
    best_accumulators = accumulators;
    best_loads = loads;
    plan.vector_tile = vector_tile;
    plan.broadcast_axis = b ? b->axis : -1;
    plan.broadcast_tile = tb;
    plan.second_axis = v ? v->axis : -1;
    plan.second_tile = tv;
  };
  for (const VectorTile& vector_tile : vector_tiles) {
    consider(vector_tile, nullptr, nullptr);
    for (const Candidate& b : candidates) {
      if (!b.broadcast) continue;
      consider(vector_tile, &b, nullptr);
      for (const Candidate& v : candidates) {
        if (!v.broadcast && v.axis != b.axis) consider(vector_tile, &b, &v);
      }
    }
    for (const Candidate& v : candidates) {
      if (!v.broadcast) consider(vector_tile, nullptr, &v);
    }
  }
  // A convolution's rows may be tiled along two axes the broadcasts move along (h and w): a
  // 14x14 map has no row tile of 4-6 along one axis, and 2x16 keeps too few FMAs in flight.
  // Considered last, so that such a tile wins only when it is better or holds more
  // accumulators.
  if (!gemm) {
    for (const VectorTile& vector_tile : vector_tiles) {
      for (const Candidate& b : candidates) {
        for (const Candidate& v : candidates) {
          if (b.broadcast && v.broadcast && b.axis < v.axis) consider(vector_tile, &b, &v);
        }
      }
    }
  }
  if (best < 0) return std::nullopt;
  return plan;
}

class DefaultScheduler {
 public:
  DefaultScheduler(const ir::KernelFunction& kernel, const DefaultScheduleOptions& options)
      : s_(kernel), options_(options) {
    if (options_.vector_lanes <= 0) options_.vector_lanes = 16;
    if (options_.vector_registers <= 0) options_.vector_registers = 32;
    threads_ = options.num_threads > 0
                   ? options.num_threads
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  Schedule Run() {
    InlinePointwiseProducers();
    // Blocks may disappear on the way (an epilogue inlined into a write-back).
    for (const std::string& name : s_.BlockNames()) {
      if (done_.count(name) || !Exists(name)) continue;
      const ir::Block& b = BlockOf(s_, name);
      if (IsReduction(b) && !ScheduleRegisterTiled(name) && !ScheduleRowReduction(name)) {
        ScheduleReduction(name);
      }
    }
    for (const std::string& name : s_.BlockNames()) {
      if (done_.count(name) || !Exists(name)) continue;
      const ir::Block& b = BlockOf(s_, name);
      if (!IsReduction(b) && b->init == nullptr && !ScheduleCaseSplit(name)) {
        ScheduleSpatial(name);
      }
    }
    return s_;
  }

 private:
  bool Exists(const std::string& name) const { return FindBlock(s_.function(), name).has_value(); }

  // Inlines pointwise producers into their consumers, except into reductions that read an
  // element more than once: those would recompute the producer once per reduction step and per
  // register tile (and a pad or transpose inlined there turns contiguous vector loads into
  // masked or gathered ones), so such producers stay separate stages.
  void InlinePointwiseProducers() {
    for (const std::string& name : s_.BlockNames()) {
      if (!Exists(name)) continue;
      const ir::Block& b = BlockOf(s_, name);
      if (IsReduction(b) || !CaseSplitAxes(b).empty()) continue;
      bool feeds_reduction = false;
      for (const std::string& other : s_.BlockNames()) {
        if (other == name || !Exists(other)) continue;
        const ir::Block& c = BlockOf(s_, other);
        if (!ReadsAnyOf(c, b)) continue;
        if (!IsReduction(c)) {
          feeds_reduction |= LoadsOf(c, b) > kMaxInlineLoads;
          continue;
        }
        // A reduction that reads each element once (sum of squares) or a few times (a
        // depthwise convolution's padding) takes the producer: a separate pass over the data
        // would cost more than recomputing it.
        int64_t iterations = 1;
        for (const ir::IterVar& iv : c->iter_vars) iterations *= iv.extent;
        int64_t elements = 1;
        for (const ir::BufferRegion& w : b->writes) elements = ir::NumElements(w.buffer->shape);
        if (iterations > kMaxInlineReuse * elements) feeds_reduction = true;
        // Except a pad of a large image read a few times per element (a depthwise
        // convolution's 9 taps): its own pass costs little more than a copy, while inlined,
        // every tap pays for a bounds select. On a small image the border is a large part of
        // the padded buffer and the selects are the cheaper (depthwise 3x3 measured: 1.5-2x
        // faster with the pad separate at 56x56 and 112x112, 1.5x slower at 7x7).
        int64_t read_elements = 0;
        for (const ir::BufferRegion& r : b->reads) {
          read_elements = std::max(read_elements, ir::NumElements(r.buffer->shape));
        }
        if (iterations > kMaxPaddedReuse * elements &&
            static_cast<double>(elements) <= kLargePadGrowth * static_cast<double>(read_elements)) {
          feeds_reduction = true;
        }
      }
      if (feeds_reduction) continue;
      // Trial on the bare function first so the trace holds only steps that were applied.
      try {
        primitive::ComputeInline(s_.function(), name);
      } catch (const ir::Error&) {
        continue;
      }
      TrySteps(s_, [&] { s_.ComputeInline(s_.GetBlock(name)); });
    }
  }

  // The register-tiled schedule of a reduction block (see PlanRegisterTile): spatial loops
  // split into an outer part and the tile, order [outer spatial] [reduction] [tile], the
  // accumulators in a "local" cache_write block computed per outer iteration (the code
  // generator keeps them in registers), init decomposed, outer loops fused and parallel, and a
  // pointwise epilogue inlined into the write-back. False (schedule unchanged) when the block
  // does not fit that structure.
  bool ScheduleRegisterTiled(const std::string& name) {
    const ir::Block block = BlockOf(s_, name);
    // A long reduction into few outputs (a classifier's 1x1280x1000 GEMV) is worth parallel
    // threads too: its work is the reduction's, not the output's size.
    int64_t reduction_work = 1;
    for (const ir::IterVar& iv : block->iter_vars) {
      if (iv.kind == ir::IterKind::kReduction) reduction_work *= iv.extent;
    }
    bool parallel = threads_ > 1 && (SpatialWork(block) >= options_.parallel_min_work ||
                                     SpatialWork(block) * reduction_work >= kParallelMinMacs);
    std::optional<RegisterTile> plan = PlanRegisterTile(
        block, options_.vector_lanes, options_.vector_registers, parallel ? threads_ : 1);
    if (!plan) return false;
    bool ok = TrySteps(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      if (loops.size() != block->iter_vars.size()) throw ir::Error("unexpected loop nest");
      AccessModel model(block);
      model.AlignLanes(plan->vector_axis, plan->vector_tile);
      std::vector<LoopRV> outer, reduction, tile;
      std::vector<LoopRV> vector_loads_depend, vector_loads_free;
      LoopRV vector_loop = loops[static_cast<size_t>(plan->vector_axis)];
      std::optional<LoopRV> broadcast_loop, second_loop;
      for (size_t k = 0; k < loops.size(); ++k) {
        if (block->iter_vars[k].kind == ir::IterKind::kReduction) {
          reduction.push_back(loops[k]);
          continue;
        }
        int axis = static_cast<int>(k);
        int64_t t = axis == plan->vector_axis      ? plan->vector_tile
                    : axis == plan->broadcast_axis ? plan->broadcast_tile
                    : axis == plan->second_axis    ? plan->second_tile
                                                   : 1;
        LoopRV outer_loop = loops[k];
        if (t > 1) {
          std::vector<LoopRV> parts = s_.Split(loops[k], {-1, t});
          outer_loop = parts[0];
          if (axis == plan->vector_axis) vector_loop = parts[1];
          if (axis == plan->broadcast_axis) broadcast_loop = parts[1];
          if (axis == plan->second_axis) second_loop = parts[1];
        }
        // Outer loops along which the vector operands stay the same go innermost, so that
        // consecutive iterations (and each thread's chunk) reuse them from cache.
        bool vector_depends = false;
        for (const ir::Expr& load : model.loads()) {
          std::optional<int64_t> stride = model.Stride(load, plan->vector_axis);
          if (stride && *stride != 0 &&
              model.VariesInTile(load, axis, block->iter_vars[k].extent)) {
            vector_depends = true;
          }
        }
        (vector_depends ? vector_loads_depend : vector_loads_free).push_back(outer_loop);
      }
      outer = vector_loads_depend;
      outer.insert(outer.end(), vector_loads_free.begin(), vector_loads_free.end());
      if (broadcast_loop) tile.push_back(*broadcast_loop);
      if (second_loop) tile.push_back(*second_loop);
      // Reduction loops: the one whose loads move least (a channel block walked contiguously)
      // innermost, larger steps outside.
      std::vector<std::pair<int64_t, LoopRV>> steps;
      for (size_t k = 0, r = 0; k < loops.size(); ++k) {
        if (block->iter_vars[k].kind != ir::IterKind::kReduction) continue;
        int64_t step = std::numeric_limits<int64_t>::max();
        for (const ir::Expr& load : model.loads()) {
          std::optional<int64_t> stride = model.Stride(load, static_cast<int>(k));
          if (stride && *stride != 0) step = std::min(step, *stride < 0 ? -*stride : *stride);
        }
        steps.emplace_back(step, reduction[r++]);
      }
      std::stable_sort(steps.begin(), steps.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      for (size_t r = 0; r < steps.size(); ++r) reduction[r] = steps[r].second;
      std::vector<LoopRV> order = outer;
      order.insert(order.end(), reduction.begin(), reduction.end());
      order.insert(order.end(), tile.begin(), tile.end());
      order.push_back(vector_loop);
      s_.Reorder(order);
      PackVectorOperands(b, block, model, *plan);
      BlockRV writeback = s_.CacheWrite(b, 0, "local");
      InlineEpilogues(name, s_.BlockName(writeback));
      LoopRV fused = outer.size() > 1 ? s_.Fuse(outer) : outer[0];
      s_.ReverseComputeAt(writeback, fused);
      for (const LoopRV& loop : tile) s_.Unroll(loop);
      bool all_vector = true;
      for (const ir::Expr& load : model.loads()) {
        std::optional<int64_t> stride = model.Stride(load, plan->vector_axis);
        all_vector = all_vector && stride && *stride != 0;
      }
      if (all_vector && reduction_work <= kMaxUnrolledTaps && plan->second_axis >= 0 &&
          WindowsOverlapAlong(model, block, plan->second_axis)) {
        for (const LoopRV& loop : reduction) s_.Unroll(loop);
      }
      s_.Vectorize(vector_loop);
      BlockRV init = s_.DecomposeReduction(b, reduction.front());
      UnrollTileAndVectorize(init, tile.size() + 1);
      std::vector<LoopRV> write_loops = s_.GetLoops(writeback);
      UnrollTileAndVectorize(writeback, write_loops.size() - 1);
      if (parallel) s_.Parallel(fused);
      done_.insert(name);
      done_.insert(s_.BlockName(writeback));
      done_.insert(s_.BlockName(init));
    });
    return ok;
  }

  // Packs a matrix operand read as X[..., k, j] (j the vector axis, k a reduction iterator) whose
  // rows are long and a multiple of 4 KiB apart into panels X'[..., j / tile, k, j % tile]: a
  // register tile then streams one contiguous panel instead of rows that all fall into the same
  // few cache sets. The copy runs once per call, vectorized and parallel.
  void PackVectorOperands(const BlockRV& b, const ir::Block& block, const AccessModel& model,
                          const RegisterTile& plan) {
    const ir::Var& lane_var = block->iter_vars[static_cast<size_t>(plan.vector_axis)].var;
    for (const ir::Expr& load : model.load_exprs()) {
      const ir::Buffer& buffer = load->buffer;
      size_t rank = buffer->shape.size();
      if (rank < 2 || rank > 6 || !IsParam(s_.function(), buffer)) continue;
      int64_t row = buffer->shape.back();
      int64_t bytes = row * ir::SizeOf(buffer->dtype);
      if (row < kPackMinRow || bytes % 4096 != 0 || row % plan.vector_tile != 0) continue;
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
  void InlineEpilogues(const std::string& reduction, const std::string& writeback) {
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
        } catch (const ir::Error&) {
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
  void UnrollTileAndVectorize(const BlockRV& block, size_t count) {
    std::vector<LoopRV> loops = s_.GetLoops(block);
    if (loops.size() < count || count == 0) throw ir::Error("unexpected tile loops");
    for (size_t k = loops.size() - count; k + 1 < loops.size(); ++k) s_.Unroll(loops[k]);
    s_.Vectorize(loops.back());
  }

  // A reduction whose innermost reduction iterator walks its input contiguously (a row sum, a
  // softmax's max and sum, a norm) while the spatial axes would need gathers: the innermost
  // reduction loop is split by a vector tile and factored out (rfactor) into partial results,
  // one per lane, computed with contiguous vector loads (several vectors for independent
  // accumulation chains); a small loop then combines the partials. This reassociates the
  // reduction (results differ in rounding, as with any vectorized sum).
  bool ScheduleRowReduction(const std::string& name) {
    const ir::Block block = BlockOf(s_, name);
    AccessModel model(block);
    if (!model.valid() || block->iter_vars.back().kind != ir::IterKind::kReduction) return false;
    int axis = static_cast<int>(block->iter_vars.size()) - 1;
    int64_t extent = block->iter_vars.back().extent;
    for (const ir::Expr& load : model.loads()) {
      std::optional<int64_t> stride = model.Stride(load, axis);
      if (!stride || (*stride != 0 && *stride != 1)) return false;
    }
    int64_t lanes = 0;
    // One reduction (a norm): several vectors of partials for independent chains; many rows
    // (softmax): one vector per row, so that combining the partials stays cheap.
    int64_t native = options_.vector_lanes;
    std::vector<int64_t> widths{native};
    if (SpatialWork(block) == 1) widths = {4 * native, 2 * native, native};
    for (int64_t t : widths) {
      if (lanes == 0 && extent % t == 0 && extent / t >= 2) lanes = t;
    }
    if (lanes == 0) return false;
    int64_t work = SpatialWork(block);
    for (const ir::IterVar& iv : block->iter_vars) {
      if (iv.kind == ir::IterKind::kReduction) work *= iv.extent;
    }
    return TrySteps(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      if (loops.size() != block->iter_vars.size()) throw ir::Error("unexpected loop nest");
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
      if (first_reduction > 0 && work >= options_.parallel_min_work && threads_ > 1) {
        std::vector<LoopRV> spatial(
            rf_loops.begin(), rf_loops.begin() + static_cast<std::ptrdiff_t>(first_reduction));
        LoopRV fused = spatial.size() > 1 ? s_.Fuse(spatial) : spatial[0];
        if (s_.LoopExtent(fused) >= threads_) {
          s_.Parallel(fused);
          // The combination of the partials: its spatial loops parallel too.
          TrySteps(s_, [&] {
            std::vector<LoopRV> combine = s_.GetLoops(s_.GetBlock(name));
            std::vector<LoopRV> outer(
                combine.begin(), combine.begin() + static_cast<std::ptrdiff_t>(first_reduction));
            s_.Parallel(outer.size() > 1 ? s_.Fuse(outer) : outer[0]);
          });
        }
      }
      done_.insert(name);
      done_.insert(s_.BlockName(rf));
      done_.insert(s_.BlockName(init));
    });
  }

  void ScheduleReduction(const std::string& name) {
    const ir::Block block = BlockOf(s_, name);
    size_t num_spatial = 0;
    for (const ir::IterVar& iv : block->iter_vars) num_spatial += iv.kind == ir::IterKind::kSpatial;
    if (num_spatial == 0) return;
    TrySteps(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      if (loops.size() != block->iter_vars.size()) throw ir::Error("unexpected loop nest");
      std::vector<LoopRV> spatial(loops.begin(),
                                  loops.begin() + static_cast<std::ptrdiff_t>(num_spatial));
      std::vector<LoopRV> reduction(loops.begin() + static_cast<std::ptrdiff_t>(num_spatial),
                                    loops.end());
      // Vectorize the innermost spatial axis, register-tile the one before it.
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
      // Parallelize the outer spatial loops.
      std::vector<LoopRV> to_fuse = outer_spatial;
      to_fuse.push_back(vec_outer);
      LoopRV parallel = to_fuse.front();
      if (to_fuse.size() > 1) {
        TrySteps(s_, [&] { parallel = s_.Fuse(to_fuse); });
      }
      if (SpatialWork(block) >= options_.parallel_min_work && threads_ > 1) {
        TrySteps(s_, [&] { s_.Parallel(parallel); });
      }
      done_.insert(name);
      // A pointwise epilogue that reads this block's output runs right after each tile.
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

  // A case split (kernels/case_split.h): the selecting loops move inside, between the outer
  // loops (fused, parallel when large enough) and the vector loop (the innermost, split by
  // the native width), and are unrolled, so that each copy computes only its own arm and the
  // copies, side by side, share the loads and sums their arms have in common.
  bool ScheduleCaseSplit(const std::string& name) {
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
      if (loops.size() != block->iter_vars.size()) throw ir::Error("unexpected loop nest");
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
      if (SpatialWork(block) >= options_.parallel_min_work && threads_ > 1 &&
          s_.LoopExtent(fused) >= threads_) {
        s_.Parallel(fused);
      }
    });
    if (done) done_.insert(name);
    return done;
  }

  // Vectorizes the innermost loop of an epilogue placed under another block's loop.
  void ScheduleSpatialInner(const std::string& name) {
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
  // scalar) and the others fused and parallel; when the innermost loop is too short, all loops
  // fused, split by the vector width and vectorized.
  void ScheduleSpatial(const std::string& name) {
    bool done = TrySteps(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      if (loops.empty()) return;
      LoopRV last = loops.back();
      int64_t extent = s_.LoopExtent(last);
      // The whole loop when it is short (power-of-two pieces), else the widest tile dividing it.
      int64_t lanes =
          extent <= 2 * kMaxVectorTile ? extent : LargestDivisor(extent, kMaxVectorTile);
      if (lanes < options_.vector_lanes) throw ir::Error("short innermost loop");
      std::vector<LoopRV> outer(loops.begin(), loops.end() - 1);
      if (lanes < extent) {
        auto parts = s_.Split(last, {-1, lanes});
        outer.push_back(parts[0]);
        last = parts[1];
      }
      s_.Vectorize(last);
      bool parallel = SpatialWork(BlockOf(s_, name)) >= options_.parallel_min_work && threads_ > 1;
      int64_t tasks = 1;
      for (const LoopRV& loop : outer) tasks *= s_.LoopExtent(loop);
      if (parallel && tasks < threads_) throw ir::Error("too few outer iterations");
      if (outer.empty()) return;
      LoopRV fused = outer.size() > 1 ? s_.Fuse(outer) : outer[0];
      if (parallel) s_.Parallel(fused);
    });
    if (!done) ScheduleSpatialFused(name);
    done_.insert(name);
  }

  // A spatial block with a short innermost loop. When every load moves with the store along
  // the innermost iterator (elementwise, broadcast), all loops fused, split by the vector width
  // and vectorized. A load that moves with another stride (a transpose such as an NCHW -> NHWC
  // layout_transform) would make each vector a gather with per-lane index arithmetic, many
  // times slower than scalar code: then the outer loops are fused and parallel and the short
  // innermost loop is unrolled.
  void ScheduleSpatialFused(const std::string& name) {
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

  // Outer loops fused and parallel (when large enough), the short innermost loop unrolled.
  bool ScheduleTranspose(const std::string& name) {
    return TrySteps(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      if (loops.size() < 2) throw ir::Error("no outer loop");
      std::vector<LoopRV> outer(loops.begin(), loops.end() - 1);
      LoopRV fused = outer.size() > 1 ? s_.Fuse(outer) : outer[0];
      if (SpatialWork(BlockOf(s_, name)) >= options_.parallel_min_work && threads_ > 1 &&
          s_.LoopExtent(fused) >= threads_) {
        s_.Parallel(fused);
      }
      s_.Unroll(loops.back());
    });
  }

  Schedule s_;
  DefaultScheduleOptions options_;
  int threads_ = 1;
  std::set<std::string> done_;
};

}  // namespace

Schedule ApplyDefaultSchedule(const ir::KernelFunction& kernel,
                              const DefaultScheduleOptions& options) {
  return DefaultScheduler(kernel, options).Run();
}

}  // namespace tandem::kernels
