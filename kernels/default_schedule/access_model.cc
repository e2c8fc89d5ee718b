#include "kernels/default_schedule/access_model.h"

#include <algorithm>
#include <limits>

#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"
#include "kernels/schedule/block_analysis.h"

namespace tandem::kernels::default_schedule {

AccessModel::AccessModel(const ir::Block& block) : block_(block) {
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

std::optional<int64_t> AccessModel::Stride(const ir::Expr& index, int axis) const {
  const ir::Var& v = block_->iter_vars[static_cast<size_t>(axis)].var;
  ir::Expr step = ir::Simplify(
      ir::Substitute(index, ir::VarMap{{v.get(), v + ir::IntImm(1)}}) - index, ranges_);
  int64_t value = 0;
  if (ir::AsConstInt(step, &value)) return value;
  if (axis == lane_axis_) return LaneStride(index, axis, lane_tile_);
  return std::nullopt;
}

std::optional<int64_t> AccessModel::LaneStride(const ir::Expr& index, int axis,
                                               int64_t tile) const {
  const ir::IterVar& iv = block_->iter_vars[static_cast<size_t>(axis)];
  if (tile <= 1) return std::nullopt;
  // Tiles from multiples of `tile`; the last may be partial (its lanes past the extent masked).
  ir::Var outer = ir::MakeVar("outer"), inner = ir::MakeVar("inner");
  ir::VarRanges ranges = ranges_;
  ranges[outer.get()] = {0, (iv.extent + tile - 1) / tile - 1};
  ranges[inner.get()] = {0, tile - 2};  // inner + 1 stays in the tile
  ir::Expr at = ir::Substitute(index, ir::VarMap{{iv.var.get(), outer * ir::IntImm(tile) + inner}});
  ir::Expr next = ir::Substitute(at, ir::VarMap{{inner.get(), inner + ir::IntImm(1)}});
  ir::Expr step = ir::Simplify(ir::Simplify(next, ranges) - ir::Simplify(at, ranges), ranges);
  int64_t value = 0;
  if (!ir::AsConstInt(step, &value)) return std::nullopt;
  return value;
}

void AccessModel::AlignLanes(int axis, int64_t tile) {
  lane_axis_ = axis;
  lane_tile_ = tile;
}

bool AccessModel::VariesInTile(const ir::Expr& index, int axis, int64_t tile) const {
  const ir::IterVar& iv = block_->iter_vars[static_cast<size_t>(axis)];
  ir::Var outer = ir::MakeVar("outer"), inner = ir::MakeVar("inner");
  ir::VarRanges ranges = ranges_;
  ranges[outer.get()] = {0, iv.extent / tile - 1};
  ranges[inner.get()] = {0, tile - 1};
  ir::Expr split = ir::Simplify(
      ir::Substitute(index, ir::VarMap{{iv.var.get(), outer * ir::IntImm(tile) + inner}}), ranges);
  return ir::UsesVar(split, inner);
}

ir::Expr AccessModel::FlatIndex(const ir::Buffer& buffer,
                                const std::vector<ir::Expr>& indices) const {
  if (!buffer || indices.size() != buffer->shape.size()) return ir::Expr();
  ir::Expr flat = ir::IntImm(0);
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d]->dtype != ir::DataType::kInt64) return ir::Expr();
    flat = flat * ir::IntImm(buffer->shape[d]) + indices[d];
  }
  return ir::Simplify(flat, ranges_);
}

int InnermostSpatialAxis(const ir::Block& block) {
  int innermost = -1;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    if (block->iter_vars[k].kind == ir::IterKind::kSpatial) innermost = static_cast<int>(k);
  }
  return innermost;
}

int64_t SmallestLoadStep(const AccessModel& model, int axis) {
  int64_t step = std::numeric_limits<int64_t>::max();
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> stride = model.Stride(load, axis);
    if (stride && *stride != 0) step = std::min(step, *stride < 0 ? -*stride : *stride);
  }
  return step;
}

bool WindowsOverlapAlong(const AccessModel& model, const ir::Block& block, int axis) {
  int innermost = InnermostSpatialAxis(block);
  bool contiguous = innermost >= 0 && innermost != axis;
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> step = model.Stride(load, axis);
    if (step && *step != 0) {
      std::optional<int64_t> lane = model.Stride(load, innermost);
      contiguous = contiguous && lane && *lane == 1;
    }
  }
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
      if (!tap || *tap == 0) continue;
      bool strided = contiguous && *step % *tap == 0 && block->iter_vars[k].extent * *tap > *step;
      overlaps = overlaps || *tap == *step || strided;
    }
    if (!overlaps) return false;
  }
  return moves;
}

bool UnrollsWindowTaps(const AccessModel& model, const ir::Block& block, int vector_axis,
                       int second_axis) {
  if (second_axis < 0 || ReductionExtent(block) > kMaxUnrolledTaps) return false;
  for (const ir::Expr& load : model.loads()) {
    std::optional<int64_t> stride = model.Stride(load, vector_axis);
    if (!stride || *stride == 0) return false;
  }
  return WindowsOverlapAlong(model, block, second_axis);
}

}  // namespace tandem::kernels::default_schedule
