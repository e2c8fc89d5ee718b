// layout_transform: one spatial block "layout_transform" over the result. Each result index is
// mapped to the logical (primal) coordinates it holds (outer * factor + inner for a split axis)
// and from there to the operand's index (floordiv / floormod by the operand's split factors).
#include <array>

#include "ir/error.h"
#include "ir/layout.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

void LowerLayoutTransform(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  ir::Layout source(call.attrs.GetString("src_layout"));
  ir::Layout target(call.attrs.GetString("dst_layout"));
  auto letter = [](char c) { return static_cast<size_t>((c >= 'a' ? c - 'a' : c - 'A')); };
  std::vector<std::string> names;
  for (const ir::Layout::Axis& axis : target.axes()) {
    std::string name(1, static_cast<char>(axis.is_primal() ? axis.name - 'A' + 'a' : axis.name));
    names.push_back(axis.is_primal() ? name : name + "_inner");
  }
  builder.Compute("layout_transform", call.outputs[0], names, [&](const std::vector<Var>& i) {
    // Logical coordinate of every primal axis, by letter.
    std::array<Expr, 26> coordinate;
    for (size_t k = 0; k < i.size(); ++k) {
      const ir::Layout::Axis& axis = target.axes()[k];
      size_t slot = letter(axis.name);
      Expr term = axis.is_primal() ? MulConst(i[k], target.SplitFactor(axis.name)) : Expr(i[k]);
      coordinate[slot] = coordinate[slot].defined() ? coordinate[slot] + term : term;
    }
    std::vector<Expr> index;
    for (const ir::Layout::Axis& axis : source.axes()) {
      const Expr& logical = coordinate[letter(axis.name)];
      if (axis.is_primal()) {
        int64_t factor = source.SplitFactor(axis.name);
        index.push_back(factor == 1 ? logical : ir::FloorDiv(logical, Expr(factor)));
      } else {
        index.push_back(ir::FloorMod(logical, Expr(axis.factor)));
      }
    }
    return ir::Load(x, index);
  });
}

}  // namespace tandem::kernels
