// Pooling.
//
// max_pool2d: an optional "pad" block (filled with the lowest value, -inf for floats, so padding
// never wins), then the reduction "max_pool2d" over the window iterators "kh", "kw".
// avg_pool2d: an optional "pad" block (filled with 0), the reduction "avg_pool2d_sum" into an
// intermediate, and "avg_pool2d" dividing by the number of counted taps (a closed form in the
// output position; a constant when every window is full).
// global_avg_pool2d: "global_avg_pool2d_sum" over "kh", "kw", then "global_avg_pool2d".
// A pad block exists when the padding is non-zero or a ceil_mode window reaches past the input;
// its extent covers every window.
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

struct PoolAxes {
  size_t height, width, channel;
  std::vector<std::string> names;
};

PoolAxes ReadLayout(const std::string& op, const std::string& layout) {
  if (layout == "NCHW") return {2, 3, 1, {"n", "c", "h", "w"}};
  if (layout == "NHWC") return {1, 2, 3, {"n", "h", "w", "c"}};
  throw LoweringError(op, fmt::format("layout '{}' is not supported (NCHW, NHWC)", layout));
}

// The number of window taps k in [0, taps) of output position `o` whose input position
// o * stride - pad_begin + k * dilation lies in [low, high).
Expr TapCount(const Expr& o, int64_t stride, int64_t pad_begin, int64_t dilation, int64_t taps,
              int64_t low, int64_t high) {
  Expr start = AddConst(MulConst(o, stride), -pad_begin);  // position of tap 0
  // first = max(0, ceil((low - start) / dilation)), last = min(taps - 1, floor((high - 1 -
  // start) / dilation)).
  Expr first = ir::Max(Expr(0), ir::FloorDiv(Expr(low + dilation - 1) - start, Expr(dilation)));
  Expr last = ir::Min(Expr(taps - 1), ir::FloorDiv(Expr(high - 1) - start, Expr(dilation)));
  return ir::Max(Expr(0), last - first + Expr(1));
}

}  // namespace

void LowerPool(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  bool is_max = call.op == "max_pool2d";
  PoolAxes axes = ReadLayout(call.op, call.attrs.GetString("layout"));
  const std::vector<int64_t>& window = call.attrs.GetInts("pool_size");
  const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
  const std::vector<int64_t>& padding = call.attrs.GetInts("padding");
  const std::vector<int64_t>& dilation = call.attrs.GetInts("dilation");
  size_t spatial[2] = {axes.height, axes.width};

  // Extent of the input the windows read, in padded coordinates.
  bool needs_pad = false;
  bool full_windows = true;  // every window lies inside the padded input
  int64_t extent[2];
  for (size_t a = 0; a < 2; ++a) {
    int64_t input = data->shape[spatial[a]];
    int64_t reach = (out->shape[spatial[a]] - 1) * strides[a] + dilation[a] * (window[a] - 1) + 1;
    int64_t padded = input + padding[a] + padding[2 + a];
    full_windows = full_windows && reach <= padded;
    needs_pad = needs_pad || padding[a] != 0 || padding[2 + a] != 0 || reach > input;
    extent[a] = std::max(reach, padded);
  }
  Expr pad_value = is_max ? ReducerIdentity(Reducer::kMax, data->dtype) : Constant(data->dtype, 0);
  ir::Buffer source = data;
  if (needs_pad) {
    ir::Shape shape = data->shape;
    shape[spatial[0]] = extent[0];
    shape[spatial[1]] = extent[1];
    source = builder.AddIntermediate(data->name + "_pad", data->dtype, shape);
    builder.Compute("pad", source, axes.names, [&](const std::vector<Var>& i) {
      std::vector<Expr> index(i.begin(), i.end());
      std::vector<Expr> inside;
      for (size_t a = 0; a < 2; ++a) {
        const Expr& v = i[spatial[a]];
        if (padding[a] > 0) inside.push_back(v >= Expr(padding[a]));
        if (extent[a] > padding[a] + data->shape[spatial[a]]) {
          inside.push_back(v < Expr(padding[a] + data->shape[spatial[a]]));
        }
        index[spatial[a]] = AddConst(v, -padding[a]);
      }
      Expr load = ir::Load(data, index);
      Expr condition = All(inside);
      return condition.defined() ? ir::Select(condition, load, pad_value) : load;
    });
  }
  auto tap = [&](const std::vector<Var>& s, const std::vector<Var>& r) {
    std::vector<Expr> index(s.begin(), s.end());
    for (size_t a = 0; a < 2; ++a) {
      index[spatial[a]] = MulConst(s[spatial[a]], strides[a]) + MulConst(r[a], dilation[a]);
    }
    return ir::Load(source, index);
  };
  std::vector<ReduceAxis> taps = {ReduceAxis{"kh", window[0]}, ReduceAxis{"kw", window[1]}};
  if (is_max) {
    builder.Reduce("max_pool2d", out, axes.names, taps, Reducer::kMax, tap);
    return;
  }
  ir::Buffer sum = builder.AddIntermediate(data->name + "_pool_sum", data->dtype, out->shape);
  builder.Reduce("avg_pool2d_sum", sum, axes.names, taps, Reducer::kSum, tap);
  bool include_pad = call.attrs.GetInt("count_include_pad") == 1;
  builder.Compute("avg_pool2d", out, axes.names, [&](const std::vector<Var>& s) {
    Expr count;
    if (!needs_pad || (include_pad && full_windows)) {
      count = Expr(window[0] * window[1]);
    } else {
      Expr counts[2];
      for (size_t a = 0; a < 2; ++a) {
        int64_t input = data->shape[spatial[a]];
        int64_t high = include_pad ? input + padding[2 + a] : input;
        int64_t low = include_pad ? -padding[a] : 0;
        counts[a] =
            TapCount(s[spatial[a]], strides[a], padding[a], dilation[a], window[a], low, high);
      }
      count = ir::Max(counts[0] * counts[1], Expr(1));  // an empty window averages to 0
    }
    ir::DataType dtype = out->dtype;
    return ir::Load(sum, s) / ir::Cast(dtype, count);
  });
}

void LowerGlobalAvgPool(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  PoolAxes axes = ReadLayout(call.op, call.attrs.GetString("layout"));
  int64_t height = data->shape[axes.height];
  int64_t width = data->shape[axes.width];
  ir::Buffer sum = builder.AddIntermediate(data->name + "_pool_sum", data->dtype, out->shape);
  builder.Reduce("global_avg_pool2d_sum", sum, axes.names,
                 {ReduceAxis{"kh", height}, ReduceAxis{"kw", width}}, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   std::vector<Expr> index(s.begin(), s.end());
                   index[axes.height] = r[0];
                   index[axes.width] = r[1];
                   return ir::Load(data, index);
                 });
  builder.Compute("global_avg_pool2d", out, axes.names, [&](const std::vector<Var>& s) {
    return ir::Load(sum, s) / Constant(out->dtype, static_cast<double>(height * width));
  });
}

}  // namespace tandem::kernels
