// Pooling: max_pool2d, avg_pool2d and global_avg_pool2d over NCHW (or NHWC) data.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "ir/checked_math.h"
#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

using Pair = std::array<int64_t, 2>;

// Positions of the N, C, H and W axes in a supported data layout.
struct LayoutAxes {
  size_t batch, channel, height, width;
};

LayoutAxes ReadLayout(const std::string& layout) {
  if (layout == "NCHW") return {0, 1, 2, 3};
  if (layout == "NHWC") return {0, 3, 1, 2};
  throw Error(fmt::format(
      "layout '{}' is not supported by the reference yet (supported: NCHW, NHWC)", layout));
}

LayoutAxes ReadData(const TensorType& data, const std::string& layout) {
  LayoutAxes axes = ReadLayout(layout);
  if (data.rank() != 4) {
    throw Error(fmt::format("data must have rank 4 (layout {}) but has shape {}", layout,
                            ShapeToString(data.shape)));
  }
  return axes;
}

void CheckOperandLayout(const TensorType& data, const std::string& layout) {
  if (!data.layout.empty() && data.layout != layout) {
    throw Error(fmt::format("data is tagged with layout '{}' but the op's layout is '{}'",
                            data.layout, layout));
  }
}

bool ReadFlag(const Attrs& attrs, const std::string& name) {
  int64_t value = attrs.GetInt(name);
  if (value != 0 && value != 1) {
    throw Error(fmt::format("attribute '{}' must be 0 or 1 but is {}", name, value));
  }
  return value == 1;
}

struct PoolGeometry {
  LayoutAxes axes;
  Pair input, output, window, strides, dilation, pad_begin, pad_end;
};

Pair PairOf(const std::vector<int64_t>& values, size_t first) {
  return {values[first], values[first + 1]};
}

void CheckAll(const std::vector<int64_t>& values, int64_t minimum, const std::string& name,
              const std::string& requirement) {
  for (int64_t v : values) {
    if (v < minimum) {
      throw Error(
          fmt::format("{} must be {} but is {}", name, requirement, ToString(AttrValue(values))));
    }
  }
}

PoolGeometry ReadPool(const TensorType& data, const Attrs& attrs) {
  PoolGeometry g;
  g.axes = ReadData(data, attrs.GetString("layout"));
  CheckLength(attrs, "pool_size", 2);
  CheckLength(attrs, "strides", 2);
  CheckLength(attrs, "padding", 4);
  CheckLength(attrs, "dilation", 2);
  CheckAll(attrs.GetInts("pool_size"), 1, "pool_size", "positive");
  CheckAll(attrs.GetInts("strides"), 1, "strides", "positive");
  CheckAll(attrs.GetInts("dilation"), 1, "dilation", "positive");
  CheckAll(attrs.GetInts("padding"), 0, "padding", "non-negative");
  bool ceil_mode = ReadFlag(attrs, "ceil_mode");
  g.window = PairOf(attrs.GetInts("pool_size"), 0);
  g.strides = PairOf(attrs.GetInts("strides"), 0);
  g.dilation = PairOf(attrs.GetInts("dilation"), 0);
  g.pad_begin = PairOf(attrs.GetInts("padding"), 0);
  g.pad_end = PairOf(attrs.GetInts("padding"), 2);
  g.input = {data.shape[g.axes.height], data.shape[g.axes.width]};
  for (size_t a = 0; a < 2; ++a) {
    char name = a == 0 ? 'H' : 'W';
    std::string axis = fmt::format("on axis {}", name);
    std::string what = "the dilated pool_size extent " + axis;
    int64_t extent = CheckedAdd(CheckedMul(g.dilation[a], g.window[a] - 1, what), 1, what);
    if (g.pad_begin[a] >= extent || g.pad_end[a] >= extent) {
      throw Error(fmt::format(
          "padding on axis {} ({} and {}) must be smaller than the pooling window extent {}", name,
          g.pad_begin[a], g.pad_end[a], extent));
    }
    int64_t padded = CheckedAdd(
        CheckedAdd(g.input[a], g.pad_begin[a], "the padded input extent (padding) " + axis),
        g.pad_end[a], "the padded input extent (padding) " + axis);
    if (extent > padded) {
      throw Error(fmt::format(
          "output extent on axis {} would be non-positive: the pooling window extent {} "
          "(pool_size {}, dilation {}) is larger than the padded input extent {} (input {} + "
          "padding {} + {})",
          name, extent, g.window[a], g.dilation[a], padded, g.input[a], g.pad_begin[a],
          g.pad_end[a]));
    }
    int64_t span = padded - extent;
    int64_t count = (ceil_mode ? span / g.strides[a] + (span % g.strides[a] != 0 ? 1 : 0)
                               : span / g.strides[a]) +
                    1;
    // In ceil mode a last window that starts in the end padding (or beyond) is dropped.
    // ((count - 1) x stride >= input + pad_begin, without the product.)
    if (ceil_mode && count - 1 > (padded - g.pad_end[a] - 1) / g.strides[a]) --count;
    g.output[a] = count;
  }
  return g;
}

TensorType PoolResultType(const TensorType& data, const LayoutAxes& axes, Pair spatial,
                          const std::string& layout) {
  Shape shape = data.shape;
  shape[axes.height] = spatial[0];
  shape[axes.width] = spatial[1];
  return TensorType{shape, data.dtype, layout == "NCHW" ? "" : layout};
}

// The taps of one window along one axis: the input positions inside the data, and how many
// taps lie inside the padded input (the divisor of avg_pool2d with count_include_pad).
struct WindowTaps {
  std::vector<int64_t> positions;
  int64_t padded_count = 0;
};

std::vector<WindowTaps> AxisTaps(const PoolGeometry& g, size_t a) {
  std::vector<WindowTaps> taps(static_cast<size_t>(g.output[a]));
  for (int64_t o = 0; o < g.output[a]; ++o) {
    WindowTaps& t = taps[static_cast<size_t>(o)];
    for (int64_t k = 0; k < g.window[a]; ++k) {
      int64_t position = o * g.strides[a] - g.pad_begin[a] + k * g.dilation[a];
      if (position >= 0 && position < g.input[a]) t.positions.push_back(position);
      if (position < g.input[a] + g.pad_end[a]) ++t.padded_count;
    }
  }
  return taps;
}

enum class PoolKind { kMax, kAverage, kAverageIncludePad };

std::vector<Tensor> PoolReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                  const Type& output, PoolKind kind) {
  const Tensor& data = inputs.at(0);
  PoolGeometry g = ReadPool(data.type(), attrs);
  std::vector<double> in = data.ToDoubles();
  Tensor result(output.tensor());
  if (result.shape() != PoolResultType(data.type(), g.axes, g.output, "").shape) {
    throw Error("result type does not match the operands");
  }
  std::vector<int64_t> in_strides = RowMajorStrides(data.shape());
  std::vector<int64_t> out_strides = RowMajorStrides(result.shape());
  const LayoutAxes& x = g.axes;
  std::vector<WindowTaps> rows = AxisTaps(g, 0);
  std::vector<WindowTaps> columns = AxisTaps(g, 1);
  int64_t in_h = in_strides[x.height], in_w = in_strides[x.width];
  for (int64_t n = 0; n < data.shape()[x.batch]; ++n) {
    for (int64_t c = 0; c < data.shape()[x.channel]; ++c) {
      const double* plane = in.data() + n * in_strides[x.batch] + c * in_strides[x.channel];
      int64_t out_base = n * out_strides[x.batch] + c * out_strides[x.channel];
      for (int64_t oh = 0; oh < g.output[0]; ++oh) {
        const WindowTaps& row = rows[static_cast<size_t>(oh)];
        for (int64_t ow = 0; ow < g.output[1]; ++ow) {
          const WindowTaps& column = columns[static_cast<size_t>(ow)];
          double value;
          if (kind == PoolKind::kMax) {
            // A window over padding only yields the lowest value; NaN propagates.
            value = -std::numeric_limits<double>::infinity();
            for (int64_t ih : row.positions) {
              for (int64_t iw : column.positions) {
                double v = plane[ih * in_h + iw * in_w];
                if (v > value || std::isnan(v)) value = v;
              }
            }
          } else {
            double sum = 0;
            for (int64_t ih : row.positions) {
              for (int64_t iw : column.positions) sum += plane[ih * in_h + iw * in_w];
            }
            int64_t divisor =
                kind == PoolKind::kAverageIncludePad
                    ? row.padded_count * column.padded_count
                    : static_cast<int64_t>(row.positions.size() * column.positions.size());
            value = divisor == 0 ? 0.0 : sum / static_cast<double>(divisor);
          }
          result.SetDouble(out_base + oh * out_strides[x.height] + ow * out_strides[x.width],
                           value);
        }
      }
    }
  }
  return {result};
}

OpDef PoolOp(const std::string& name, PoolKind kind, const std::string& doc) {
  OpDef def;
  def.name = name;
  def.doc = doc;
  def.attrs = {
      {"pool_size", AttrKind::kInts, std::nullopt, "window extent [kH, kW]"},
      {"strides", AttrKind::kInts, AttrValue(std::vector<int64_t>{1, 1}), "window step [sH, sW]"},
      {"padding", AttrKind::kInts, AttrValue(std::vector<int64_t>{0, 0, 0, 0}),
       "padding [top, left, bottom, right]"},
      {"dilation", AttrKind::kInts, AttrValue(std::vector<int64_t>{1, 1}),
       "spacing of window taps [dH, dW]"},
      {"ceil_mode", AttrKind::kInt, AttrValue(int64_t{0}),
       "1: round the output extent up (a window starting in the end padding is dropped)"},
      {"layout", AttrKind::kString, AttrValue(std::string("NCHW")), "NCHW or NHWC"},
  };
  if (kind != PoolKind::kMax) {
    def.attrs.push_back({"count_include_pad", AttrKind::kInt, AttrValue(int64_t{0}),
                         "1: divide by the taps inside the padded input, 0: by the taps inside "
                         "the data"});
  }
  def.pattern = PatternKind::kOutElementwiseFusable;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    const TensorType& data = TensorOperand(inputs, 0, "data");
    CheckOperandLayout(data, attrs.GetString("layout"));
    PoolGeometry g = ReadPool(data, attrs);
    if (attrs.Has("count_include_pad")) ReadFlag(attrs, "count_include_pad");
    return PoolResultType(data, g.axes, g.output, attrs.GetString("layout"));
  };
  def.reference = [kind](const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const Type& output) {
    PoolKind actual = kind;
    if (kind != PoolKind::kMax && ReadFlag(attrs, "count_include_pad")) {
      actual = PoolKind::kAverageIncludePad;
    }
    return PoolReference(inputs, attrs, output, actual);
  };
  return def;
}

Type InferGlobalPool(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& data = TensorOperand(inputs, 0, "data");
  const std::string& layout = attrs.GetString("layout");
  CheckOperandLayout(data, layout);
  LayoutAxes axes = ReadData(data, layout);
  if (data.shape[axes.height] < 1 || data.shape[axes.width] < 1) {
    throw Error(fmt::format("spatial extents of data must be positive but data has shape {}",
                            ShapeToString(data.shape)));
  }
  return PoolResultType(data, axes, {1, 1}, layout);
}

std::vector<Tensor> GlobalPoolReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                        const Type& output) {
  const Tensor& data = inputs.at(0);
  LayoutAxes x = ReadData(data.type(), attrs.GetString("layout"));
  std::vector<double> in = data.ToDoubles();
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  const Shape& shape = data.shape();
  Tensor result(output.tensor());
  if (result.num_elements() != shape[x.batch] * shape[x.channel]) {
    throw Error("result type does not match the operands");
  }
  std::vector<int64_t> out_strides = RowMajorStrides(result.shape());
  int64_t count = shape[x.height] * shape[x.width];
  for (int64_t n = 0; n < shape[x.batch]; ++n) {
    for (int64_t c = 0; c < shape[x.channel]; ++c) {
      const double* plane = in.data() + n * strides[x.batch] + c * strides[x.channel];
      double sum = 0;
      for (int64_t h = 0; h < shape[x.height]; ++h) {
        for (int64_t w = 0; w < shape[x.width]; ++w) {
          sum += plane[h * strides[x.height] + w * strides[x.width]];
        }
      }
      result.SetDouble(n * out_strides[x.batch] + c * out_strides[x.channel],
                       sum / static_cast<double>(count));
    }
  }
  return {result};
}

}  // namespace

void RegisterPoolingOps(OpRegistry& registry) {
  registry.Register(PoolOp("max_pool2d", PoolKind::kMax,
                           "2-d max pooling: data [N,C,H,W] -> [N,C,H',W']; padding never wins "
                           "the max (a window over padding only yields -inf)"));
  registry.Register(PoolOp("avg_pool2d", PoolKind::kAverage,
                           "2-d average pooling: data [N,C,H,W] -> [N,C,H',W']; the divisor "
                           "counts the taps inside the data, or inside the padded input with "
                           "count_include_pad"));
  OpDef global;
  global.name = "global_avg_pool2d";
  global.doc = "mean over the spatial axes: data [N,C,H,W] -> [N,C,1,1]";
  global.attrs = {{"layout", AttrKind::kString, AttrValue(std::string("NCHW")), "NCHW or NHWC"}};
  global.pattern = PatternKind::kOutElementwiseFusable;
  global.infer_type = InferGlobalPool;
  global.reference = GlobalPoolReference;
  registry.Register(std::move(global));
}

}  // namespace tandem::ir::ops
