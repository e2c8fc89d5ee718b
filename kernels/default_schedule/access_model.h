// The access model of the default schedules (kernels/default_schedule.h): what the loads and
// the store of a block `out[...] = f(loads)` do when one of its iterators grows by one (their
// constant step through the flattened buffers), which the register-tile planner and the rules
// for transposes and row reductions decide by.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/kernel/bound.h"
#include "ir/kernel/stmt.h"

namespace tandem::kernels::default_schedule {

// What a block's loads and store do along its iterators. valid() only for a block whose body is
// one store with at least one load of another buffer.
class AccessModel {
 public:
  explicit AccessModel(const ir::Block& block);

  bool valid() const { return valid_; }
  // The flat indices of the loads of other buffers than the stored one, in expression order.
  const std::vector<ir::Expr>& loads() const { return loads_; }
  // The load expressions themselves (buffer and indices), parallel to loads().
  const std::vector<ir::Expr>& load_exprs() const { return load_exprs_; }
  // The flat index of the store.
  const ir::Expr& store() const { return store_; }

  // The constant step of `index` when iterator `axis` grows by one, or nullopt. Along the axis
  // given to AlignLanes the step is taken inside its aligned tiles.
  std::optional<int64_t> Stride(const ir::Expr& index, int axis) const;

  // The step of `index` when iterator `axis` grows by one inside aligned tiles of `tile` values
  // (axis = outer * tile + inner, inner < tile), or nullopt: an operand packed in panels
  // (b[j / 16, k, j % 16]) moves contiguously only inside a panel.
  std::optional<int64_t> LaneStride(const ir::Expr& index, int axis, int64_t tile) const;

  // From now on, steps along `axis` are taken inside aligned tiles of `tile` values (the vector
  // tile of the register tile).
  void AlignLanes(int axis, int64_t tile);

  // True when `index` changes inside a tile of `tile` consecutive values of iterator `axis`
  // (tiles aligned at multiples of `tile`).
  bool VariesInTile(const ir::Expr& index, int axis, int64_t tile) const;

 private:
  ir::Expr FlatIndex(const ir::Buffer& buffer, const std::vector<ir::Expr>& indices) const;

  ir::Block block_;
  ir::VarRanges ranges_;
  ir::Expr store_;
  std::vector<ir::Expr> loads_;
  std::vector<ir::Expr> load_exprs_;
  bool valid_ = false;
  int lane_axis_ = -1;
  int64_t lane_tile_ = 0;
};

// The block's innermost spatial iterator (the vector axis of its register tile), or -1.
int InnermostSpatialAxis(const ir::Block& block);

// The smallest nonzero step (elements, absolute) of a load of `model` along iterator `axis`; the
// largest int64_t when no load moves along it by a constant step. The reduction loop with the
// smallest walks a contiguous run of some operand: the default schedule puts it innermost.
int64_t SmallestLoadStep(const AccessModel& model, int axis);

// True when every load of `model` that moves along spatial iterator `axis` moves by the same
// step along one of the block's reduction iterators: neighbouring outputs along `axis` read
// overlapping windows (a stride-1 convolution's taps), so a tile along it with its taps
// unrolled loads each input vector once for several outputs. When every such load is
// contiguous along the block's innermost spatial iterator (the vector lanes; a channels-last
// depthwise convolution), a strided window counts too: the step along `axis` is a multiple of
// a reduction iterator's step and the taps span more than it (kernel 5 at stride 2).
bool WindowsOverlapAlong(const AccessModel& model, const ir::Block& block, int axis);

// Reduction loops of a block whose operands all move with the lanes (a depthwise convolution's
// or a pooling window's taps) and whose tile covers overlapping windows are unrolled up to this
// many iterations in all: the taps' input vectors are then loaded once for several outputs and
// the weights stay in registers (faster for MobileNetV2's stride-1 3x3 depthwise
// convolutions; at stride 2 unrolling measured slower).
inline constexpr int64_t kMaxUnrolledTaps = 25;

// True when the register tile of `block` with vector axis `vector_axis` and second axis
// `second_axis` (-1: none) gets its taps unrolled: every load moves with the lanes, the
// reduction has at most kMaxUnrolledTaps iterations and the windows overlap along the second
// axis (WindowsOverlapAlong).
bool UnrollsWindowTaps(const AccessModel& model, const ir::Block& block, int vector_axis,
                       int second_axis);

}  // namespace tandem::kernels::default_schedule
