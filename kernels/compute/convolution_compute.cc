// Convolutions.
//
// conv1d/2d/3d: an optional "pad" block (zero padding into an intermediate in the data layout),
// then one reduction block named after the op with spatial iterators over the result axes in
// the data layout ("n", "co", "d", "h", "w") and reduction iterators "ci", "kd", "kh", "kw"
// ("ci" is left out for a depthwise convolution, whose every group has one input channel).
//
// conv2d_transpose with stride s > 1, no dilation and kernel and output extents divisible by s:
// the sub-pixel (phase) form. Output row h = s*hq + ph receives kernel taps
// kh = ((front - ph) mod s) + s*j only (the other taps meet inserted zeros), from input row
// hq + ceil((ph - front) / s) + j, j in [0, kH/s): s^2 times fewer multiply-adds than convolving
// the zero-inserted grid (front = kH - 1 - pad_begin). A "conv2d_transpose_phases" block
// computes the phases apart, [n, co, ph, pw, hq, wq], and an "interleave" block places them.
//
// Other conv2d_transpose: dilate + pad + convolution. The "pad" block places the input on a grid
// with `stride` spacing and the border of a full convolution (d*(k-1) - pad_begin on the begin
// side, possibly negative, which crops), and the "conv2d_transpose" block convolves that grid with
// the spatially flipped kernel: out[n, o, h, w] = sum padded[n, c, h + kh*d, w + kw*d] * weight[c,
// o % (O/g), kH-1-kh, kW-1-kw] over the input channels c of o's group.
#include <fmt/format.h>

#include "ir/error.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

std::string IteratorName(char axis) {
  switch (axis) {
    case 'N':
      return "n";
    case 'C':
      return "c";
    case 'D':
      return "d";
    case 'H':
      return "h";
    default:
      return "w";
  }
}

size_t Position(const std::string& layout, char axis) {
  return layout.find(axis);
}

// The input channel read by output channel `co` at group-local input channel `ci` (undefined for
// depthwise, where every group has one input channel).
Expr InputChannel(const Expr& co, const Expr& ci, int64_t groups, int64_t group_in,
                  int64_t group_out) {
  if (groups == 1) return ci;
  Expr group = group_out == 1 ? co : ir::FloorDiv(co, Expr(group_out));
  Expr first = MulConst(group, group_in);
  return ci.defined() ? first + ci : first;
}

}  // namespace

bool IsBlockedConvolution(const OpCall& call);
void LowerBlockedConvolution(ComputeBuilder& builder, const OpCall& call);

void LowerConvolution(ComputeBuilder& builder, const OpCall& call) {
  if (IsBlockedConvolution(call)) {
    LowerBlockedConvolution(builder, call);
    return;
  }
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& weight = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  const std::string& data_layout = call.attrs.GetString("data_layout");
  const std::string& kernel_layout = call.attrs.GetString("kernel_layout");
  const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
  const std::vector<int64_t>& padding = call.attrs.GetInts("padding");
  const std::vector<int64_t>& dilation = call.attrs.GetInts("dilation");
  int64_t groups = call.attrs.GetInt("groups");
  size_t spatial = strides.size();
  std::string spatial_axes = std::string("DHW").substr(3 - spatial);
  if (data_layout.size() != spatial + 2 || kernel_layout.size() != spatial + 2) {
    throw LoweringError(call.op, fmt::format("layouts '{}' / '{}' do not have {} axes", data_layout,
                                             kernel_layout, spatial + 2));
  }
  size_t channel_axis = Position(data_layout, 'C');
  int64_t in_channels = data->shape[channel_axis];
  int64_t out_channels = weight->shape[Position(kernel_layout, 'O')];
  int64_t group_in = in_channels / groups;
  int64_t group_out = out_channels / groups;
  bool depthwise = groups > 1 && group_in == 1;

  // The pad block, when any padding is non-zero.
  ir::Buffer source = data;
  bool padded = false;
  for (int64_t p : padding) padded = padded || p != 0;
  if (padded) {
    ir::Shape shape = data->shape;
    for (size_t s = 0; s < spatial; ++s) {
      shape[Position(data_layout, spatial_axes[s])] += padding[s] + padding[spatial + s];
    }
    source = builder.AddIntermediate(data->name + "_pad", data->dtype, shape);
    std::vector<std::string> names;
    for (char axis : data_layout) names.push_back(IteratorName(axis));
    builder.Compute("pad", source, names, [&](const std::vector<Var>& i) {
      std::vector<Expr> index(i.begin(), i.end());
      std::vector<Expr> inside;
      for (size_t s = 0; s < spatial; ++s) {
        size_t p = Position(data_layout, spatial_axes[s]);
        int64_t begin = padding[s];
        int64_t end = padding[spatial + s];
        if (begin > 0) inside.push_back(i[p] >= Expr(begin));
        if (end > 0) inside.push_back(i[p] < Expr(begin + data->shape[p]));
        index[p] = AddConst(i[p], -begin);
      }
      Expr load = ir::Load(data, index);
      Expr condition = All(inside);
      return condition.defined() ? ir::Select(condition, load, Constant(data->dtype, 0)) : load;
    });
  }

  // The convolution.
  std::vector<std::string> names;
  for (char axis : data_layout) names.push_back(axis == 'C' ? "co" : IteratorName(axis));
  std::vector<ReduceAxis> reduce;
  if (!depthwise) reduce.push_back(ReduceAxis{"ci", group_in});
  for (char axis : spatial_axes) {
    reduce.push_back(ReduceAxis{fmt::format("k{}", IteratorName(axis)),
                                weight->shape[Position(kernel_layout, axis)]});
  }
  builder.Reduce(call.op, out, names, reduce, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   const Expr& co = s[channel_axis];
                   Expr ci = depthwise ? Expr() : r[0];
                   size_t first_tap = depthwise ? 0 : 1;
                   std::vector<Expr> data_index(s.begin(), s.end());
                   data_index[channel_axis] = InputChannel(co, ci, groups, group_in, group_out);
                   std::vector<Expr> weight_index(spatial + 2);
                   weight_index[Position(kernel_layout, 'O')] = co;
                   weight_index[Position(kernel_layout, 'I')] = depthwise ? Expr(0) : ci;
                   for (size_t t = 0; t < spatial; ++t) {
                     const Expr& tap = r[first_tap + t];
                     size_t p = Position(data_layout, spatial_axes[t]);
                     data_index[p] = MulConst(s[p], strides[t]) + MulConst(tap, dilation[t]);
                     weight_index[Position(kernel_layout, spatial_axes[t])] = tap;
                   }
                   return ir::Load(source, data_index) * ir::Load(weight, weight_index);
                 });
}

void LowerConvolutionTranspose(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& weight = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
  const std::vector<int64_t>& padding = call.attrs.GetInts("padding");
  const std::vector<int64_t>& dilation = call.attrs.GetInts("dilation");
  int64_t groups = call.attrs.GetInt("groups");
  int64_t in_channels = data->shape[1];
  int64_t group_in = in_channels / groups;
  int64_t group_out = weight->shape[1];
  bool depthwise = groups > 1 && group_in == 1;

  // Geometry of the dilated, padded input per spatial axis (H, W).
  int64_t front[2];   // padded position y holds dilated input position y - front
  int64_t extent[2];  // extent of the padded input
  bool needs_pad = false;
  for (size_t s = 0; s < 2; ++s) {
    int64_t taps = weight->shape[2 + s];
    front[s] = dilation[s] * (taps - 1) - padding[s];
    extent[s] = out->shape[2 + s] + dilation[s] * (taps - 1);
    needs_pad = needs_pad || strides[s] != 1 || front[s] != 0 || extent[s] > data->shape[2 + s];
  }
  bool phase_form = true;
  for (size_t s = 0; s < 2; ++s) {
    phase_form = phase_form && dilation[s] == 1 && strides[s] > 1 &&
                 weight->shape[2 + s] % strides[s] == 0 && out->shape[2 + s] % strides[s] == 0;
  }
  if (phase_form) {
    // "conv2d_transpose_phases" computes [n, co, ph, pw, hq, wq] (output row h = s*hq + ph), so
    // that along wq the input is read contiguously; "interleave" puts the phases in place.
    ir::Buffer phases =
        builder.AddIntermediate(out->name + "_phases", out->dtype,
                                {out->shape[0], out->shape[1], strides[0], strides[1],
                                 out->shape[2] / strides[0], out->shape[3] / strides[1]});
    std::vector<ReduceAxis> reduce;
    if (!depthwise) reduce.push_back(ReduceAxis{"ci", group_in});
    reduce.push_back(ReduceAxis{"jh", weight->shape[2] / strides[0]});
    reduce.push_back(ReduceAxis{"jw", weight->shape[3] / strides[1]});
    builder.Reduce(
        "conv2d_transpose_phases", phases, {"n", "co", "ph", "pw", "hq", "wq"}, reduce,
        Reducer::kSum, [&](const std::vector<Var>& sp, const std::vector<Var>& r) {
          const Expr& co = sp[1];
          Expr ci = depthwise ? Expr() : r[0];
          Expr channel = InputChannel(co, ci, groups, group_in, group_out);
          Expr out_channel = groups == 1 ? co : ir::FloorMod(co, Expr(group_out));
          std::vector<Expr> data_index = {sp[0], channel};
          std::vector<Expr> weight_index = {channel, out_channel};
          std::vector<Expr> inside;
          for (size_t s = 0; s < 2; ++s) {
            const Expr& phase = sp[2 + s];
            const Expr& block = sp[4 + s];
            const Expr& j = r[(depthwise ? 0 : 1) + s];
            int64_t stride = strides[s];
            int64_t taps = weight->shape[2 + s];
            Expr offset = ir::FloorDiv(AddConst(phase, stride - 1 - front[s]), Expr(stride));
            Expr row = block + offset + j;
            Expr tap = ir::FloorMod(Expr(front[s]) - phase, Expr(stride)) + MulConst(j, stride);
            inside.push_back(row >= Expr(0));
            inside.push_back(row <= Expr(data->shape[2 + s] - 1));
            data_index.push_back(row);
            weight_index.push_back(Expr(taps - 1) - tap);
          }
          Expr x = ir::Select(All(inside), ir::Load(data, data_index), Constant(data->dtype, 0));
          return x * ir::Load(weight, weight_index);
        });
    builder.Compute("interleave", out, {"n", "co", "h", "w"}, [&](const std::vector<Var>& i) {
      return ir::Load(
          phases,
          {i[0], i[1], ir::FloorMod(i[2], Expr(strides[0])), ir::FloorMod(i[3], Expr(strides[1])),
           ir::FloorDiv(i[2], Expr(strides[0])), ir::FloorDiv(i[3], Expr(strides[1]))});
    });
    return;
  }
  ir::Buffer source = data;
  if (needs_pad) {
    source = builder.AddIntermediate(data->name + "_pad", data->dtype,
                                     {data->shape[0], in_channels, extent[0], extent[1]});
    builder.Compute("pad", source, {"n", "c", "h", "w"}, [&](const std::vector<Var>& i) {
      std::vector<Expr> index = {i[0], i[1]};
      std::vector<Expr> inside;
      for (size_t s = 0; s < 2; ++s) {
        Expr t = AddConst(i[2 + s], -front[s]);  // position on the dilated input
        int64_t last = (data->shape[2 + s] - 1) * strides[s];
        if (front[s] > 0) inside.push_back(t >= Expr(0));
        if (extent[s] - 1 - front[s] > last) inside.push_back(t <= Expr(last));
        if (strides[s] != 1) inside.push_back(ir::FloorMod(t, Expr(strides[s])) == Expr(0));
        index.push_back(strides[s] == 1 ? t : ir::FloorDiv(t, Expr(strides[s])));
      }
      Expr load = ir::Load(data, index);
      Expr condition = All(inside);
      return condition.defined() ? ir::Select(condition, load, Constant(data->dtype, 0)) : load;
    });
  }
  std::vector<ReduceAxis> reduce;
  if (!depthwise) reduce.push_back(ReduceAxis{"ci", group_in});
  reduce.push_back(ReduceAxis{"kh", weight->shape[2]});
  reduce.push_back(ReduceAxis{"kw", weight->shape[3]});
  builder.Reduce("conv2d_transpose", out, {"n", "co", "h", "w"}, reduce, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   const Expr& co = s[1];
                   Expr ci = depthwise ? Expr() : r[0];
                   const Expr& kh = r[depthwise ? 0 : 1];
                   const Expr& kw = r[depthwise ? 1 : 2];
                   Expr channel = InputChannel(co, ci, groups, group_in, group_out);
                   Expr out_channel = groups == 1 ? co : ir::FloorMod(co, Expr(group_out));
                   Expr x = ir::Load(source, {s[0], channel, s[2] + MulConst(kh, dilation[0]),
                                              s[3] + MulConst(kw, dilation[1])});
                   Expr w = ir::Load(weight, {channel, out_channel, Expr(weight->shape[2] - 1) - kh,
                                              Expr(weight->shape[3] - 1) - kw});
                   return x * w;
                 });
}

}  // namespace tandem::kernels
