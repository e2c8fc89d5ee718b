#include "kernels/dynamic_padding.h"

#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"

namespace tandem::kernels {

namespace {

using ir::Expr;
using ir::ExprKind;

// d when `guard` says index + d < extent + d (or <= extent - 1 + d); nullopt otherwise.
std::optional<int64_t> BoundingOffset(const Expr& guard, const Expr& index, int64_t extent) {
  if (guard->kind != ExprKind::kLT && guard->kind != ExprKind::kLE) return std::nullopt;
  int64_t bound = 0;
  if (!ir::AsConstInt(guard->operands[1], &bound)) return std::nullopt;
  int64_t offset = 0;
  if (!ir::AsConstInt(ir::Simplify(guard->operands[0] - index), &offset)) return std::nullopt;
  int64_t limit = guard->kind == ExprKind::kLT ? bound : bound + 1;
  if (limit - offset != extent) return std::nullopt;
  return offset;
}

// Steps of BoundPaddingByValidLength: each select's condition, conjunct by conjunct.
class PaddingRewriter : public ir::ExprMutator {
 public:
  PaddingRewriter(const ExtentsOfBuffer& extents_of,
                  const std::function<Expr(const AxisExtent&)>& limit)
      : extents_of_(extents_of), limit_(limit) {}

  Expr VisitExpr(const Expr& e) override {
    Expr visited = VisitChildren(e);
    if (visited->kind != ExprKind::kSelect) return visited;
    std::vector<Expr> conjuncts = ir::Conjuncts(visited->operands[0]);
    bool changed = false;
    ir::VisitExprTree(visited->operands[1], [&](const Expr& load) {
      if (load->kind != ExprKind::kLoad) return;
      const TensorExtents* extents = extents_of_(load->buffer.get());
      if (extents == nullptr || extents->size() != load->operands.size()) return;
      for (size_t axis = 0; axis < extents->size(); ++axis) {
        if (!(*extents)[axis].dynamic()) continue;
        int64_t extent = load->buffer->shape[axis];
        for (Expr& conjunct : conjuncts) {
          std::optional<int64_t> offset = BoundingOffset(conjunct, load->operands[axis], extent);
          if (!offset) continue;
          conjunct = conjunct->operands[0] < limit_((*extents)[axis]) + Expr(*offset);
          changed = true;
        }
      }
    });
    if (!changed) return visited;
    Expr condition = conjuncts.front();
    for (size_t k = 1; k < conjuncts.size(); ++k) condition = condition && conjuncts[k];
    return ir::Select(condition, visited->operands[1], visited->operands[2]);
  }

 private:
  const ExtentsOfBuffer& extents_of_;
  const std::function<Expr(const AxisExtent&)>& limit_;
};

}  // namespace

bool BoundedByExtent(const std::vector<Expr>& guards, const Expr& index, int64_t extent) {
  for (const Expr& guard : guards) {
    if (BoundingOffset(guard, index, extent)) return true;
  }
  return false;
}

Expr BoundPaddingByValidLength(const Expr& e, const ExtentsOfBuffer& extents_of,
                               const std::function<Expr(const AxisExtent&)>& limit) {
  return PaddingRewriter(extents_of, limit).VisitExpr(e);
}

}  // namespace tandem::kernels
