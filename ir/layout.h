// Tensor layouts: what each axis of a tensor means and how a tensor moves between layouts.
//
// A layout string names the axes of a tensor from outermost to innermost. An upper-case letter
// is a primal axis (N, C, H, W, D, O, I ...); a positive number followed by a lower-case letter
// is a split sub-axis of the primal axis with the same letter: in "NCHW8c" the channel axis C is
// split into C/8 outer blocks (the `C` position) and 8 inner elements (the `8c` position). Every
// primal axis appears once, has at most one sub-axis, and its sub-axis comes after it. The
// logical (primal) coordinate of a split axis is outer * factor + inner.
//
// Examples: "NCHW", "NHWC", "NC", "NCHW8c", "OIHW16i8o".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "ir/type.h"

namespace tandem::ir {

class Layout {
 public:
  // One axis of a layout: a primal axis (upper-case `name`, factor 0) or a sub-axis
  // (lower-case `name`, factor > 0).
  struct Axis {
    char name = 0;
    int64_t factor = 0;

    bool is_primal() const { return factor == 0; }
    bool operator==(const Axis& other) const = default;
  };

  // Parses a layout string. Throws Error naming the string and the offending position for an
  // empty string, an unexpected character, a duplicate axis, a number without its axis letter,
  // an upper-case letter after a number, a zero factor, or a sub-axis whose primal axis does not
  // come before it.
  explicit Layout(const std::string& text);

  // The text the layout was parsed from.
  const std::string& name() const { return name_; }
  // Number of axes (the rank of a tensor in this layout), sub-axes included.
  int64_t rank() const { return static_cast<int64_t>(axes_.size()); }
  const std::vector<Axis>& axes() const { return axes_; }
  // The primal axes in order of appearance ("NCHW" for "NCHW8c").
  std::string primal_axes() const;

  // Position of axis `name` ('C' for the primal axis, 'c' for its sub-axis), or -1 when absent.
  int64_t IndexOf(char name) const;
  bool Contains(char name) const { return IndexOf(name) >= 0; }
  // The factor by which primal axis `primal` (upper-case) is split; 1 when it is not split or
  // absent.
  int64_t SplitFactor(char primal) const;
  // True when both layouts have the same set of primal axes (in any order and with any splits).
  bool SamePrimalAxes(const Layout& other) const;

  bool operator==(const Layout& other) const { return axes_ == other.axes_; }

 private:
  std::string name_;
  std::vector<Axis> axes_;
};

// The shape a tensor of `shape` in layout `from` has in layout `to`. Throws Error when the
// layouts have different primal axes, when `shape` does not have from.rank() extents, when a
// sub-axis extent of `shape` differs from its factor in `from`, or when a split factor of `to`
// does not divide the extent of its primal axis.
Shape ConvertShape(const Shape& shape, const Layout& from, const Layout& to);

// Copies `tensor` (in layout `from`) into a new tensor in layout `to`: the element at logical
// (primal) coordinates p lands at the position of p in `to`. The result's type carries
// to.name() as its layout. Exact for every dtype (elements are copied, not converted). Throws
// like ConvertShape.
Tensor TransformLayout(const Tensor& tensor, const Layout& from, const Layout& to);

}  // namespace tandem::ir
