// Convolutions in blocked layouts (data NCHW16c, kernel OIHW16i16o, and the 1-d/3-d
// analogues): the layouts in which the innermost axis is a block of channels, so that a
// schedule can vectorize over output channels with contiguous weight loads.
//
// Blocks: an optional "pad" block over the physical data axes (padding only the spatial axes),
// then one reduction block with spatial iterators over the physical result axes (e.g. "n",
// "co", "h", "w", "co_i") and reduction iterators "ci" (or "ci", "ci_i" when the data and kernel
// split the input channels by the same factor) and the kernel taps. Indices are written on
// logical (primal) coordinates and mapped to the physical axes with floordiv/floormod, which the
// simplifier removes where the iterators make them exact.
#include <fmt/format.h>

#include <map>

#include "ir/error.h"
#include "ir/kernel/simplify.h"
#include "ir/layout.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

// Physical index of a tensor in `layout` from logical coordinates per primal axis.
std::vector<Expr> PhysicalIndex(const ir::Layout& layout, const std::map<char, Expr>& logical) {
  std::vector<Expr> index;
  for (const ir::Layout::Axis& a : layout.axes()) {
    if (a.is_primal()) {
      int64_t f = layout.SplitFactor(a.name);
      const Expr& x = logical.at(a.name);
      index.push_back(f > 1 ? ir::FloorDiv(x, Expr(f)) : x);
    } else {
      char primal = static_cast<char>(std::toupper(static_cast<unsigned char>(a.name)));
      index.push_back(ir::FloorMod(logical.at(primal), Expr(a.factor)));
    }
  }
  return index;
}

std::string AxisName(const ir::Layout::Axis& a) {
  switch (std::toupper(static_cast<unsigned char>(a.name))) {
    case 'N': return "n";
    case 'C': return a.is_primal() ? "co" : "co_i";
    case 'D': return "d";
    case 'H': return "h";
    default: return "w";
  }
}

}  // namespace

bool IsBlockedConvolution(const OpCall& call) {
  ir::Layout d(call.attrs.GetString("data_layout")), k(call.attrs.GetString("kernel_layout"));
  return d.primal_axes().size() != static_cast<size_t>(d.rank()) ||
         k.primal_axes().size() != static_cast<size_t>(k.rank());
}

void LowerBlockedConvolution(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& weight = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  ir::Layout data_layout(call.attrs.GetString("data_layout"));
  ir::Layout kernel_layout(call.attrs.GetString("kernel_layout"));
  const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
  const std::vector<int64_t>& padding = call.attrs.GetInts("padding");
  const std::vector<int64_t>& dilation = call.attrs.GetInts("dilation");
  if (call.attrs.GetInt("groups") != 1) {
    throw LoweringError(call.op, "blocked layouts support groups = 1 only");
  }
  size_t spatial = strides.size();
  std::string spatial_axes = std::string("DHW").substr(3 - spatial);
  // Logical extents.
  auto logical_extent = [](const ir::Layout& layout, const ir::Shape& shape, char axis) {
    int64_t e = shape[static_cast<size_t>(layout.IndexOf(axis))];
    return e * layout.SplitFactor(axis);
  };
  int64_t channels = logical_extent(data_layout, data->shape, 'C');
  std::map<char, int64_t> taps;
  for (char axis : spatial_axes) taps[axis] = logical_extent(kernel_layout, weight->shape, axis);

  ir::Buffer source = data;
  bool padded = false;
  for (int64_t p : padding) padded = padded || p != 0;
  if (padded) {
    ir::Shape shape = data->shape;
    for (size_t s = 0; s < spatial; ++s) {
      shape[static_cast<size_t>(data_layout.IndexOf(spatial_axes[s]))] += padding[s] + padding[spatial + s];
    }
    source = builder.AddIntermediate(data->name + "_pad", data->dtype, shape);
    std::vector<std::string> names;
    for (const auto& a : data_layout.axes()) names.push_back(a.is_primal() && a.name == 'C' ? "c" : AxisName(a));
    builder.Compute("pad", source, names, [&](const std::vector<Var>& i) {
      std::vector<Expr> index(i.begin(), i.end());
      std::vector<Expr> inside;
      for (size_t s = 0; s < spatial; ++s) {
        size_t p = static_cast<size_t>(data_layout.IndexOf(spatial_axes[s]));
        int64_t begin = padding[s];
        if (begin > 0) inside.push_back(i[p] >= Expr(begin));
        if (padding[spatial + s] > 0) inside.push_back(i[p] < Expr(begin + data->shape[p]));
        index[p] = AddConst(i[p], -begin);
      }
      Expr load = ir::Load(data, index);
      Expr condition = All(inside);
      return condition.defined() ? ir::Select(condition, load, Constant(data->dtype, 0)) : load;
    });
  }

  int64_t data_block = data_layout.SplitFactor('C');
  int64_t kernel_block = kernel_layout.SplitFactor('I');
  bool split_reduction = data_block > 1 && data_block == kernel_block && channels % data_block == 0;
  std::vector<ReduceAxis> reduce;
  if (split_reduction) {
    reduce.push_back(ReduceAxis{"ci", channels / data_block});
    reduce.push_back(ReduceAxis{"ci_i", data_block});
  } else {
    reduce.push_back(ReduceAxis{"ci", channels});
  }
  for (char axis : spatial_axes) reduce.push_back(ReduceAxis{fmt::format("k{}", static_cast<char>(std::tolower(axis))), taps[axis]});

  std::vector<std::string> names;
  for (const auto& a : data_layout.axes()) names.push_back(AxisName(a));
  builder.Reduce(call.op, out, names, reduce, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   // Logical output coordinates from the physical iterators.
                   std::map<char, Expr> o;
                   for (size_t k = 0; k < data_layout.axes().size(); ++k) {
                     const auto& a = data_layout.axes()[k];
                     if (a.is_primal()) {
                       int64_t f = data_layout.SplitFactor(a.name);
                       o[a.name] = f > 1 ? MulConst(s[k], f) : Expr(s[k]);
                     }
                   }
                   for (size_t k = 0; k < data_layout.axes().size(); ++k) {
                     const auto& a = data_layout.axes()[k];
                     if (!a.is_primal()) {
                       char primal = static_cast<char>(std::toupper(static_cast<unsigned char>(a.name)));
                       o[primal] = o[primal] + s[k];
                     }
                   }
                   Expr ci = split_reduction ? MulConst(r[0], data_block) + r[1] : Expr(r[0]);
                   size_t first_tap = split_reduction ? 2 : 1;
                   std::map<char, Expr> x{{'N', o['N']}, {'C', ci}};
                   std::map<char, Expr> w{{'O', o['C']}, {'I', ci}};
                   for (size_t t = 0; t < spatial; ++t) {
                     char axis = spatial_axes[t];
                     const Expr& tap = r[first_tap + t];
                     x[axis] = MulConst(o[axis], strides[t]) + MulConst(tap, dilation[t]);
                     w[axis] = tap;
                   }
                   ir::VarRanges ranges;
                   for (size_t k = 0; k < s.size(); ++k) ranges[s[k].get()] = {0, out->shape[k] - 1};
                   for (size_t k = 0; k < r.size(); ++k) ranges[r[k].get()] = {0, reduce[k].extent - 1};
                   auto simplified = [&](std::vector<Expr> index) {
                     for (Expr& e : index) e = ir::Simplify(e, ranges);
                     return index;
                   };
                   return ir::Load(source, simplified(PhysicalIndex(data_layout, x))) *
                          ir::Load(weight, simplified(PhysicalIndex(kernel_layout, w)));
                 });
}

}  // namespace tandem::kernels
