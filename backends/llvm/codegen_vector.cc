// Vectorized loops: the lane-independence check and the emission of vector code.
//
// Vector code runs the loop body statement by statement for all lanes at once, while the
// kernel IR means lane after lane. The two agree when no lane reads or writes an element that
// another lane writes. CanVectorize proves that on the IR: after substituting block iterators
// by their bindings, every store's flat index must be affine in the lane variable with a
// non-zero coefficient and independent of loops inside the vectorized one (so each lane writes
// its own element, the same one on every inner iteration), all stores to a buffer must use the
// same index, and every load of a written buffer must use that index too.
#include <fmt/format.h>

#include <map>
#include <numeric>

#include "backends/llvm/codegen_internal.h"
#include "ir/error.h"
#include "ir/kernel/simplify.h"

namespace tandem::backends::codegen {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

void AddScaled(LinearForm* into, const LinearForm& form, int64_t scale) {
  into->constant += form.constant * scale;
  for (const auto& [var, c] : form.coefficients) {
    int64_t& slot = into->coefficients[var];
    slot += c * scale;
    if (slot == 0) into->coefficients.erase(var);
  }
  for (const auto& [term, c] : form.opaque) {
    if (c * scale != 0) into->opaque.emplace_back(term, c * scale);
  }
}

bool IsConstantForm(const LinearForm& f) {
  return f.coefficients.empty() && f.opaque.empty();
}

LinearForm Linearize(const Expr& e) {
  LinearForm form;
  if (e->dtype == ir::DataType::kInt64) {
    switch (e->kind) {
      case ExprKind::kIntImm:
        form.constant = e->int_value;
        return form;
      case ExprKind::kVar:
        form.coefficients[e.get()] = 1;
        return form;
      case ExprKind::kAdd:
      case ExprKind::kSub:
        if (e->operands.size() == 2) {
          form = Linearize(e->operands[0]);
          AddScaled(&form, Linearize(e->operands[1]), e->kind == ExprKind::kAdd ? 1 : -1);
          return form;
        }
        break;
      case ExprKind::kMul:
        if (e->operands.size() == 2) {
          LinearForm a = Linearize(e->operands[0]);
          LinearForm b = Linearize(e->operands[1]);
          if (IsConstantForm(a)) {
            AddScaled(&form, b, a.constant);
            return form;
          }
          if (IsConstantForm(b)) {
            AddScaled(&form, a, b.constant);
            return form;
          }
        }
        break;
      default:
        break;
    }
  }
  form.opaque.emplace_back(e, 1);
  return form;
}

bool FormsEqual(const LinearForm& a, const LinearForm& b) {
  if (a.constant != b.constant || a.coefficients != b.coefficients ||
      a.opaque.size() != b.opaque.size()) {
    return false;
  }
  for (size_t k = 0; k < a.opaque.size(); ++k) {
    if (a.opaque[k].second != b.opaque[k].second ||
        !ExprEqual(a.opaque[k].first, b.opaque[k].first)) {
      return false;
    }
  }
  return true;
}

namespace {

class LaneIndependence {
 public:
  explicit LaneIndependence(const ir::ForNode* loop) : lane_(loop->loop_var.get()) {
    varying_.push_back(loop->loop_var);
    ranges_[loop->loop_var.get()] = {0, loop->extent - 1};
  }

  bool Check(const Stmt& body) {
    Walk(body, {});
    return independent_ && Verify();
  }

 private:
  struct Access {
    const ir::BufferNode* buffer;
    LinearForm index;
  };

  void Walk(const Stmt& s, const ir::VarMap& bindings) {
    if (!s || !independent_) return;
    switch (s->kind) {
      case ir::StmtKind::kFor: {
        const auto* loop = ir::As<ir::ForNode>(s);
        varying_.push_back(loop->loop_var);
        ranges_[loop->loop_var.get()] = {0, loop->extent - 1};
        Walk(loop->body, bindings);
        return;
      }
      case ir::StmtKind::kSeq:
        for (const Stmt& child : ir::As<ir::SeqNode>(s)->stmts) Walk(child, bindings);
        return;
      case ir::StmtKind::kStore: {
        const auto* store = ir::As<ir::StoreNode>(s);
        RecordLoads(store->value, bindings);
        std::vector<Expr> indices;
        for (const Expr& index : store->indices) {
          RecordLoads(index, bindings);
          indices.push_back(ir::Simplify(ir::Substitute(index, bindings), ranges_));
        }
        stores_.push_back({store->buffer.get(), FlatIndex(store->buffer, indices)});
        return;
      }
      case ir::StmtKind::kIfThenElse: {
        const auto* branch = ir::As<ir::IfThenElseNode>(s);
        RecordLoads(branch->condition, bindings);
        Walk(branch->then_case, bindings);
        Walk(branch->else_case, bindings);
        return;
      }
      case ir::StmtKind::kBlockRealize: {
        const auto* realize = ir::As<ir::BlockRealizeNode>(s);
        const ir::Block& block = realize->block;
        // Per-lane allocations would need one copy per lane: not vectorized.
        if (!block || !block->alloc_buffers.empty() ||
            block->iter_vars.size() != realize->iter_values.size()) {
          independent_ = false;
          return;
        }
        ir::VarMap inner = bindings;
        for (size_t k = 0; k < block->iter_vars.size(); ++k) {
          RecordLoads(realize->iter_values[k], bindings);
          inner[block->iter_vars[k].var.get()] = ir::Substitute(realize->iter_values[k], bindings);
        }
        RecordLoads(realize->predicate, bindings);
        Walk(block->init, inner);
        Walk(block->body, inner);
        return;
      }
    }
  }

  void RecordLoads(const Expr& e, const ir::VarMap& bindings) {
    if (!e.defined()) return;
    ir::VisitExprTree(ir::Substitute(e, bindings), [&](const Expr& x) {
      if (x->kind == ExprKind::kLoad && x->buffer) {
        std::vector<Expr> indices;
        for (const Expr& index : x->operands) indices.push_back(ir::Simplify(index, ranges_));
        loads_.push_back({x->buffer.get(), FlatIndex(x->buffer, indices)});
      }
    });
  }

  static LinearForm FlatIndex(const ir::Buffer& buffer, const std::vector<Expr>& indices) {
    LinearForm flat;
    if (!buffer) return flat;
    int64_t stride = 1;
    for (size_t k = indices.size(); k-- > 0;) {
      if (indices[k].defined()) AddScaled(&flat, Linearize(indices[k]), stride);
      if (k < buffer->shape.size()) stride *= buffer->shape[k];
    }
    return flat;
  }

  bool Varies(const Expr& e) const {
    for (const ir::Var& v : varying_) {
      if (ir::UsesVar(e, v)) return true;
    }
    return false;
  }

  bool Verify() const {
    std::map<const ir::BufferNode*, const LinearForm*> written;
    for (const Access& store : stores_) {
      auto lane = store.index.coefficients.find(lane_);
      if (lane == store.index.coefficients.end()) return false;  // every lane writes one element
      for (const auto& [var, c] : store.index.coefficients) {
        if (var == lane_) continue;
        for (const ir::Var& v : varying_) {
          if (v.get() == var) return false;  // moves with an inner loop
        }
      }
      for (const auto& [term, c] : store.index.opaque) {
        if (Varies(term)) return false;
      }
      auto [it, inserted] = written.emplace(store.buffer, &store.index);
      if (!inserted && !FormsEqual(*it->second, store.index)) return false;
    }
    for (const Access& load : loads_) {
      auto it = written.find(load.buffer);
      if (it != written.end() && !FormsEqual(*it->second, load.index)) return false;
    }
    return true;
  }

  const ir::ExprNode* lane_;
  std::vector<ir::Var> varying_;
  // Ranges of the vectorized loop and the loops inside it (index simplification: a tile index
  // floordiv(t * 64 + lane, 64) is t).
  ir::VarRanges ranges_;
  std::vector<Access> stores_;
  std::vector<Access> loads_;
  bool independent_ = true;
};

}  // namespace

bool ExprEqual(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind || a->dtype != b->dtype || a->operands.size() != b->operands.size()) {
    return false;
  }
  switch (a->kind) {
    case ExprKind::kVar:
      return false;  // variables are equal only by identity
    case ExprKind::kIntImm:
      return a->int_value == b->int_value;
    case ExprKind::kFloatImm:
      return a->float_value == b->float_value;
    case ExprKind::kLoad:
      if (a->buffer != b->buffer) return false;
      break;
    case ExprKind::kCall:
      if (a->name != b->name) return false;
      break;
    default:
      break;
  }
  for (size_t k = 0; k < a->operands.size(); ++k) {
    if (!ExprEqual(a->operands[k], b->operands[k])) return false;
  }
  return true;
}

bool KernelCodegen::CanVectorize(const ir::ForNode* loop) const {
  LaneIndependence check(loop);
  return check.Check(loop->body);
}

void KernelCodegen::EmitVectorized(const ir::ForNode* loop) {
  int64_t width = std::min<int64_t>(loop->extent, kMaxVectorWidth);
  int64_t chunks = loop->extent / width;
  int64_t rest = loop->extent % width;
  auto emit_chunk = [&](llvm::Value* first_lane, int64_t lanes, int64_t multiple) {
    int saved_width = width_;
    llvm::Value* saved_mask = mask_;
    width_ = static_cast<int>(lanes);
    mask_ = nullptr;
    CgValue lane{CgValue::Form::kAffine, first_lane, 1, ir::DataType::kInt64, multiple};
    {
      ScopedEntry<std::unordered_map<const ir::ExprNode*, CgValue>> bind(
          vars_, loop->loop_var.get(), LoopVarValue(loop->loop_var, lane));
      Emit(loop->body);
    }
    width_ = saved_width;
    mask_ = saved_mask;
  };
  // Lanes [first, first + lanes) as vectors of power-of-two widths (widest first): a 56-lane
  // loop becomes 32 + 16 + 8 lanes. Odd widths would be legalized into awkward pieces, and
  // register tiles staged in stack arrays (see CompactLocalBuffers) are promoted to registers
  // only when every access covers whole power-of-two slices.
  // `multiple`: a known multiple of `first`.
  auto emit_pieces = [&](llvm::Value* first, int64_t lanes, int64_t multiple) {
    int64_t done = 0;
    while (done < lanes) {
      int64_t piece = int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(lanes - done)));
      llvm::Value* start =
          done == 0 ? first : builder_.CreateAdd(first, builder_.getInt64(done), "", true, true);
      if (piece == 1) {
        // One lane is scalar code.
        CgValue lane = Uniform(start, ir::DataType::kInt64);
        lane.multiple = std::gcd(multiple, done);
        ScopedEntry<std::unordered_map<const ir::ExprNode*, CgValue>> bind(
            vars_, loop->loop_var.get(), LoopVarValue(loop->loop_var, lane));
        Emit(loop->body);
      } else {
        emit_chunk(start, piece, std::gcd(multiple, done));
      }
      done += piece;
    }
  };
  if (chunks == 1) {
    emit_pieces(builder_.getInt64(0), width, 0);
  } else {
    EmitLoop(builder_.getInt64(0), builder_.getInt64(chunks), loop->loop_var->name + ".chunk",
             [&](llvm::Value* chunk) {
               emit_pieces(builder_.CreateMul(chunk, builder_.getInt64(width), "", true, true),
                           width, width);
             });
  }
  if (rest > 0) emit_pieces(builder_.getInt64(chunks * width), rest, chunks * width);
}

}  // namespace tandem::backends::codegen
