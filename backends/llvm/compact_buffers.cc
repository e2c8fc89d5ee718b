// Compaction of "local" buffers before code generation (see CompactLocalBuffers in
// codegen_internal.h).
//
// cache_write / cache_read create local buffers with the full shape of the buffer they stage,
// allocated by the root block, while the accesses under one iteration of the tiled loops touch
// only a tile. The tile becomes the allocation, placed right above the accesses:
//   1. every access's indices are rewritten over loop variables (block iterators replaced by
//      their bindings) and split per axis into a part over the loops around S (the lowest
//      statement holding every access: the "base") and a part over the loops inside S, whose
//      bounds give the tile's extent;
//   2. an axis is compacted when every access has the same base and the tile is shorter than
//      the axis;
//   3. the tiles of different iterations of the loops around S must never overlap (otherwise
//      one iteration could read what another wrote, which the fresh zero-filled tile would
//      lose): each base is a sum of c * digit, a digit being v, v / a, v % b or (v / a) % b of
//      one loop variable v; on an axis whose digits are spaced at least a tile apart in mixed
//      radix, iterations that differ in any of its digits are at least a tile apart, and every
//      loop variable must be determined by such digits.
#include <algorithm>
#include <optional>

#include "backends/llvm/codegen_internal.h"
#include "ir/kernel/bound.h"
#include "ir/kernel/simplify.h"

namespace tandem::backends::codegen {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

namespace {

using Path = std::vector<const ir::StmtNode*>;

// Elements a compacted buffer may have beyond the original's (tiles padded past an axis end).
constexpr int64_t kMaxTile = 16384;

struct Access {
  std::vector<Expr> index;  // over loop variables, simplified
  Path path;                // statements from the allocating block's body to the access
  ir::VarRanges ranges;     // of the loops around it (a thread index: its own loop's extent)
};

// The state both walks share: block iterator bindings (over loop variables), loop ranges and
// the path of statements from the allocating block's body.
struct WalkState {
  ir::VarMap bindings;
  ir::VarRanges ranges;
  std::unordered_map<const ir::ExprNode*, ir::ForKind> loops;
  Path path;
};

std::vector<Expr> OverLoops(const std::vector<Expr>& indices, const WalkState& state) {
  std::vector<Expr> out;
  for (const Expr& index : indices) {
    out.push_back(ir::Simplify(ir::Substitute(index, state.bindings), state.ranges));
  }
  return out;
}

// Records every access of `buffer` under a block body.
class Collector {
 public:
  explicit Collector(const ir::BufferNode* buffer) : buffer_(buffer) {}

  void Walk(const Stmt& s) {
    if (!s || !valid) return;
    state.path.push_back(s.get());
    switch (s->kind) {
      case ir::StmtKind::kFor: {
        const auto* loop = ir::As<ir::ForNode>(s);
        state.loops[loop->loop_var.get()] = loop->for_kind;
        // A GPU thread index is one variable for all the loops bound to it (see
        // UnifyThreadIndices): its range is the widest of theirs.
        int64_t widest = loop->extent - 1;
        auto known = state.ranges.find(loop->loop_var.get());
        if (known != state.ranges.end() && known->second.has_upper()) {
          widest = std::max(widest, known->second.max);
        }
        state.ranges[loop->loop_var.get()] = {0, loop->extent - 1};
        Walk(loop->body);
        state.ranges[loop->loop_var.get()] = {0, widest};
        break;
      }
      case ir::StmtKind::kSeq:
        for (const Stmt& child : ir::As<ir::SeqNode>(s)->stmts) Walk(child);
        break;
      case ir::StmtKind::kStore: {
        const auto* store = ir::As<ir::StoreNode>(s);
        for (const Expr& index : store->indices) Record(index);
        Record(store->value);
        if (store->buffer.get() == buffer_) Add(store->indices);
        break;
      }
      case ir::StmtKind::kIfThenElse: {
        const auto* branch = ir::As<ir::IfThenElseNode>(s);
        Record(branch->condition);
        Walk(branch->then_case);
        Walk(branch->else_case);
        break;
      }
      case ir::StmtKind::kBlockRealize: {
        const auto* realize = ir::As<ir::BlockRealizeNode>(s);
        const ir::Block& block = realize->block;
        for (const Expr& value : realize->iter_values) Record(value);
        Record(realize->predicate);
        if (!block || block->iter_vars.size() != realize->iter_values.size()) {
          valid = false;
          break;
        }
        for (const ir::Buffer& b : block->alloc_buffers) valid = valid && b.get() != buffer_;
        std::vector<std::pair<const ir::ExprNode*, std::optional<Expr>>> saved;
        for (size_t k = 0; k < block->iter_vars.size(); ++k) {
          const ir::ExprNode* var = block->iter_vars[k].var.get();
          auto it = state.bindings.find(var);
          saved.emplace_back(
              var, it == state.bindings.end() ? std::nullopt : std::optional<Expr>(it->second));
          state.bindings[var] = ir::Substitute(realize->iter_values[k], state.bindings);
        }
        Walk(block->init);
        Walk(block->body);
        for (const auto& [var, value] : saved) {
          if (value) {
            state.bindings[var] = *value;
          } else {
            state.bindings.erase(var);
          }
        }
        break;
      }
    }
    state.path.pop_back();
  }

  WalkState state;
  std::vector<Access> accesses;
  bool valid = true;

 private:
  void Record(const Expr& e) {
    if (!e.defined()) return;
    ir::VisitExprTree(e, [&](const Expr& x) {
      if (x->kind == ExprKind::kLoad && x->buffer.get() == buffer_) Add(x->operands);
    });
  }
  void Add(const std::vector<Expr>& indices) {
    accesses.push_back({OverLoops(indices, state), state.path, state.ranges});
  }

  const ir::BufferNode* buffer_;
};

std::vector<const ir::ExprNode*> VarsOf(const Expr& e) {
  std::vector<const ir::ExprNode*> vars;
  ir::VisitExprTree(e, [&](const Expr& x) {
    if (x->kind == ExprKind::kVar) vars.push_back(x.get());
  });
  return vars;
}

Expr FormToExpr(const LinearForm& form, const std::vector<Expr>& vars) {
  Expr sum = ir::IntImm(form.constant);
  for (const Expr& var : vars) {
    auto it = form.coefficients.find(var.get());
    if (it != form.coefficients.end()) sum = sum + var * ir::IntImm(it->second);
  }
  for (const auto& [term, c] : form.opaque) sum = sum + term * ir::IntImm(c);
  return sum;
}

// One digit of a loop variable v: the atom determines floordiv(v, low) modulo high / low
// (high 0: unbounded).
struct Digit {
  const ir::ExprNode* var = nullptr;
  int64_t low = 1;
  int64_t high = 0;
};

bool PositiveConstant(const Expr& e, int64_t* value) {
  return ir::AsConstInt(e, value) && *value > 0;
}

std::optional<Digit> AsDigit(const Expr& atom) {
  int64_t a = 0, b = 0;
  if (atom->kind == ExprKind::kVar) return Digit{atom.get(), 1, 0};
  if (atom->kind == ExprKind::kFloorDiv && atom->operands[0]->kind == ExprKind::kVar &&
      PositiveConstant(atom->operands[1], &a)) {
    return Digit{atom->operands[0].get(), a, 0};
  }
  if (atom->kind == ExprKind::kFloorMod && PositiveConstant(atom->operands[1], &b)) {
    const Expr& inner = atom->operands[0];
    if (inner->kind == ExprKind::kVar) return Digit{inner.get(), 1, b};
    if (inner->kind == ExprKind::kFloorDiv && inner->operands[0]->kind == ExprKind::kVar &&
        PositiveConstant(inner->operands[1], &a)) {
      return Digit{inner->operands[0].get(), a, a * b};
    }
  }
  return std::nullopt;
}

class Compactor {
 public:
  Compactor(const ir::Buffer& buffer, const Stmt& body, bool gpu)
      : buffer_(buffer), body_(body), gpu_(gpu) {}

  // The rewritten block body, or null when the buffer cannot be compacted.
  Stmt Run() {
    Collector collector(buffer_.get());
    collector.Walk(body_);
    if (!collector.valid || collector.accesses.empty()) return nullptr;
    state_ = collector.state;
    if (!Analyze(collector.accesses)) return nullptr;
    state_.path.clear();
    state_.bindings.clear();
    return Rewrite(body_);
  }

  const ir::Buffer& compacted() const { return compacted_; }

 private:
  bool Analyze(const std::vector<Access>& accesses) {
    lca_ = accesses[0].path;
    for (const Access& access : accesses) {
      size_t n = 0;
      while (n < lca_.size() && n < access.path.size() && lca_[n] == access.path[n]) ++n;
      lca_.resize(n);
    }
    if (lca_.empty()) return false;
    // Loops around S (the last statement of lca_) inside the allocating block.
    for (size_t k = 0; k + 1 < lca_.size(); ++k) {
      if (lca_[k]->kind != ir::StmtKind::kFor) continue;
      const auto* loop = static_cast<const ir::ForNode*>(lca_[k]);
      if (loop->for_kind == ir::ForKind::kVectorized) return false;  // per-lane tiles
      outer_.push_back(loop);
    }
    auto is_outer = [&](const ir::ExprNode* var) {
      for (const ir::ForNode* loop : outer_) {
        if (loop->loop_var.get() == var) return true;
      }
      auto kind = state_.loops.find(var);
      return kind != state_.loops.end() && OwnCopyPer(kind->second);
    };
    auto is_inner = [&](const ir::ExprNode* var) {
      return state_.loops.count(var) > 0 && !is_outer(var);
    };

    size_t rank = buffer_->shape.size();
    offsets_.assign(rank, Expr());
    ir::Shape shape = buffer_->shape;
    std::vector<LinearForm> bases(rank);
    bool any = false;
    for (size_t d = 0; d < rank; ++d) {
      // The variables of this axis's indices, in order of first appearance.
      std::vector<Expr> vars;
      for (const Access& access : accesses) {
        ir::VisitExprTree(access.index[d], [&](const Expr& x) {
          if (x->kind == ExprKind::kVar &&
              std::none_of(vars.begin(), vars.end(), [&](const Expr& v) { return v.same_as(x); })) {
            vars.push_back(x);
          }
        });
      }
      std::optional<LinearForm> base;
      int64_t low = ir::IntInterval::kPosInf, high = ir::IntInterval::kNegInf;
      bool ok = true;
      for (const Access& access : accesses) {
        LinearForm form = Linearize(access.index[d]);
        LinearForm inner, outer;
        inner.constant = form.constant;
        for (const auto& [var, c] : form.coefficients) {
          (is_inner(var) ? inner : outer).coefficients[var] = c;
        }
        for (const auto& [term, c] : form.opaque) {
          bool has_inner = false, has_other = false;
          for (const ir::ExprNode* var : VarsOf(term))
            (is_inner(var) ? has_inner : has_other) = true;
          if (has_inner && has_other) ok = false;
          (has_inner ? inner : outer).opaque.emplace_back(term, c);
        }
        if (!ok) break;
        ir::IntInterval bound = ir::ConstIntBound(FormToExpr(inner, vars), access.ranges);
        if (!bound.has_lower() || !bound.has_upper()) {
          ok = false;
          break;
        }
        low = std::min(low, bound.min);
        high = std::max(high, bound.max);
        if (!base) {
          base = outer;
        } else if (!FormsEqual(*base, outer)) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      // A tile shorter than the axis; or, when the tile does not move, one longer than the axis
      // (vector lanes masked off past its end): the longer array keeps every vector access in
      // bounds and at the same offsets in each row.
      bool moves = !base->coefficients.empty() || !base->opaque.empty();
      if (high - low + 1 == buffer_->shape[d] && low == 0) continue;
      if (high - low + 1 >= buffer_->shape[d] && moves) continue;
      shape[d] = high - low + 1;
      bases[d] = *base;
      LinearForm offset = *base;
      offset.constant = low;
      offsets_[d] = ir::Simplify(FormToExpr(offset, vars), state_.ranges);
      any = true;
    }
    if (!any || !Disjoint(bases, shape, is_outer)) return false;
    if (ir::NumElements(shape) > std::max<int64_t>(ir::NumElements(buffer_->shape), kMaxTile)) {
      return false;
    }
    compacted_ = ir::MakeBuffer(buffer_->name, buffer_->dtype, shape, buffer_->scope);
    return true;
  }

  // True when the tiles of different iterations of the loops around S never overlap.
  bool Disjoint(const std::vector<LinearForm>& bases, const ir::Shape& shape,
                const std::function<bool(const ir::ExprNode*)>& is_outer) {
    std::vector<Digit> digits;
    for (size_t d = 0; d < bases.size(); ++d) {
      if (!offsets_[d].defined()) continue;
      struct Term {
        int64_t coefficient;
        int64_t values;
        std::optional<Digit> digit;
      };
      std::vector<Term> terms;
      bool separating = true;
      auto add = [&](const Expr& atom, int64_t c) {
        bool varies = false;
        for (const ir::ExprNode* var : VarsOf(atom)) varies = varies || is_outer(var);
        if (!varies) return;  // the same for every iteration
        std::optional<Digit> digit = AsDigit(atom);
        ir::IntInterval range = ir::ConstIntBound(atom, state_.ranges);
        if (!digit || !range.has_lower() || !range.has_upper()) {
          separating = false;
          return;
        }
        terms.push_back({c < 0 ? -c : c, range.max - range.min + 1, digit});
      };
      for (const auto& [var, c] : bases[d].coefficients) {
        for (const ir::ForNode* loop : outer_) {
          if (loop->loop_var.get() == var) add(loop->loop_var, c);
        }
      }
      for (const auto& [term, c] : bases[d].opaque) add(term, c);
      if (!separating) continue;
      std::sort(terms.begin(), terms.end(),
                [](const Term& a, const Term& b) { return a.coefficient < b.coefficient; });
      int64_t reach = shape[d];  // the separation a digit step must exceed
      for (const Term& term : terms) {
        if (term.coefficient < reach) {
          separating = false;
          break;
        }
        reach += term.coefficient * (term.values - 1);
      }
      if (!separating) continue;
      for (const Term& term : terms) digits.push_back(*term.digit);
    }
    // Every loop variable around S must be determined by digits on separating axes (but those
    // whose iterations each have their own copy of the buffer).
    for (const ir::ForNode* loop : outer_) {
      if (loop->extent <= 1 || OwnCopyPer(loop->for_kind)) continue;
      int64_t known = 1;  // the digits seen determine v modulo `known`
      bool progress = true;
      while (known < loop->extent && progress) {
        progress = false;
        for (const Digit& digit : digits) {
          if (digit.var != loop->loop_var.get() || known % digit.low != 0) continue;
          if (digit.high == 0) {
            known = loop->extent;
          } else if (digit.high > known && digit.high % known == 0) {
            known = digit.high;
          } else {
            continue;
          }
          progress = true;
          break;
        }
      }
      if (known < loop->extent) return false;
    }
    return true;
  }

  std::vector<Expr> NewIndex(const std::vector<Expr>& index) {
    std::vector<Expr> over_loops = OverLoops(index, state_);
    std::vector<Expr> out = index;
    for (size_t d = 0; d < index.size(); ++d) {
      if (offsets_[d].defined()) out[d] = ir::Simplify(over_loops[d] - offsets_[d], state_.ranges);
    }
    return out;
  }

  Expr RewriteExpr(const Expr& e) {
    if (!e.defined()) return e;
    std::vector<Expr> operands;
    bool changed = false;
    for (const Expr& operand : e->operands) {
      operands.push_back(RewriteExpr(operand));
      changed = changed || !operands.back().same_as(operand);
    }
    if (e->kind == ExprKind::kLoad && e->buffer == buffer_) {
      return ir::Load(compacted_, NewIndex(operands));
    }
    if (!changed) return e;
    auto node = std::make_shared<ir::ExprNode>(*e);
    node->operands = operands;
    return Expr(node);
  }

  Stmt Rewrite(const Stmt& s) {
    if (!s) return s;
    state_.path.push_back(s.get());
    Stmt out = RewriteInner(s);
    if (state_.path == lca_) {
      auto scope = std::make_shared<ir::BlockNode>();
      scope->name = buffer_->name + "_scope";
      scope->body = out;
      scope->alloc_buffers = {compacted_};
      out = ir::MakeBlockRealize({}, ir::IntImm(1, ir::DataType::kBool), scope);
    }
    state_.path.pop_back();
    return out;
  }

  Stmt RewriteInner(const Stmt& s) {
    switch (s->kind) {
      case ir::StmtKind::kFor: {
        const auto* loop = ir::As<ir::ForNode>(s);
        return ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind, Rewrite(loop->body),
                           loop->annotations);
      }
      case ir::StmtKind::kSeq: {
        std::vector<Stmt> stmts;
        for (const Stmt& child : ir::As<ir::SeqNode>(s)->stmts) stmts.push_back(Rewrite(child));
        auto seq = std::make_shared<ir::SeqNode>();
        seq->stmts = std::move(stmts);
        return seq;
      }
      case ir::StmtKind::kStore: {
        const auto* store = ir::As<ir::StoreNode>(s);
        std::vector<Expr> indices;
        for (const Expr& index : store->indices) indices.push_back(RewriteExpr(index));
        Expr value = RewriteExpr(store->value);
        if (store->buffer == buffer_) {
          return ir::MakeStore(compacted_, NewIndex(indices), value);
        }
        return ir::MakeStore(store->buffer, indices, value);
      }
      case ir::StmtKind::kIfThenElse: {
        const auto* branch = ir::As<ir::IfThenElseNode>(s);
        return ir::MakeIfThenElse(RewriteExpr(branch->condition), Rewrite(branch->then_case),
                                  Rewrite(branch->else_case));
      }
      case ir::StmtKind::kBlockRealize: {
        const auto* realize = ir::As<ir::BlockRealizeNode>(s);
        const ir::Block& block = realize->block;
        std::vector<Expr> values;
        for (const Expr& value : realize->iter_values) values.push_back(RewriteExpr(value));
        Expr predicate = RewriteExpr(realize->predicate);
        ir::VarMap saved = state_.bindings;
        for (size_t k = 0; k < block->iter_vars.size(); ++k) {
          state_.bindings[block->iter_vars[k].var.get()] =
              ir::Substitute(realize->iter_values[k], saved);
        }
        auto node = std::make_shared<ir::BlockNode>(*block);
        node->init = Rewrite(block->init);
        node->body = Rewrite(block->body);
        state_.bindings = std::move(saved);
        return ir::MakeBlockRealize(values, predicate, node);
      }
    }
    return s;
  }

  // True when each iteration of a loop of this kind has its own copy of the buffer on the GPU:
  // each thread block has its own shared memory, each thread its own local memory.
  bool OwnCopyPer(ir::ForKind kind) const {
    if (!gpu_ || !ir::IsThreadBinding(kind)) return false;
    return ir::IsBlockIndex(kind) || buffer_->scope == "local";
  }

  ir::Buffer buffer_;
  Stmt body_;
  bool gpu_;
  WalkState state_;
  Path lca_;
  std::vector<const ir::ForNode*> outer_;
  std::vector<Expr> offsets_;  // per axis: the tile's corner over the loops around S
  ir::Buffer compacted_;
};

// Compacts `buffer` where some block allocates it; returns the new body or null.
class Driver : public ir::StmtMutator {
 public:
  Driver(ir::Buffer buffer, bool gpu) : buffer_(std::move(buffer)), gpu_(gpu) {}
  bool changed = false;

 protected:
  ir::Block VisitBlock(const ir::Block& block) override {
    auto it = std::find(block->alloc_buffers.begin(), block->alloc_buffers.end(), buffer_);
    if (it == block->alloc_buffers.end() || changed) return StmtMutator::VisitBlock(block);
    if (block->init) {
      bool used = false;
      ir::VisitStmtExprs(block->init, [&](const Expr& top) {
        ir::VisitExprTree(top, [&](const Expr& x) {
          used = used || (x->kind == ExprKind::kLoad && x->buffer == buffer_);
        });
      });
      if (used) return block;
    }
    Compactor compactor(buffer_, block->body, gpu_);
    Stmt body = compactor.Run();
    if (!body) return block;
    changed = true;
    auto node = std::make_shared<ir::BlockNode>(*block);
    node->body = body;
    node->alloc_buffers.erase(node->alloc_buffers.begin() + (it - block->alloc_buffers.begin()));
    return node;
  }

 private:
  ir::Buffer buffer_;
  bool gpu_;
};

// Every loop bound to a GPU thread index gets that index's one variable (per index and dtype),
// so that accesses from sibling loops over the same threads compare equal.
class ThreadIndexUnifier : public ir::StmtMutator {
 protected:
  Stmt VisitFor(const ir::ForNode* op, const Stmt& s) override {
    if (ir::IsBlockIndex(op->for_kind) || !ir::IsThreadBinding(op->for_kind)) {
      return StmtMutator::VisitFor(op, s);
    }
    auto key = std::make_pair(op->for_kind, op->loop_var->dtype);
    auto it = indices_.find(key);
    if (it == indices_.end()) {
      it =
          indices_.emplace(key, ir::MakeVar(ir::ToString(op->for_kind), op->loop_var->dtype)).first;
    }
    Stmt body = ir::Substitute(op->body, ir::VarMap{{op->loop_var.get(), it->second}});
    return ir::MakeFor(it->second, op->extent, op->for_kind, VisitStmt(body), op->annotations);
  }

 private:
  std::map<std::pair<ir::ForKind, ir::DataType>, ir::Var> indices_;
};

ir::KernelFunction Compact(const ir::KernelFunction& kernel, bool gpu) {
  std::vector<ir::Buffer> buffers;
  ir::VisitStmtTree(kernel.body, [&](const Stmt& s) {
    if (const auto* realize = ir::As<ir::BlockRealizeNode>(s)) {
      if (!realize->block) return;
      for (const ir::Buffer& b : realize->block->alloc_buffers) {
        bool scoped = b && (b->scope == "local" || (gpu && b->scope == "shared"));
        if (scoped && !b->shape.empty()) buffers.push_back(b);
      }
    }
  });
  ir::KernelFunction out = kernel;
  for (const ir::Buffer& buffer : buffers) {
    Driver driver(buffer, gpu);
    Stmt body = driver.VisitStmt(out.body);
    if (driver.changed) out.body = body;
  }
  return out;
}

}  // namespace

ir::KernelFunction CompactLocalBuffers(const ir::KernelFunction& kernel) {
  return Compact(kernel, /*gpu=*/false);
}

ir::KernelFunction CompactGpuBuffers(const ir::KernelFunction& kernel) {
  ir::KernelFunction unified = kernel;
  unified.body = ThreadIndexUnifier().VisitStmt(kernel.body);
  return Compact(unified, /*gpu=*/true);
}

}  // namespace tandem::backends::codegen
