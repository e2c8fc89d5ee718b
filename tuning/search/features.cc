// Program features of scheduled kernels (see cost_model.h).
//
// Layout of the vector: kernel-wide counts, then one row per store for the kTopStores heaviest
// stores (by float operations, then bytes touched), then the same row summed over every store.
// A row holds the arithmetic counts of the store times its iteration count, the loop structure
// around it, memory totals, and kBufferSlots buffer slots (the buffers the statement touches,
// heaviest first) plus one slot aggregating the remaining buffers. Every raw value is a
// non-negative count, size or flag; each is stored as log2(1 + value).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ir/kernel/bound.h"
#include "ir/kernel/functor.h"
#include "tuning/search/cost_model.h"

namespace tandem::tuning {

namespace {

constexpr int kTopStores = 3;
constexpr int kBufferSlots = 4;
constexpr double kCacheLineBytes = 64;

// clang-format off
enum KernelField {
  kNumStores, kNumBlocks, kNumLoops, kNumParallelLoops, kNumVectorizedLoops, kNumUnrolledLoops,
  kNumAllocations, kLocalAllocationBytes, kGlobalAllocationBytes, kParameterBytes, kTotalFloatOps,
  kTotalBytes, kNumKernelFields
};
const char* const kKernelFieldNames[] = {
    "num_stores", "num_blocks", "num_loops", "num_parallel_loops", "num_vectorized_loops",
    "num_unrolled_loops", "num_allocations", "local_allocation_bytes", "global_allocation_bytes",
    "parameter_bytes", "total_float_ops", "total_bytes"};
// clang-format on

// clang-format off
enum StoreField {
  // Arithmetic, each times the iteration count of the store.
  kFloatAddSub, kFloatMul, kFloatFma, kFloatDiv, kFloatSpecial, kFloatCompareSelect, kFloatOps,
  kIntArith, kCast,
  // Loop structure.
  kLoops, kIterations, kSerialProduct, kParallelProduct, kVectorizedProduct, kUnrolledProduct,
  kInnermostExtent, kVectorWidth, kInnermostIsVectorized, kOuterParallelExtent,
  kLoopsOutsideParallel, kAutoUnrollMaxStep, kReplicatedBody,
  // The innermost three loops (0: innermost): extent and kind.
  kLoop0Extent, kLoop0Vectorized, kLoop0Unrolled, kLoop0Parallel, kLoop1Extent, kLoop1Vectorized,
  kLoop1Unrolled, kLoop1Parallel, kLoop2Extent, kLoop2Vectorized, kLoop2Unrolled, kLoop2Parallel,
  // Kind of statement.
  kIsInit, kIsGuarded, kStoresToLocal,
  // Memory.
  kBytesTouched, kUniqueBytes, kLocalBytesTouched, kArithmeticIntensity, kUniqueIntensity,
  kNumBuffers, kContiguousBuffers, kBroadcastBuffers, kStridedBuffers, kCarriedInnermost,
  kTargetBodyElements, kNumStoreFields
};
const char* const kStoreFieldNames[] = {
    "float_add_sub", "float_mul", "float_fma", "float_div", "float_special",
    "float_compare_select", "float_ops", "int_arith", "cast", "loops", "iterations",
    "serial_product", "parallel_product", "vectorized_product", "unrolled_product",
    "innermost_extent", "vector_width", "innermost_is_vectorized", "outer_parallel_extent",
    "loops_outside_parallel", "auto_unroll_max_step", "replicated_body", "loop0_extent",
    "loop0_vectorized", "loop0_unrolled", "loop0_parallel", "loop1_extent", "loop1_vectorized",
    "loop1_unrolled", "loop1_parallel", "loop2_extent", "loop2_vectorized", "loop2_unrolled",
    "loop2_parallel", "is_init", "is_guarded", "stores_to_local", "bytes_touched", "unique_bytes",
    "local_bytes_touched", "arithmetic_intensity", "unique_intensity", "num_buffers",
    "contiguous_buffers", "broadcast_buffers", "strided_buffers", "carried_innermost",
    "target_body_elements"};
// clang-format on

// clang-format off
enum BufferField {
  kRead, kWrite, kReadWrite, kBytes, kUnique, kUniqueLines, kStrideZero, kStrideOne, kStrideOther,
  kStride, kSecondStride, kVaryingStride, kLoopsInsideVarying, kBodyFootprint, kReuseCount,
  kReuseIterations, kReuseBytes, kLocal, kAllocationBytes, kNumBufferFields
};
const char* const kBufferFieldNames[] = {
    "read", "write", "read_write", "bytes", "unique_bytes", "unique_lines", "stride_zero",
    "stride_one", "stride_other", "stride", "second_stride", "varying_stride",
    "loops_inside_varying", "body_footprint", "reuse_count", "reuse_iterations", "reuse_bytes",
    "local", "allocation_bytes"};
// clang-format on

static_assert(std::size(kKernelFieldNames) == kNumKernelFields);
static_assert(std::size(kStoreFieldNames) == kNumStoreFields);
static_assert(std::size(kBufferFieldNames) == kNumBufferFields);

constexpr int kRowSize = kNumStoreFields + (kBufferSlots + 1) * kNumBufferFields;
constexpr int kNumFeatures = kNumKernelFields + (kTopStores + 1) * kRowSize;

using Row = std::vector<double>;

double& BufferCell(Row& row, int slot, BufferField field) {
  return row[kNumStoreFields + slot * kNumBufferFields + field];
}

// Operation counts of one evaluation of an expression.
struct OpCounts {
  double add_sub = 0, mul = 0, fma = 0, div = 0, special = 0, compare_select = 0, int_arith = 0,
         cast = 0;
};

bool IsFloatMul(const ir::Expr& e) {
  return e->kind == ir::ExprKind::kMul && ir::IsFloat(e->dtype);
}

void CountOps(const ir::Expr& e, OpCounts& counts) {
  if (!e.defined()) return;
  using ir::ExprKind;
  bool is_float = ir::IsFloat(e->dtype);
  switch (e->kind) {
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
    case ExprKind::kVar:
      return;
    case ExprKind::kAdd:
    case ExprKind::kSub:
      if (is_float && (IsFloatMul(e->operands[0]) || IsFloatMul(e->operands[1]))) {
        // a * b + c: one fused multiply-add; count the operands of the product, not the product.
        int product = IsFloatMul(e->operands[0]) ? 0 : 1;
        counts.fma += 1;
        for (const ir::Expr& factor : e->operands[product]->operands) CountOps(factor, counts);
        CountOps(e->operands[1 - product], counts);
        return;
      }
      (is_float ? counts.add_sub : counts.int_arith) += 1;
      break;
    case ExprKind::kMul:
      (is_float ? counts.mul : counts.int_arith) += 1;
      break;
    case ExprKind::kDiv:
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod:
      (is_float ? counts.div : counts.int_arith) += 1;
      break;
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kSelect:
      (is_float ? counts.compare_select : counts.int_arith) += 1;
      break;
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
      (ir::IsFloat(e->operands[0]->dtype) ? counts.compare_select : counts.int_arith) += 1;
      break;
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kNot:
      counts.int_arith += 1;
      break;
    case ExprKind::kCast:
      counts.cast += 1;
      break;
    case ExprKind::kCall:
      if (e->name == "abs" || e->name == "floor" || e->name == "ceil" || e->name == "round") {
        counts.compare_select += 1;
      } else {
        counts.special += 1;
      }
      break;
    case ExprKind::kLoad:
      break;
  }
  for (const ir::Expr& operand : e->operands) CountOps(operand, counts);
}

// One buffer touched by a store statement: the index lists of its accesses (in loop variables).
struct BufferUse {
  ir::Buffer buffer;
  bool read = false;
  bool write = false;
  std::vector<std::vector<ir::Expr>> sites;
  Row cells;  // kNumBufferFields raw values
};

// A loop around the statement being visited, and whether it multiplies the statement's
// executions (an init statement runs once per spatial iteration only).
struct LoopFrame {
  const ir::ForNode* loop;
  bool counted;
};

double Clamp(double value) {
  if (!std::isfinite(value) || value < 0) return value > 0 ? 1e30 : 0;
  return std::min(value, 1e30);
}

class Extractor {
 public:
  std::vector<float> Run(const ir::KernelFunction& kernel) {
    kernel_.assign(kNumKernelFields, 0);
    for (const ir::Buffer& param : kernel.params) {
      kernel_[kParameterBytes] += BufferBytes(param);
    }
    Visit(kernel.body);

    std::vector<size_t> order(rows_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (rows_[a][kFloatOps] != rows_[b][kFloatOps]) {
        return rows_[a][kFloatOps] > rows_[b][kFloatOps];
      }
      return rows_[a][kBytesTouched] > rows_[b][kBytesTouched];
    });
    Row sum(kRowSize, 0);
    for (const Row& row : rows_) {
      for (int i = 0; i < kRowSize; ++i) sum[i] += row[i];
      kernel_[kTotalFloatOps] += row[kFloatOps];
      kernel_[kTotalBytes] += row[kBytesTouched];
    }
    kernel_[kNumStores] = static_cast<double>(rows_.size());

    std::vector<float> features;
    features.reserve(kNumFeatures);
    auto append = [&](const Row& values) {
      for (double v : values) features.push_back(static_cast<float>(std::log2(1 + Clamp(v))));
    };
    append(kernel_);
    for (int i = 0; i < kTopStores; ++i) {
      append(static_cast<size_t>(i) < order.size() ? rows_[order[i]] : Row(kRowSize, 0));
    }
    append(sum);
    return features;
  }

 private:
  static double BufferBytes(const ir::Buffer& buffer) {
    double elements = 1;
    for (int64_t extent : buffer->shape) elements *= static_cast<double>(extent);
    return elements * static_cast<double>(ir::SizeOf(buffer->dtype));
  }

  void Visit(const ir::Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case ir::StmtKind::kFor: {
        const auto* loop = ir::As<ir::ForNode>(s);
        kernel_[kNumLoops] += 1;
        if (loop->for_kind == ir::ForKind::kParallel) kernel_[kNumParallelLoops] += 1;
        if (loop->for_kind == ir::ForKind::kVectorized) kernel_[kNumVectorizedLoops] += 1;
        if (loop->for_kind == ir::ForKind::kUnrolled) kernel_[kNumUnrolledLoops] += 1;
        loops_.push_back({loop, true});
        Visit(loop->body);
        loops_.pop_back();
        return;
      }
      case ir::StmtKind::kSeq:
        for (const ir::Stmt& child : ir::As<ir::SeqNode>(s)->stmts) Visit(child);
        return;
      case ir::StmtKind::kStore:
        VisitStore(ir::As<ir::StoreNode>(s));
        return;
      case ir::StmtKind::kIfThenElse: {
        const auto* branch = ir::As<ir::IfThenElseNode>(s);
        bool saved = guarded_;
        guarded_ = true;
        Visit(branch->then_case);
        Visit(branch->else_case);
        guarded_ = saved;
        return;
      }
      case ir::StmtKind::kBlockRealize:
        VisitBlock(ir::As<ir::BlockRealizeNode>(s));
        return;
    }
  }

  void VisitBlock(const ir::BlockRealizeNode* realize) {
    const ir::Block& block = realize->block;
    kernel_[kNumBlocks] += 1;
    for (const ir::Buffer& buffer : block->alloc_buffers) {
      kernel_[kNumAllocations] += 1;
      kernel_[buffer->scope == "local" ? kLocalAllocationBytes : kGlobalAllocationBytes] +=
          BufferBytes(buffer);
    }
    ir::VarMap saved_bindings = bindings_;
    double saved_binding_ops = binding_int_ops_;
    bool saved_guarded = guarded_;
    OpCounts binding_counts;
    for (size_t i = 0; i < block->iter_vars.size() && i < realize->iter_values.size(); ++i) {
      CountOps(realize->iter_values[i], binding_counts);
      bindings_[block->iter_vars[i].var.get()] =
          ir::Substitute(realize->iter_values[i], saved_bindings);
    }
    binding_int_ops_ = binding_counts.int_arith;
    int64_t always = 0;
    if (realize->predicate.defined() && !(ir::AsConstInt(realize->predicate, &always) && always)) {
      guarded_ = true;
    }
    if (block->init) {
      // The init runs once per spatial iteration: only loops feeding a spatial iterator count.
      std::vector<LoopFrame> saved_loops = loops_;
      for (LoopFrame& frame : loops_) {
        bool feeds_spatial = false;
        for (size_t i = 0; i < block->iter_vars.size() && i < realize->iter_values.size(); ++i) {
          if (block->iter_vars[i].kind == ir::IterKind::kSpatial &&
              ir::UsesVar(bindings_[block->iter_vars[i].var.get()], frame.loop->loop_var)) {
            feeds_spatial = true;
          }
        }
        frame.counted = frame.counted && feeds_spatial;
      }
      in_init_ = true;
      Visit(block->init);
      in_init_ = false;
      loops_ = saved_loops;
    }
    Visit(block->body);
    bindings_ = saved_bindings;
    binding_int_ops_ = saved_binding_ops;
    guarded_ = saved_guarded;
  }

  // Ranges of the loop variables: full for counted loops inside `first_full` (an index into
  // loops_), the single value 0 otherwise.
  ir::VarRanges Ranges(size_t first_full) const {
    ir::VarRanges ranges;
    for (size_t i = 0; i < loops_.size(); ++i) {
      const LoopFrame& frame = loops_[i];
      int64_t max =
          frame.counted && i >= first_full ? std::max<int64_t>(frame.loop->extent, 1) - 1 : 0;
      ranges[frame.loop->loop_var.get()] = ir::IntInterval{0, max};
    }
    return ranges;
  }

  // Unique bytes and cache lines of `use` over `ranges`.
  static std::pair<double, double> Footprint(const BufferUse& use, const ir::VarRanges& ranges) {
    const ir::Shape& shape = use.buffer->shape;
    double element_bytes = static_cast<double>(ir::SizeOf(use.buffer->dtype));
    std::vector<double> spans;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t low = std::numeric_limits<int64_t>::max();
      int64_t high = std::numeric_limits<int64_t>::min();
      for (const std::vector<ir::Expr>& site : use.sites) {
        if (d >= site.size()) continue;
        ir::IntInterval bound = ir::ConstIntBound(site[d], ranges);
        low = std::min(low, std::clamp<int64_t>(bound.min, 0, shape[d] - 1));
        high = std::max(high, std::clamp<int64_t>(bound.max, 0, shape[d] - 1));
      }
      spans.push_back(high >= low ? static_cast<double>(high - low + 1) : 1);
    }
    double elements = 1;
    for (double span : spans) elements *= span;
    double lines = 1;
    for (size_t d = 0; d < spans.size(); ++d) {
      lines *=
          d + 1 == spans.size() ? std::ceil(spans[d] * element_bytes / kCacheLineBytes) : spans[d];
    }
    return {elements * element_bytes, lines};
  }

  // The flat element offset of `site` with every loop variable 0 except `moved` set to `value`;
  // false when it is not a known constant (e.g. an index loaded from memory).
  bool FlatOffset(const BufferUse& use, const std::vector<ir::Expr>& site, const ir::Var& moved,
                  int64_t value, int64_t* offset) const {
    ir::VarRanges point;
    for (const LoopFrame& frame : loops_) point[frame.loop->loop_var.get()] = {0, 0};
    point[moved.get()] = {value, value};
    int64_t flat = 0;
    for (size_t d = 0; d < site.size() && d < use.buffer->shape.size(); ++d) {
      ir::IntInterval bound = ir::ConstIntBound(site[d], point);
      if (!bound.is_const()) return false;
      flat = flat * use.buffer->shape[d] + bound.min;
    }
    *offset = flat;
    return true;
  }

  // Indices into loops_ of the counted loops with more than one iteration, innermost first.
  std::vector<size_t> InnerLoops() const {
    std::vector<size_t> inner;
    for (size_t i = loops_.size(); i > 0; --i) {
      if (loops_[i - 1].counted && loops_[i - 1].loop->extent > 1) inner.push_back(i - 1);
    }
    return inner;
  }

  // The index into loops_ of the outermost loop of the replicated body: the innermost run of
  // vectorized and unrolled loops (or the innermost loop alone when it is neither).
  size_t BodyStart() const {
    std::vector<size_t> inner = InnerLoops();
    if (inner.empty()) return loops_.size();
    size_t start = inner[0];
    for (size_t i : inner) {
      ir::ForKind kind = loops_[i].loop->for_kind;
      if (kind != ir::ForKind::kVectorized && kind != ir::ForKind::kUnrolled) break;
      start = i;
    }
    return start;
  }

  // The largest distance in elements between the flat offsets of an access for consecutive
  // values of `var`; false when an offset is not a known constant (e.g. a loaded index).
  bool StrideAlong(const BufferUse& use, const ir::Var& var, int64_t* stride) const {
    *stride = 0;
    for (const std::vector<ir::Expr>& site : use.sites) {
      int64_t at_zero = 0, at_one = 0;
      if (!FlatOffset(use, site, var, 0, &at_zero) || !FlatOffset(use, site, var, 1, &at_one)) {
        return false;
      }
      *stride = std::max(*stride, at_one > at_zero ? at_one - at_zero : at_zero - at_one);
    }
    return true;
  }

  void DescribeUse(BufferUse& use, double iterations) const {
    Row& cells = use.cells;
    cells.assign(kNumBufferFields, 0);
    cells[use.read && use.write ? kReadWrite : use.write ? kWrite : kRead] = 1;
    double element_bytes = static_cast<double>(ir::SizeOf(use.buffer->dtype));
    cells[kBytes] = static_cast<double>(use.sites.size()) * element_bytes * iterations;
    auto [unique, lines] = Footprint(use, Ranges(0));
    cells[kUnique] = unique;
    cells[kUniqueLines] = lines;
    cells[kLocal] = use.buffer->scope == "local" ? 1 : 0;
    cells[kAllocationBytes] = BufferBytes(use.buffer);

    // Strides along the two innermost counted loops with more than one iteration, and along
    // the innermost one the buffer's indices use.
    std::vector<size_t> inner = InnerLoops();
    if (!inner.empty()) {
      int64_t stride = 0;
      if (!StrideAlong(use, loops_[inner[0]].loop->loop_var, &stride)) {
        cells[kStrideOther] = 1;
      } else {
        cells[stride == 0 ? kStrideZero : stride == 1 ? kStrideOne : kStrideOther] = 1;
        cells[kStride] = static_cast<double>(stride);
      }
    }
    if (inner.size() > 1) {
      int64_t stride = 0;
      if (StrideAlong(use, loops_[inner[1]].loop->loop_var, &stride)) {
        cells[kSecondStride] = static_cast<double>(stride);
      }
    }
    for (size_t i = 0; i < inner.size(); ++i) {
      int64_t stride = 0;
      if (StrideAlong(use, loops_[inner[i]].loop->loop_var, &stride) && stride == 0) continue;
      cells[kVaryingStride] = static_cast<double>(stride);
      cells[kLoopsInsideVarying] = static_cast<double>(i);
      break;
    }
    cells[kBodyFootprint] = Footprint(use, Ranges(BodyStart())).first;

    // Reuse: the innermost counted loop whose variable no access of the buffer uses.
    for (int i = static_cast<int>(loops_.size()) - 1; i >= 0; --i) {
      const LoopFrame& frame = loops_[i];
      if (!frame.counted || frame.loop->extent <= 1) continue;
      bool used = false;
      for (const std::vector<ir::Expr>& site : use.sites) {
        for (const ir::Expr& index : site) used = used || ir::UsesVar(index, frame.loop->loop_var);
      }
      if (used) continue;
      cells[kReuseCount] = static_cast<double>(frame.loop->extent);
      double inner = 1;
      for (size_t j = static_cast<size_t>(i) + 1; j < loops_.size(); ++j) {
        if (loops_[j].counted) inner *= static_cast<double>(loops_[j].loop->extent);
      }
      cells[kReuseIterations] = inner;
      cells[kReuseBytes] = Footprint(use, Ranges(static_cast<size_t>(i) + 1)).first;
      break;
    }
  }

  void AddLoopFeatures(Row& row) const {
    double iterations = 1;
    double products[4] = {1, 1, 1, 1};
    bool present[4] = {false, false, false, false};
    int outer_parallel = -1;
    const LoopFrame* innermost = nullptr;
    double vector_width = 0;
    double unroll_step = 0;
    for (size_t i = 0; i < loops_.size(); ++i) {
      const LoopFrame& frame = loops_[i];
      if (!frame.counted) continue;
      const ir::ForNode* loop = frame.loop;
      double extent = static_cast<double>(loop->extent);
      row[kLoops] += 1;
      iterations *= extent;
      int kind = static_cast<int>(loop->for_kind);  // serial, parallel, vectorized, unrolled
      products[kind] *= extent;
      present[kind] = true;
      if (loop->for_kind == ir::ForKind::kParallel && outer_parallel < 0) {
        outer_parallel = static_cast<int>(i);
        row[kOuterParallelExtent] = extent;
        row[kLoopsOutsideParallel] = row[kLoops] - 1;
      }
      if (loop->for_kind == ir::ForKind::kVectorized) vector_width = extent;
      for (const auto& [key, value] : loop->annotations.values()) {
        const int64_t* step = std::get_if<int64_t>(&value);
        if (step && key.find("unroll") != std::string::npos) {
          unroll_step = std::max(unroll_step, static_cast<double>(*step));
        }
      }
      innermost = &frame;
    }
    row[kIterations] = iterations;
    row[kSerialProduct] = present[0] ? products[0] : 0;
    row[kParallelProduct] = present[1] ? products[1] : 0;
    row[kVectorizedProduct] = present[2] ? products[2] : 0;
    row[kUnrolledProduct] = present[3] ? products[3] : 0;
    row[kVectorWidth] = vector_width;
    row[kAutoUnrollMaxStep] = unroll_step;
    if (innermost) {
      row[kInnermostExtent] = static_cast<double>(innermost->loop->extent);
      row[kInnermostIsVectorized] = innermost->loop->for_kind == ir::ForKind::kVectorized;
    }
    std::vector<size_t> inner = InnerLoops();
    for (size_t i = 0; i < inner.size() && i < 3; ++i) {
      const ir::ForNode* loop = loops_[inner[i]].loop;
      int base = kLoop0Extent + 4 * static_cast<int>(i);
      row[base] = static_cast<double>(loop->extent);
      row[base + 1] = loop->for_kind == ir::ForKind::kVectorized;
      row[base + 2] = loop->for_kind == ir::ForKind::kUnrolled;
      row[base + 3] = loop->for_kind == ir::ForKind::kParallel;
    }
    double body = inner.empty() ? 0 : 1;
    for (size_t i = BodyStart(); i < loops_.size(); ++i) {
      if (loops_[i].counted) body *= static_cast<double>(loops_[i].loop->extent);
    }
    row[kReplicatedBody] = body;
  }

  void VisitStore(const ir::StoreNode* store) {
    Row row(kRowSize, 0);
    AddLoopFeatures(row);
    double iterations = row[kIterations];

    OpCounts counts;
    CountOps(store->value, counts);
    for (const ir::Expr& index : store->indices) CountOps(index, counts);
    counts.int_arith += binding_int_ops_;
    row[kFloatAddSub] = counts.add_sub * iterations;
    row[kFloatMul] = counts.mul * iterations;
    row[kFloatFma] = counts.fma * iterations;
    row[kFloatDiv] = counts.div * iterations;
    row[kFloatSpecial] = counts.special * iterations;
    row[kFloatCompareSelect] = counts.compare_select * iterations;
    row[kFloatOps] = (counts.add_sub + counts.mul + 2 * counts.fma + counts.div + counts.special +
                      counts.compare_select) *
                     iterations;
    row[kIntArith] = counts.int_arith * iterations;
    row[kCast] = counts.cast * iterations;
    row[kIsInit] = in_init_ ? 1 : 0;
    row[kIsGuarded] = guarded_ ? 1 : 0;
    row[kStoresToLocal] = store->buffer->scope == "local" ? 1 : 0;

    // Buffers touched, in the loop variables.
    std::vector<BufferUse> uses;
    auto use_of = [&](const ir::Buffer& buffer) -> BufferUse& {
      for (BufferUse& use : uses) {
        if (use.buffer == buffer) return use;
      }
      uses.push_back(BufferUse{buffer});
      return uses.back();
    };
    std::vector<ir::Expr> store_indices;
    for (const ir::Expr& index : store->indices) {
      store_indices.push_back(ir::Substitute(index, bindings_));
    }
    BufferUse& target = use_of(store->buffer);
    target.write = true;
    target.sites.push_back(store_indices);
    ir::Expr value = ir::Substitute(store->value, bindings_);
    ir::VisitExprTree(value, [&](const ir::Expr& e) {
      if (e->kind != ir::ExprKind::kLoad) return;
      BufferUse& use = use_of(e->buffer);
      use.read = true;
      use.sites.push_back(e->operands);
    });
    for (BufferUse& use : uses) DescribeUse(use, iterations);
    // Heaviest first; stable, so equal buffers keep their order of first appearance.
    std::stable_sort(uses.begin(), uses.end(), [](const BufferUse& a, const BufferUse& b) {
      if (a.cells[kBytes] != b.cells[kBytes]) return a.cells[kBytes] > b.cells[kBytes];
      return a.cells[kUnique] > b.cells[kUnique];
    });
    for (size_t i = 0; i < uses.size(); ++i) {
      int slot = std::min(static_cast<int>(i), kBufferSlots);
      for (int f = 0; f < kNumBufferFields; ++f) {
        BufferCell(row, slot, static_cast<BufferField>(f)) += uses[i].cells[f];
      }
      row[kBytesTouched] += uses[i].cells[kBytes];
      row[kUniqueBytes] += uses[i].cells[kUnique];
      if (uses[i].cells[kLocal] > 0) row[kLocalBytesTouched] += uses[i].cells[kBytes];
    }
    row[kNumBuffers] = static_cast<double>(uses.size());
    for (const BufferUse& use : uses) {
      row[kContiguousBuffers] += use.cells[kStrideOne];
      row[kBroadcastBuffers] += use.cells[kStrideZero];
      row[kStridedBuffers] += use.cells[kStrideOther];
      if (!use.write) continue;
      // The innermost loop accumulates into one element: a loop-carried dependence.
      row[kCarriedInnermost] = use.read && use.cells[kStrideZero] > 0 ? 1 : 0;
      row[kTargetBodyElements] =
          use.cells[kBodyFootprint] / static_cast<double>(ir::SizeOf(use.buffer->dtype));
    }
    if (row[kBytesTouched] > 0) row[kArithmeticIntensity] = row[kFloatOps] / row[kBytesTouched];
    if (row[kUniqueBytes] > 0) row[kUniqueIntensity] = row[kFloatOps] / row[kUniqueBytes];
    rows_.push_back(std::move(row));
  }

  Row kernel_;
  std::vector<Row> rows_;
  std::vector<LoopFrame> loops_;
  ir::VarMap bindings_;
  double binding_int_ops_ = 0;
  bool guarded_ = false;
  bool in_init_ = false;
};

std::vector<std::string> MakeNames() {
  std::vector<std::string> names;
  for (const char* name : kKernelFieldNames) names.push_back(std::string("kernel.") + name);
  auto add_row = [&](const std::string& prefix) {
    for (const char* name : kStoreFieldNames) names.push_back(prefix + "." + name);
    for (int slot = 0; slot <= kBufferSlots; ++slot) {
      std::string buffer =
          slot < kBufferSlots ? "buffer" + std::to_string(slot) : std::string("other_buffers");
      for (const char* name : kBufferFieldNames)
        names.push_back(prefix + "." + buffer + "." + name);
    }
  };
  for (int i = 0; i < kTopStores; ++i) add_row("store" + std::to_string(i));
  add_row("all_stores");
  return names;
}

}  // namespace

std::vector<float> ExtractFeatures(const ir::KernelFunction& scheduled_kernel) {
  return Extractor().Run(scheduled_kernel);
}

const std::vector<std::string>& FeatureNames() {
  static const std::vector<std::string> names = MakeNames();
  return names;
}

size_t NumFeatures() {
  return kNumFeatures;
}

}  // namespace tandem::tuning
