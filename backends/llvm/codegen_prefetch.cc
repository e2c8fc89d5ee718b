// Software prefetch ahead of a loop (ir::kPrefetchDistanceKey).
//
// A register-tiled GEMM or convolution walks its weights panel by panel: the first tile of a
// panel reads it from memory at the rate the multiply-adds consume it, the following tiles
// from L2. The hardware prefetchers follow that stream, but with few misses in flight it
// stalls the first tile. Prefetching, in every tile, the same panel position of the tile
// `distance` iterations later spreads the next panel's fetch over the whole of the current
// one.
#include <algorithm>

#include "backends/llvm/codegen_internal.h"
#include "ir/error.h"

namespace tandem::backends::codegen {

using ir::Expr;
using Form = CgValue::Form;

namespace {

// Bytes of a cache line on the CPUs the code generator targets.
constexpr int64_t kCacheLineBytes = 64;

bool Mentions(const Expr& e, const ir::ExprNode* var) {
  bool found = false;
  ir::VisitExprTree(e, [&](const Expr& x) { found = found || x.get() == var; });
  return found;
}

bool MentionsAny(const std::vector<Expr>& exprs, const ir::ExprNode* var) {
  return std::any_of(exprs.begin(), exprs.end(), [&](const Expr& e) { return Mentions(e, var); });
}

}  // namespace

bool KernelCodegen::IsReadOnlyParameter(const ir::BufferNode* buffer) {
  if (std::none_of(kernel_.params.begin(), kernel_.params.end(),
                   [&](const ir::Buffer& p) { return p.get() == buffer; })) {
    return false;
  }
  if (!written_buffers_) {
    written_buffers_.emplace();
    ir::VisitStmtTree(kernel_.body, [&](const ir::Stmt& s) {
      if (const auto* store = ir::As<ir::StoreNode>(s))
        written_buffers_->insert(store->buffer.get());
    });
  }
  return written_buffers_->count(buffer) == 0;
}

// Steps:
//   1. the loads of read-only parameters in the block's body, their indices written over loop
//      variables (block iterators replaced by their bindings);
//   2. those whose address moves with the annotated loop, and in one copy only of each
//      replicated loop the address does not depend on;
//   3. the indices at the annotated loop's iteration + distance (clamped to its last);
//   4. one prefetch into L2 per cache line the vector of lanes covers, for contiguous lanes.
void KernelCodegen::EmitPrefetches(const ir::Block& block) {
  if (gpu_ || prefetch_loops_.empty() || width_ == 0) return;
  const PrefetchLoop& ahead = prefetch_loops_.back();
  const ir::ExprNode* loop_var = ahead.loop->loop_var.get();
  // 1. The loads.
  std::vector<Expr> loads;
  ir::VisitStmtExprs(block->body, [&](const Expr& top) {
    ir::VisitExprTree(top, [&](const Expr& e) {
      if (e->kind == ir::ExprKind::kLoad && e->buffer && IsReadOnlyParameter(e->buffer.get()))
        loads.push_back(e);
    });
  });
  for (const Expr& load : loads) {
    std::vector<Expr> indices;
    for (const Expr& index : load->operands) {
      indices.push_back(ir::Substitute(index, iterator_bindings_));
    }
    // 2. Loads that move with the loop, in the first copy of the replicated loops they do
    // not depend on.
    if (!MentionsAny(indices, loop_var)) continue;
    bool first_copy =
        std::all_of(unrolled_values_.begin(), unrolled_values_.end(), [&](const auto& entry) {
          return entry.second->is_const_int(0) || MentionsAny(indices, entry.first);
        });
    if (!first_copy) continue;
    // 3. The indices `distance` iterations later.
    const ir::Var& var = ahead.loop->loop_var;
    ir::VarMap later{{loop_var, ir::Min(var + ir::IntImm(ahead.distance, var->dtype),
                                        ir::IntImm(ahead.loop->extent - 1, var->dtype))}};
    for (Expr& index : indices) index = ir::Substitute(index, later);
    CgValue offset = FlatOffset(load->buffer, indices);
    if (offset.form != Form::kAffine || offset.stride != 1) continue;
    // 4. The prefetches: read, into L2 (locality 2), data cache.
    llvm::Type* memory = MemoryType(load->buffer->dtype);
    llvm::Value* base = BufferPointer(load->buffer);
    int64_t line_elements = std::max<int64_t>(1, kCacheLineBytes / ir::SizeOf(load->dtype));
    std::vector<int64_t> lanes;
    for (int64_t lane = 0; lane < width_; lane += line_elements) lanes.push_back(lane);
    // Lanes not known to start a line may end in one more.
    if (offset.multiple % line_elements != 0 && (width_ - 1) % line_elements != 0) {
      lanes.push_back(width_ - 1);
    }
    for (int64_t lane : lanes) {
      llvm::Value* element = builder_.CreateAdd(offset.value, builder_.getInt64(lane));
      llvm::Value* address = builder_.CreateGEP(memory, base, element);
      builder_.CreateIntrinsic(
          llvm::Intrinsic::prefetch, {address->getType()},
          {address, builder_.getInt32(0), builder_.getInt32(2), builder_.getInt32(1)});
    }
  }
}

}  // namespace tandem::backends::codegen
