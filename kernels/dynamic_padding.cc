#include "kernels/dynamic_padding.h"

#include <map>
#include <set>
#include <utility>

#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"

namespace tandem::kernels {

namespace {

using ir::Expr;
using ir::ExprKind;

// A comparison `index + d OP b` of `guard` (OP one of `kinds`), as {d, b}: the offset d and the
// compared constant b; nullopt when `guard` is not one.
std::optional<std::pair<int64_t, int64_t>> OffsetAndBound(const Expr& guard, const Expr& index,
                                                          ExprKind strict, ExprKind inclusive) {
  if (guard->kind != strict && guard->kind != inclusive) return std::nullopt;
  int64_t bound = 0;
  if (!ir::AsConstInt(guard->operands[1], &bound)) return std::nullopt;
  int64_t offset = 0;
  if (!ir::AsConstInt(ir::Simplify(guard->operands[0] - index), &offset)) return std::nullopt;
  return std::pair{offset, bound};
}

// d when `guard` says index + d < extent + d (or <= extent - 1 + d); nullopt otherwise.
std::optional<int64_t> BoundingOffset(const Expr& guard, const Expr& index, int64_t extent) {
  auto compared = OffsetAndBound(guard, index, ExprKind::kLT, ExprKind::kLE);
  if (!compared) return std::nullopt;
  auto [offset, bound] = *compared;
  int64_t limit = guard->kind == ExprKind::kLT ? bound : bound + 1;
  if (limit - offset != extent) return std::nullopt;
  return offset;
}

// d when `guard` says index + d >= d (or > d - 1): the read starts past padding of d positions,
// and reads padding below d; nullopt otherwise.
std::optional<int64_t> StartingOffset(const Expr& guard, const Expr& index) {
  auto compared = OffsetAndBound(guard, index, ExprKind::kGT, ExprKind::kGE);
  if (!compared) return std::nullopt;
  auto [offset, bound] = *compared;
  int64_t first = guard->kind == ExprKind::kGE ? bound : bound + 1;
  if (first != offset || offset <= 0) return std::nullopt;
  return offset;
}

// A load whose index PositionShifter moved, and the axes moved; by the load's node.
struct MovedRead {
  Expr load;  // held, so that no other node takes its address
  std::set<size_t> axes;
};
using MovedReads = std::map<const ir::ExprNode*, MovedRead>;

// Moves the positions of a select's false value along `position` by `shift` (the later parts of
// a concatenation, kernels/dynamic_padding.h): every load index and compared value that differs
// from `position` by an expression without variables loses `shift`; `moved` collects the loads
// with a moved index and the axes moved.
class PositionShifter : public ir::ExprMutator {
 public:
  PositionShifter(const Expr& position, const Expr& shift, MovedReads& moved)
      : position_(position), shift_(shift), moved_(moved) {}

  Expr VisitExpr(const Expr& e) override {
    Expr visited = VisitChildren(e);
    if (visited->kind == ExprKind::kLoad) {
      std::vector<Expr> indices = visited->operands;
      std::set<size_t> axes;
      if (auto earlier = moved_.find(e.get()); earlier != moved_.end()) {
        axes = earlier->second.axes;
        moved_.erase(earlier);
      }
      for (size_t axis = 0; axis < indices.size(); ++axis) {
        if (!Aligned(indices[axis])) continue;
        indices[axis] = ir::Simplify(indices[axis] - shift_);
        axes.insert(axis);
      }
      if (axes.empty()) return visited;
      Expr load = ir::Load(visited->buffer, indices);
      moved_[load.get()] = {load, std::move(axes)};
      return load;
    }
    if (!ir::IsComparison(visited->kind)) return visited;
    Expr a = visited->operands[0], b = visited->operands[1];
    bool changed = false;
    for (Expr* operand : {&a, &b}) {
      if (!Aligned(*operand)) continue;
      *operand = ir::Simplify(*operand - shift_);
      changed = true;
    }
    return changed ? ir::Binary(visited->kind, a, b) : visited;
  }

 private:
  bool Aligned(const Expr& e) const {
    return e->dtype == position_->dtype && !ir::HasVar(ir::Simplify(e - position_));
  }

  const Expr& position_;
  const Expr& shift_;
  MovedReads& moved_;
};

// Guards every load in `moved` by its buffer's extent on the moved axes: a moved read past its
// buffer (at a junk position) reads 0 instead.
class MovedReadGuard : public ir::ExprMutator {
 public:
  explicit MovedReadGuard(const MovedReads& moved) : moved_(moved) {}

  Expr VisitExpr(const Expr& e) override {
    Expr visited = VisitChildren(e);
    if (visited->kind != ExprKind::kLoad) return visited;
    // A load whose indices the visit rebuilt (a gather) is looked up by its original node.
    auto it = moved_.find(e.get());
    if (it == moved_.end()) return visited;
    Expr inside;
    for (size_t axis : it->second.axes) {
      Expr bound = visited->operands[axis] < Expr(visited->buffer->shape[axis]);
      inside = inside.defined() ? (inside && bound) : bound;
    }
    return ir::Select(inside, visited, ir::MakeConst(visited->dtype, 0));
  }

 private:
  const MovedReads& moved_;
};

// Steps of BoundPaddingByValidLength, select by select from the innermost:
//   1. each conjunct of the condition that bounds a dynamic read of the true value by its extent
//      at the bound bounds it by the valid length;
//   2. the false value moves along the first conjunct rewritten by the valid length minus the
//      extent (a concatenation's later parts start where the earlier ones end at run time);
//   3. (BoundPaddingByValidLength) the moved reads are guarded by their buffers' extents.
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
    Expr position, shift;
    ir::VisitExprTree(visited->operands[1], [&](const Expr& load) {
      if (load->kind != ExprKind::kLoad) return;
      const TensorExtents* extents = extents_of_(load->buffer.get());
      if (extents == nullptr || extents->size() != load->operands.size()) return;
      for (size_t axis = 0; axis < extents->size(); ++axis) {
        if (!(*extents)[axis].dynamic()) continue;
        int64_t extent = load->buffer->shape[axis];
        bool bounded = false;
        for (Expr& conjunct : conjuncts) {
          std::optional<int64_t> offset = BoundingOffset(conjunct, load->operands[axis], extent);
          if (!offset) continue;
          Expr valid = limit_((*extents)[axis]);
          if (!position.defined() && ir::HasVar(conjunct->operands[0])) {
            position = conjunct->operands[0];
            shift = ir::Simplify(valid - Expr(extent));
          }
          conjunct = conjunct->operands[0] < valid + Expr(*offset);
          changed = bounded = true;
        }
        if (bounded) continue;
        // Padded at the start only: the windows at the bound end inside the axis, so the
        // lowering left out the upper bound, but at other sizes they may pass the valid
        // length (a stride 2 window over an odd length), where the op pads.
        for (size_t k = 0, count = conjuncts.size(); k < count; ++k) {
          std::optional<int64_t> offset = StartingOffset(conjuncts[k], load->operands[axis]);
          if (!offset) continue;
          conjuncts.push_back(conjuncts[k]->operands[0] < limit_((*extents)[axis]) + Expr(*offset));
          changed = true;
          break;
        }
      }
    });
    if (!changed) return visited;
    Expr condition = conjuncts.front();
    for (size_t k = 1; k < conjuncts.size(); ++k) condition = condition && conjuncts[k];
    Expr otherwise = visited->operands[2];
    if (position.defined() && ir::HasLoad(otherwise)) {
      otherwise = PositionShifter(position, shift, moved_).VisitExpr(otherwise);
    }
    return ir::Select(condition, visited->operands[1], otherwise);
  }

  const MovedReads& moved() const { return moved_; }

 private:
  const ExtentsOfBuffer& extents_of_;
  const std::function<Expr(const AxisExtent&)>& limit_;
  MovedReads moved_;
};

}  // namespace

bool BoundedByExtent(const std::vector<Expr>& guards, const Expr& index, int64_t extent) {
  for (const Expr& guard : guards) {
    if (BoundingOffset(guard, index, extent)) return true;
  }
  return false;
}

bool PaddedAtStart(const std::vector<Expr>& guards, const Expr& index) {
  for (const Expr& guard : guards) {
    if (StartingOffset(guard, index)) return true;
  }
  return false;
}

Expr BoundPaddingByValidLength(const Expr& e, const ExtentsOfBuffer& extents_of,
                               const std::function<Expr(const AxisExtent&)>& limit) {
  PaddingRewriter rewriter(extents_of, limit);
  Expr rewritten = rewriter.VisitExpr(e);
  if (rewriter.moved().empty()) return rewritten;
  return MovedReadGuard(rewriter.moved()).VisitExpr(rewritten);
}

}  // namespace tandem::kernels
