#include "kernels/schedule/access.h"

#include <fmt/format.h>

#include <map>

#include "ir/error.h"

namespace tandem::kernels {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

bool IsIteratorIndex(const Expr& index, const ir::IterVar& iter) {
  return index.same_as(iter.var) || (iter.extent == 1 && index->is_const_int(0));
}

std::vector<Access> CollectLoads(const Stmt& stmt) {
  std::vector<Access> out;
  ir::VisitStmtExprs(stmt, [&](const Expr& top) {
    ir::VisitExprTree(top, [&](const Expr& e) {
      if (e->kind == ExprKind::kLoad) out.push_back(Access{e->buffer, e->operands});
    });
  });
  return out;
}

std::vector<Access> CollectStores(const Stmt& stmt) {
  std::vector<Access> out;
  ir::VisitStmtTree(stmt, [&](const Stmt& s) {
    if (const auto* store = ir::As<ir::StoreNode>(s))
      out.push_back(Access{store->buffer, store->indices});
  });
  return out;
}

namespace {

// Loads/stores of the block itself, excluding those inside nested blocks' region lists (but
// including nested bodies, whose accesses are the block's accesses too).
std::vector<ir::BufferRegion> CoveringRegions(const std::vector<Access>& accesses,
                                              const std::vector<ir::Buffer>& allocated) {
  std::vector<ir::BufferRegion> regions;
  std::vector<std::vector<const Access*>> groups;
  for (const Access& a : accesses) {
    bool is_allocated = false;
    for (const ir::Buffer& b : allocated) is_allocated = is_allocated || b == a.buffer;
    if (is_allocated) continue;
    size_t g = 0;
    while (g < regions.size() && regions[g].buffer != a.buffer) ++g;
    if (g == regions.size()) {
      regions.push_back(ir::BufferRegion{a.buffer, {}});
      groups.emplace_back();
    }
    groups[g].push_back(&a);
  }
  for (size_t g = 0; g < regions.size(); ++g) {
    size_t rank = regions[g].buffer->shape.size();
    for (size_t d = 0; d < rank; ++d) {
      bool data_dependent = false;
      for (const Access* a : groups[g]) {
        ir::VisitExprTree(a->indices[d], [&](const Expr& x) {
          data_dependent = data_dependent || x->kind == ExprKind::kLoad;
        });
      }
      if (data_dependent) {  // an index read from memory (a gather): any position of the axis
        regions[g].region.push_back(ir::Range{Expr(0), Expr(regions[g].buffer->shape[d])});
        continue;
      }
      Expr lo = groups[g][0]->indices[d], hi = lo;
      for (size_t k = 1; k < groups[g].size(); ++k) {
        const Expr& x = groups[g][k]->indices[d];
        lo = ir::Simplify(ir::Min(lo, x));
        hi = ir::Simplify(ir::Max(hi, x));
      }
      regions[g].region.push_back(ir::Range{lo, ir::Simplify(hi - lo + 1)});
    }
  }
  return regions;
}

}  // namespace

namespace {
bool HoldsBlocks(const Stmt& stmt) {
  bool found = false;
  ir::VisitStmtTree(
      stmt, [&](const Stmt& s) { found = found || s->kind == ir::StmtKind::kBlockRealize; });
  return found;
}
}  // namespace

ir::Block WithRecomputedRegions(const ir::Block& block) {
  // The accesses inside a scope block are in terms of the loops and iterators of the blocks it
  // holds; its own regions are not a summary of them (the root's stay as the compute definition
  // made them: none).
  if ((block->body && HoldsBlocks(block->body)) || (block->init && HoldsBlocks(block->init))) {
    return block;
  }
  std::vector<Access> loads = CollectLoads(block->body);
  std::vector<Access> stores = CollectStores(block->body);
  if (block->init) {
    auto init_loads = CollectLoads(block->init);
    loads.insert(loads.end(), init_loads.begin(), init_loads.end());
  }
  auto n = std::make_shared<ir::BlockNode>(*block);
  n->writes = CoveringRegions(stores, block->alloc_buffers);
  // A reduction's read of its own output (out = out + x) is part of its update, not an input.
  std::vector<Access> inputs;
  for (const Access& a : loads) {
    bool written = false;
    for (const Access& s : stores) written = written || s.buffer == a.buffer;
    if (!written || block->init == nullptr) inputs.push_back(a);
  }
  n->reads = CoveringRegions(inputs, block->alloc_buffers);
  return n;
}

namespace {
class LoadRewriter : public ir::StmtMutator {
 public:
  LoadRewriter(const ir::Buffer& buffer, const std::function<Expr(const std::vector<Expr>&)>& fn)
      : buffer_(buffer), fn_(fn) {}
  Expr VisitExpr(const Expr& e) override {
    Expr visited = VisitChildren(e);
    if (visited->kind == ExprKind::kLoad && visited->buffer == buffer_)
      return fn_(visited->operands);
    return visited;
  }

 protected:
  ir::Block VisitBlock(const ir::Block& block) override {
    ir::Block visited = StmtMutator::VisitBlock(block);
    return visited == block ? block : WithRecomputedRegions(visited);
  }

 private:
  const ir::Buffer& buffer_;
  const std::function<Expr(const std::vector<Expr>&)>& fn_;
};

class AllocationEditor : public ir::StmtMutator {
 public:
  AllocationEditor(const ir::Buffer& buffer, bool add, std::string block_name)
      : buffer_(buffer), add_(add), block_name_(std::move(block_name)) {}
  Expr VisitExpr(const Expr& e) override { return e; }
  bool done = false;

 protected:
  ir::Block VisitBlock(const ir::Block& block) override {
    ir::Block visited = StmtMutator::VisitBlock(block);
    auto& allocs = visited->alloc_buffers;
    bool has = std::find(allocs.begin(), allocs.end(), buffer_) != allocs.end();
    if (add_ && visited->name == block_name_ && !has) {
      auto n = std::make_shared<ir::BlockNode>(*visited);
      n->alloc_buffers.push_back(buffer_);
      done = true;
      return n;
    }
    if (!add_ && has) {
      auto n = std::make_shared<ir::BlockNode>(*visited);
      n->alloc_buffers.erase(std::find(n->alloc_buffers.begin(), n->alloc_buffers.end(), buffer_));
      done = true;
      return n;
    }
    return visited;
  }

 private:
  const ir::Buffer& buffer_;
  bool add_;
  std::string block_name_;
};
}  // namespace

Stmt RewriteLoads(const Stmt& stmt, const ir::Buffer& buffer,
                  const std::function<Expr(const std::vector<Expr>&)>& fn) {
  LoadRewriter rewriter(buffer, fn);
  return rewriter.VisitStmt(stmt);
}

Expr RewriteLoads(const Expr& expr, const ir::Buffer& buffer,
                  const std::function<Expr(const std::vector<Expr>&)>& fn) {
  LoadRewriter rewriter(buffer, fn);
  return rewriter.VisitExpr(expr);
}

Stmt RemoveAllocation(const Stmt& stmt, const ir::Buffer& buffer) {
  AllocationEditor editor(buffer, false, "");
  return editor.VisitStmt(stmt);
}

Stmt AddAllocation(const Stmt& stmt, const ir::Buffer& buffer, const std::string& block_name) {
  AllocationEditor editor(buffer, true, block_name);
  Stmt out = editor.VisitStmt(stmt);
  if (!editor.done) {
    throw ir::Error(
        fmt::format("cannot allocate buffer '{}' in block '{}'", buffer->name, block_name));
  }
  return out;
}

namespace {

bool OnlyRangedVars(const Expr& e, const ir::VarRanges& ranges) {
  bool ok = true;
  ir::VisitExprTree(e, [&](const Expr& x) {
    if (x->kind == ExprKind::kVar && !ranges.count(x.get())) ok = false;
    if (x->kind == ExprKind::kLoad) ok = false;
  });
  return ok;
}

// index = sum(coefficients[v] * v) + rest, with v ranging over the ranged variables.
struct LinearForm {
  std::map<const ir::ExprNode*, int64_t> coefficients;
  std::vector<std::pair<const ir::ExprNode*, Expr>> order;  // first appearance, for determinism
  Expr rest = ir::IntImm(0);
  // Terms over ranged variables only that are not linear (floordiv(t, 16) of a fused thread
  // loop), bounded numerically each: their sum lies in [low, high].
  int64_t low = 0, high = 0;
};

bool Linearize(const Expr& e, const ir::VarRanges& ranges, int64_t scale, LinearForm& out) {
  switch (e->kind) {
    case ExprKind::kVar:
      if (ranges.count(e.get())) {
        if (!out.coefficients.count(e.get())) out.order.emplace_back(e.get(), e);
        out.coefficients[e.get()] += scale;
      } else {
        out.rest = out.rest + (scale == 1 ? e : e * ir::IntImm(scale));
      }
      return true;
    case ExprKind::kIntImm:
      out.rest = out.rest + ir::IntImm(e->int_value * scale);
      return true;
    case ExprKind::kAdd:
      return Linearize(e->operands[0], ranges, scale, out) &&
             Linearize(e->operands[1], ranges, scale, out);
    case ExprKind::kSub:
      return Linearize(e->operands[0], ranges, scale, out) &&
             Linearize(e->operands[1], ranges, -scale, out);
    case ExprKind::kMul: {
      int64_t c;
      if (ir::AsConstInt(e->operands[1], &c))
        return Linearize(e->operands[0], ranges, scale * c, out);
      if (ir::AsConstInt(e->operands[0], &c))
        return Linearize(e->operands[1], ranges, scale * c, out);
      [[fallthrough]];
    }
    default: {
      bool uses_ranged = false;
      ir::VisitExprTree(e, [&](const Expr& x) {
        uses_ranged = uses_ranged || (x->kind == ExprKind::kVar && ranges.count(x.get()));
      });
      if (uses_ranged) {
        if (!OnlyRangedVars(e, ranges)) return false;
        ir::IntInterval b = ir::ConstIntBound(e, ranges);
        if (!b.has_lower() || !b.has_upper()) return false;
        out.low += std::min(b.min * scale, b.max * scale);
        out.high += std::max(b.min * scale, b.max * scale);
        return true;
      }
      out.rest = out.rest + (scale == 1 ? e : e * ir::IntImm(scale));
      return true;
    }
  }
}

}  // namespace

bool SymbolicBounds(const Expr& index, const ir::VarRanges& ranges, Expr* min, Expr* max) {
  LinearForm form;
  if (Linearize(index, ranges, 1, form)) {
    Expr lo = form.rest + ir::IntImm(form.low), hi = form.rest + ir::IntImm(form.high);
    for (const auto& [node, var] : form.order) {
      int64_t c = form.coefficients.at(node);
      const ir::IntInterval& r = ranges.at(node);
      int64_t a = c * r.min, b = c * r.max;
      lo = lo + ir::IntImm(std::min(a, b));
      hi = hi + ir::IntImm(std::max(a, b));
    }
    *min = ir::Simplify(lo);
    *max = ir::Simplify(hi);
    return true;
  }
  if (OnlyRangedVars(index, ranges)) {
    ir::IntInterval b = ir::ConstIntBound(index, ranges);
    if (b.min == INT64_MIN || b.max == INT64_MAX) return false;
    *min = ir::IntImm(b.min);
    *max = ir::IntImm(b.max);
    return true;
  }
  // Mixed: bound the ranged part numerically, keep the rest symbolic only if separable.
  return false;
}

}  // namespace tandem::kernels
