// Convolutions: conv1d, conv2d, conv3d and conv2d_transpose.
//
// All of them share one reference: operands are brought into the canonical layout (data
// [N, C, spatial...], weight [O, I, spatial...]) as double buffers, the spatial axes are padded
// to three (D, H, W) with unit extents, and one 3-d loop nest computes the result, which is then
// written back in the requested data layout.
#include <fmt/format.h>

#include <optional>

#include <algorithm>
#include <array>

#include "ir/checked_math.h"
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

constexpr size_t kMaxSpatial = 3;
using Extents = std::array<int64_t, kMaxSpatial>;

// What a convolution op accepts: its number of spatial axes and its layouts.
struct ConvSpec {
  size_t spatial = 2;
  std::string data_layout;    // default, e.g. "NCHW"
  std::string kernel_layout;  // default, e.g. "OIHW"
  std::vector<std::string> data_layouts;
  std::vector<std::string> kernel_layouts;
};

// The sizes of one convolution, with the spatial axes right-aligned into three slots (a conv2d
// uses slots 1 and 2; slot 0 then has extent 1, stride 1, dilation 1 and no padding).
struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t groups = 1;
  Extents input{1, 1, 1};
  Extents output{1, 1, 1};
  Extents kernel{1, 1, 1};
  Extents strides{1, 1, 1};
  Extents dilation{1, 1, 1};
  Extents pad_begin{0, 0, 0};
  // Position in the operand of each canonical axis: data {N, C, spatial...}, weight
  // {O, I, spatial...} for a convolution or {C, O/groups, spatial...} for a transposed one.
  std::vector<int64_t> data_axes;
  std::vector<int64_t> kernel_axes;
};

std::string SpatialNames(size_t spatial) {
  return std::string("DHW").substr(kMaxSpatial - spatial);
}

// Positions of the letters of `canonical` in `layout`, or an Error when `layout` is not one of
// `supported`.
std::vector<int64_t> LayoutAxes(const std::string& layout, const std::string& canonical,
                                const std::vector<std::string>& supported,
                                const std::string& attribute) {
  if (std::find(supported.begin(), supported.end(), layout) == supported.end()) {
    throw Error(fmt::format("{} '{}' is not supported by the reference yet (supported: {})",
                            attribute, layout, fmt::join(supported, ", ")));
  }
  std::vector<int64_t> axes;
  for (char letter : canonical) axes.push_back(static_cast<int64_t>(layout.find(letter)));
  return axes;
}

void CheckRank(const TensorType& type, size_t rank, const std::string& role,
               const std::string& layout) {
  if (type.rank() != static_cast<int64_t>(rank)) {
    throw Error(fmt::format("{} must have rank {} (layout {}) but has shape {}", role, rank, layout,
                            ShapeToString(type.shape)));
  }
}

void CheckSameDataType(const TensorType& data, const TensorType& weight) {
  if (data.dtype != weight.dtype) {
    throw Error(fmt::format("data is {} but weight is {}; both must have one data type",
                            ToString(data.dtype), ToString(weight.dtype)));
  }
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

// Validates strides, padding and dilation of a window op over `spatial` axes and stores them in
// the right-aligned slots of `geometry`. Returns the end paddings.
Extents ReadWindowAttrs(const Attrs& attrs, size_t spatial, ConvGeometry& geometry) {
  CheckLength(attrs, "strides", spatial);
  CheckLength(attrs, "padding", 2 * spatial);
  CheckLength(attrs, "dilation", spatial);
  const auto& strides = attrs.GetInts("strides");
  const auto& padding = attrs.GetInts("padding");
  const auto& dilation = attrs.GetInts("dilation");
  CheckAll(strides, 1, "strides", "positive");
  CheckAll(dilation, 1, "dilation", "positive");
  CheckAll(padding, 0, "padding", "non-negative");
  Extents pad_end{0, 0, 0};
  for (size_t s = 0; s < spatial; ++s) {
    size_t slot = kMaxSpatial - spatial + s;
    geometry.strides[slot] = strides[s];
    geometry.dilation[slot] = dilation[s];
    geometry.pad_begin[slot] = padding[s];
    pad_end[slot] = padding[spatial + s];
  }
  return pad_end;
}

int64_t ReadGroups(const Attrs& attrs) {
  int64_t groups = attrs.GetInt("groups");
  if (groups < 1) throw Error(fmt::format("groups must be positive but is {}", groups));
  return groups;
}

ConvGeometry ForwardGeometry(const TensorType& data, const TensorType& weight, const Attrs& attrs,
                             const ConvSpec& spec) {
  ConvGeometry g;
  const std::string& data_layout = attrs.GetString("data_layout");
  const std::string& kernel_layout = attrs.GetString("kernel_layout");
  g.data_axes = LayoutAxes(data_layout, spec.data_layout, spec.data_layouts, "data_layout");
  g.kernel_axes =
      LayoutAxes(kernel_layout, spec.kernel_layout, spec.kernel_layouts, "kernel_layout");
  CheckRank(data, spec.spatial + 2, "data", data_layout);
  CheckRank(weight, spec.spatial + 2, "weight", kernel_layout);
  CheckSameDataType(data, weight);
  Extents pad_end = ReadWindowAttrs(attrs, spec.spatial, g);
  g.groups = ReadGroups(attrs);

  auto data_dim = [&](size_t axis) { return data.shape[static_cast<size_t>(g.data_axes[axis])]; };
  auto weight_dim = [&](size_t axis) {
    return weight.shape[static_cast<size_t>(g.kernel_axes[axis])];
  };
  g.batch = data_dim(0);
  g.in_channels = data_dim(1);
  g.out_channels = weight_dim(0);
  int64_t weight_in = weight_dim(1);
  if (g.in_channels % g.groups != 0) {
    throw Error(fmt::format("channels of data ({}) must be divisible by groups ({})", g.in_channels,
                            g.groups));
  }
  if (CheckedMul(weight_in, g.groups, "groups x input channels of weight") != g.in_channels) {
    throw Error(
        fmt::format("channels of data ({}) must equal groups ({}) x input channels of weight ({})",
                    g.in_channels, g.groups, weight_in));
  }
  if (g.out_channels % g.groups != 0) {
    throw Error(fmt::format("output channels of weight ({}) must be divisible by groups ({})",
                            g.out_channels, g.groups));
  }
  std::string names = SpatialNames(spec.spatial);
  for (size_t s = 0; s < spec.spatial; ++s) {
    size_t slot = kMaxSpatial - spec.spatial + s;
    g.input[slot] = data_dim(2 + s);
    g.kernel[slot] = weight_dim(2 + s);
    if (g.kernel[slot] < 1) {
      throw Error(fmt::format("kernel extent on axis {} must be positive but weight has shape {}",
                              names[s], ShapeToString(weight.shape)));
    }
    std::string axis = fmt::format("on axis {}", names[s]);
    std::string what = "the dilated kernel extent " + axis;
    int64_t window = CheckedAdd(CheckedMul(g.dilation[slot], g.kernel[slot] - 1, what), 1, what);
    int64_t padded = CheckedAdd(
        CheckedAdd(g.input[slot], g.pad_begin[slot], "the padded input extent (padding) " + axis),
        pad_end[slot], "the padded input extent (padding) " + axis);
    if (window > padded) {
      throw Error(fmt::format(
          "output extent on axis {} would be non-positive: the dilated kernel extent {} (kernel "
          "{}, dilation {}) is larger than the padded input extent {} (input {} + padding {} + "
          "{})",
          names[s], window, g.kernel[slot], g.dilation[slot], padded, g.input[slot],
          g.pad_begin[slot], pad_end[slot]));
    }
    g.output[slot] = (padded - window) / g.strides[slot] + 1;
  }
  return g;
}

ConvGeometry TransposeGeometry(const TensorType& data, const TensorType& weight,
                               const Attrs& attrs) {
  constexpr size_t kSpatial = 2;
  ConvGeometry g;
  g.data_axes = {0, 1, 2, 3};
  g.kernel_axes = {0, 1, 2, 3};
  CheckRank(data, kSpatial + 2, "data", "NCHW");
  CheckRank(weight, kSpatial + 2, "weight", "[C, O/groups, kH, kW]");
  CheckSameDataType(data, weight);
  Extents pad_end = ReadWindowAttrs(attrs, kSpatial, g);
  CheckLength(attrs, "output_padding", kSpatial);
  const auto& output_padding = attrs.GetInts("output_padding");
  CheckAll(output_padding, 0, "output_padding", "non-negative");
  g.groups = ReadGroups(attrs);
  g.batch = data.shape[0];
  g.in_channels = data.shape[1];
  if (weight.shape[0] != g.in_channels) {
    throw Error(fmt::format(
        "channels of data ({}) must equal the input channels of weight ({}) (weight is [C, "
        "O/groups, kH, kW])",
        g.in_channels, weight.shape[0]));
  }
  if (g.in_channels % g.groups != 0) {
    throw Error(fmt::format("channels of data ({}) must be divisible by groups ({})", g.in_channels,
                            g.groups));
  }
  g.out_channels = CheckedMul(weight.shape[1], g.groups, "groups x output channels of weight");
  std::string names = SpatialNames(kSpatial);
  for (size_t s = 0; s < kSpatial; ++s) {
    size_t slot = kMaxSpatial - kSpatial + s;
    g.input[slot] = data.shape[2 + s];
    g.kernel[slot] = weight.shape[2 + s];
    if (g.input[slot] < 1 || g.kernel[slot] < 1) {
      throw Error(fmt::format("extent on axis {} must be positive in data {} and weight {}",
                              names[s], ShapeToString(data.shape), ShapeToString(weight.shape)));
    }
    std::string what = fmt::format(
        "the output extent on axis {} (strides, padding, dilation, "
        "output_padding)",
        names[s]);
    int64_t extent = CheckedMul(g.input[slot] - 1, g.strides[slot], what);
    extent = CheckedSub(extent, g.pad_begin[slot], what);
    extent = CheckedSub(extent, pad_end[slot], what);
    extent = CheckedAdd(extent, CheckedMul(g.dilation[slot], g.kernel[slot] - 1, what), what);
    extent = CheckedAdd(CheckedAdd(extent, output_padding[s], what), 1, what);
    if (extent < 1) {
      throw Error(fmt::format(
          "output extent on axis {} would be {}: (input {} - 1) x stride {} - padding {} - {} + "
          "dilation {} x (kernel {} - 1) + output_padding {} + 1",
          names[s], extent, g.input[slot], g.strides[slot], g.pad_begin[slot], pad_end[slot],
          g.dilation[slot], g.kernel[slot], output_padding[s]));
    }
    g.output[slot] = extent;
  }
  return g;
}

void CheckOperandLayout(const TensorType& operand, const std::string& layout,
                        const std::string& role) {
  if (!operand.layout.empty() && operand.layout != layout) {
    throw Error(fmt::format("{} is tagged with layout '{}' but the op expects '{}'", role,
                            operand.layout, layout));
  }
}

// The result type: shape in the data layout, layout tag only when not the default.
TensorType ResultType(const TensorType& data, const ConvGeometry& g, size_t spatial,
                      const std::string& data_layout, const std::string& default_layout) {
  Shape shape(spatial + 2);
  shape[static_cast<size_t>(g.data_axes[0])] = g.batch;
  shape[static_cast<size_t>(g.data_axes[1])] = g.out_channels;
  for (size_t s = 0; s < spatial; ++s) {
    shape[static_cast<size_t>(g.data_axes[2 + s])] = g.output[kMaxSpatial - spatial + s];
  }
  return TensorType{shape, data.dtype, data_layout == default_layout ? "" : data_layout};
}

// Axis i of the result is axis order[i] of `values` (row-major with `shape`).
std::vector<double> Permute(std::vector<double> values, const Shape& shape,
                            const std::vector<int64_t>& order) {
  size_t rank = shape.size();
  bool identity = true;
  for (size_t i = 0; i < rank; ++i) identity = identity && order[i] == static_cast<int64_t>(i);
  if (identity || values.empty()) return values;
  std::vector<int64_t> source_strides = RowMajorStrides(shape);
  std::vector<int64_t> extents(rank), strides(rank), index(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    extents[i] = shape[static_cast<size_t>(order[i])];
    strides[i] = source_strides[static_cast<size_t>(order[i])];
  }
  std::vector<double> result(values.size());
  int64_t offset = 0;
  for (double& out : result) {
    out = values[static_cast<size_t>(offset)];
    for (size_t d = rank; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < extents[d]) break;
      offset -= strides[d] * extents[d];
      index[d] = 0;
    }
  }
  return result;
}

std::vector<int64_t> Inverse(const std::vector<int64_t>& order) {
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return inverse;
}

// The positions o in [0, count) with 0 <= o * stride + offset < extent, as [first, last).
std::pair<int64_t, int64_t> ValidRange(int64_t offset, int64_t stride, int64_t extent,
                                       int64_t count) {
  int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = extent - 1 - offset < 0 ? 0 : (extent - 1 - offset) / stride + 1;
  last = std::min(last, count);
  return {std::min(first, last), last};
}

// One kernel tap along one axis: it pairs position p of the iterated tensor with position
// p * stride + offset of the other one, for p in [first, last).
struct Tap {
  int64_t offset, first, last;
};

// The taps of every kernel index along each axis. A convolution iterates output positions and
// reads input positions; a transposed one iterates input positions and writes output ones.
std::array<std::vector<Tap>, kMaxSpatial> KernelTaps(const ConvGeometry& g, bool transposed) {
  std::array<std::vector<Tap>, kMaxSpatial> taps;
  for (size_t a = 0; a < kMaxSpatial; ++a) {
    int64_t iterated = transposed ? g.input[a] : g.output[a];
    int64_t other = transposed ? g.output[a] : g.input[a];
    for (int64_t k = 0; k < g.kernel[a]; ++k) {
      int64_t offset = k * g.dilation[a] - g.pad_begin[a];
      auto [first, last] = ValidRange(offset, g.strides[a], other, iterated);
      taps[a].push_back({offset, first, last});
    }
  }
  return taps;
}

// out[n, o, p] = sum over i in o's group, k: in[n, i, p * stride + k * dilation - pad] * w[o, i, k]
// on canonical buffers.
void Convolve(const double* in, const double* weight, double* out, const ConvGeometry& g) {
  const Extents& is = g.input;
  const Extents& os = g.output;
  const std::array<std::vector<Tap>, kMaxSpatial> taps = KernelTaps(g, false);
  int64_t in_plane = is[0] * is[1] * is[2];
  int64_t out_plane = os[0] * os[1] * os[2];
  int64_t group_in = g.in_channels / g.groups;
  int64_t group_out = g.out_channels / g.groups;
  int64_t stride_d = g.strides[0], stride_h = g.strides[1], stride_w = g.strides[2];
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < g.out_channels; ++oc) {
      double* out_base = out + (n * g.out_channels + oc) * out_plane;
      int64_t first_in = oc / group_out * group_in;
      const double* w = weight + oc * group_in * g.kernel[0] * g.kernel[1] * g.kernel[2];
      for (int64_t i = 0; i < group_in; ++i) {
        const double* in_base = in + (n * g.in_channels + first_in + i) * in_plane;
        for (const Tap& td : taps[0]) {
          for (const Tap& th : taps[1]) {
            for (const Tap& tw : taps[2]) {
              double value = *w++;
              for (int64_t od = td.first; od < td.last; ++od) {
                int64_t id = od * stride_d + td.offset;
                for (int64_t oh = th.first; oh < th.last; ++oh) {
                  int64_t ih = oh * stride_h + th.offset;
                  double* out_row = out_base + (od * os[1] + oh) * os[2];
                  const double* in_row = in_base + (id * is[1] + ih) * is[2] + tw.offset;
                  for (int64_t ow = tw.first; ow < tw.last; ++ow) {
                    out_row[ow] += value * in_row[ow * stride_w];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// The adjoint of Convolve: every input element scatters into the output positions
// p * stride + k * dilation - pad; weight is [C, O/groups, k...].
void ConvolveTranspose(const double* in, const double* weight, double* out, const ConvGeometry& g) {
  const Extents& is = g.input;
  const Extents& os = g.output;
  const std::array<std::vector<Tap>, kMaxSpatial> taps = KernelTaps(g, true);
  int64_t in_plane = is[0] * is[1] * is[2];
  int64_t out_plane = os[0] * os[1] * os[2];
  int64_t group_in = g.in_channels / g.groups;
  int64_t group_out = g.out_channels / g.groups;
  int64_t stride_d = g.strides[0], stride_h = g.strides[1], stride_w = g.strides[2];
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t ic = 0; ic < g.in_channels; ++ic) {
      const double* in_base = in + (n * g.in_channels + ic) * in_plane;
      int64_t first_out = ic / group_in * group_out;
      const double* w = weight + ic * group_out * g.kernel[0] * g.kernel[1] * g.kernel[2];
      for (int64_t o = 0; o < group_out; ++o) {
        double* out_base = out + (n * g.out_channels + first_out + o) * out_plane;
        for (const Tap& td : taps[0]) {
          for (const Tap& th : taps[1]) {
            for (const Tap& tw : taps[2]) {
              double value = *w++;
              for (int64_t id = td.first; id < td.last; ++id) {
                int64_t od = id * stride_d + td.offset;
                for (int64_t ih = th.first; ih < th.last; ++ih) {
                  int64_t oh = ih * stride_h + th.offset;
                  const double* in_row = in_base + (id * is[1] + ih) * is[2];
                  double* out_row = out_base + (od * os[1] + oh) * os[2] + tw.offset;
                  for (int64_t iw = tw.first; iw < tw.last; ++iw) {
                    out_row[iw * stride_w] += value * in_row[iw];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// Runs `kernel` on the operands in canonical layout and writes the result in the data layout.
template <typename Kernel>
std::vector<Tensor> RunConvolution(const std::vector<Tensor>& inputs, const Type& output,
                                   const ConvGeometry& g, Kernel kernel) {
  const Tensor& data = inputs[0];
  const Tensor& weight = inputs[1];
  std::vector<double> in = Permute(data.ToDoubles(), data.shape(), g.data_axes);
  std::vector<double> w = Permute(weight.ToDoubles(), weight.shape(), g.kernel_axes);
  Shape canonical{g.batch, g.out_channels};
  size_t spatial = g.data_axes.size() - 2;
  for (size_t s = kMaxSpatial - spatial; s < kMaxSpatial; ++s) canonical.push_back(g.output[s]);
  std::vector<double> out(static_cast<size_t>(NumElements(canonical)), 0.0);
  kernel(in.data(), w.data(), out.data(), g);
  out = Permute(std::move(out), canonical, Inverse(g.data_axes));
  Tensor result(output.tensor());
  if (result.num_elements() != NumElements(canonical)) {
    throw Error("result type does not match the operands");
  }
  for (size_t i = 0; i < out.size(); ++i) result.SetDouble(static_cast<int64_t>(i), out[i]);
  return {result};
}

std::vector<AttrSpec> WindowAttrSpecs(size_t spatial) {
  std::vector<int64_t> ones(spatial, 1);
  std::vector<int64_t> zeros(2 * spatial, 0);
  return {
      {"strides", AttrKind::kInts, AttrValue(ones), "step of the window per spatial axis"},
      {"padding", AttrKind::kInts, AttrValue(zeros),
       "zero padding per spatial axis: all begins, then all ends"},
      {"dilation", AttrKind::kInts, AttrValue(ones), "spacing of kernel taps per spatial axis"},
      {"groups", AttrKind::kInt, AttrValue(int64_t{1}),
       "channel groups; groups == channels is a depthwise convolution"},
  };
}

// A convolution whose data and/or kernel layout splits axes into blocks (NCHW16c with
// OIHW16i16o): it computes what the convolution in the primal layouts computes, with operands
// and result in the blocked layouts. The result is in the data layout.
struct BlockedConv {
  Layout data{"NCHW"};
  Layout kernel{"OIHW"};
  std::string plain_data_layout;
  std::string plain_kernel_layout;
  Attrs plain_attrs;

  static std::optional<BlockedConv> From(const Attrs& attrs) {
    Layout d(attrs.GetString("data_layout")), k(attrs.GetString("kernel_layout"));
    auto split = [](const Layout& l) {
      return l.primal_axes().size() != static_cast<size_t>(l.rank());
    };
    if (!split(d) && !split(k)) return std::nullopt;
    BlockedConv b;
    b.data = d;
    b.kernel = k;
    b.plain_data_layout = d.primal_axes();
    b.plain_kernel_layout = k.primal_axes();
    b.plain_attrs = attrs;
    b.plain_attrs.Set("data_layout", b.plain_data_layout);
    b.plain_attrs.Set("kernel_layout", b.plain_kernel_layout);
    return b;
  }
  TensorType Unblock(const TensorType& t, bool is_data) const {
    const Layout& from = is_data ? data : kernel;
    const std::string& to = is_data ? plain_data_layout : plain_kernel_layout;
    if (t.rank() != from.rank()) {
      throw Error(fmt::format("{} must have rank {} (layout {}) but has shape {}",
                              is_data ? "data" : "weight", from.rank(), from.name(),
                              ShapeToString(t.shape)));
    }
    return TensorType{ConvertShape(t.shape, from, Layout(to)), t.dtype, ""};
  }
  TensorType Reblock(const TensorType& plain) const {
    return TensorType{ConvertShape(plain.shape, Layout(plain_data_layout), data), plain.dtype,
                      data.name()};
  }
};

OpDef ConvolutionOp(const std::string& name, const ConvSpec& spec, const std::string& doc) {
  OpDef def;
  def.name = name;
  def.doc = doc;
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.attrs = WindowAttrSpecs(spec.spatial);
  def.attrs.push_back({"data_layout", AttrKind::kString, AttrValue(spec.data_layout),
                       "axis order of data and result"});
  def.attrs.push_back(
      {"kernel_layout", AttrKind::kString, AttrValue(spec.kernel_layout), "axis order of weight"});
  def.pattern = PatternKind::kOutElementwiseFusable;
  def.infer_type = [spec](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    const TensorType& data = TensorOperand(inputs, 0, "data");
    const TensorType& weight = TensorOperand(inputs, 1, "weight");
    CheckOperandLayout(data, attrs.GetString("data_layout"), "data");
    CheckOperandLayout(weight, attrs.GetString("kernel_layout"), "weight");
    if (auto blocked = BlockedConv::From(attrs)) {
      // Blocked layouts (NCHW16c, OIHW16i16o): infer in the primal layouts, then re-block.
      TensorType plain_data = blocked->Unblock(data, true);
      TensorType plain_weight = blocked->Unblock(weight, false);
      ConvGeometry g = ForwardGeometry(plain_data, plain_weight, blocked->plain_attrs, spec);
      TensorType plain =
          ResultType(plain_data, g, spec.spatial, blocked->plain_data_layout, spec.data_layout);
      return blocked->Reblock(plain);
    }
    ConvGeometry g = ForwardGeometry(data, weight, attrs, spec);
    return ResultType(data, g, spec.spatial, attrs.GetString("data_layout"), spec.data_layout);
  };
  def.reference = [spec](const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const Type& output) {
    if (auto blocked = BlockedConv::From(attrs)) {
      std::vector<Tensor> plain{
          TransformLayout(inputs.at(0), blocked->data, Layout(blocked->plain_data_layout)),
          TransformLayout(inputs.at(1), blocked->kernel, Layout(blocked->plain_kernel_layout))};
      for (Tensor& t : plain) t = t.WithLayout("");
      ConvGeometry g =
          ForwardGeometry(plain[0].type(), plain[1].type(), blocked->plain_attrs, spec);
      TensorType plain_out = ResultType(plain[0].type(), g, spec.spatial,
                                        blocked->plain_data_layout, spec.data_layout);
      plain_out.layout = "";
      Tensor result = RunConvolution(plain, plain_out, g, Convolve).at(0);
      return std::vector<Tensor>{
          TransformLayout(result, Layout(blocked->plain_data_layout), blocked->data)
              .WithLayout(output.tensor().layout)};
    }
    ConvGeometry g = ForwardGeometry(inputs.at(0).type(), inputs.at(1).type(), attrs, spec);
    return RunConvolution(inputs, output, g, Convolve);
  };
  return def;
}

OpDef ConvolutionTransposeOp() {
  OpDef def;
  def.name = "conv2d_transpose";
  def.doc =
      "2-d transposed convolution (the adjoint of conv2d): data [N,C,H,W], weight "
      "[C,O/groups,kH,kW] -> [N,O,H',W'] with H' = (H-1)*stride - pad_begin - pad_end + "
      "dilation*(kH-1) + output_padding + 1";
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.attrs = WindowAttrSpecs(2);
  def.attrs.push_back({"output_padding", AttrKind::kInts, AttrValue(std::vector<int64_t>{0, 0}),
                       "extra extent added at the end of each spatial axis of the result"});
  def.pattern = PatternKind::kOutElementwiseFusable;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    const TensorType& data = TensorOperand(inputs, 0, "data");
    const TensorType& weight = TensorOperand(inputs, 1, "weight");
    CheckOperandLayout(data, "NCHW", "data");
    ConvGeometry g = TransposeGeometry(data, weight, attrs);
    return ResultType(data, g, 2, "NCHW", "NCHW");
  };
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs, const Type& output) {
    ConvGeometry g = TransposeGeometry(inputs.at(0).type(), inputs.at(1).type(), attrs);
    return RunConvolution(inputs, output, g, ConvolveTranspose);
  };
  return def;
}

}  // namespace

void RegisterConvolutionOps(OpRegistry& registry) {
  registry.Register(ConvolutionOp("conv1d", {1, "NCW", "OIW", {"NCW"}, {"OIW"}},
                                  "1-d convolution: data [N,C,W], weight [O,C/groups,kW] -> "
                                  "[N,O,W'], zero padding, cross-correlation as in ONNX Conv"));
  registry.Register(ConvolutionOp(
      "conv2d", {2, "NCHW", "OIHW", {"NCHW", "NHWC"}, {"OIHW", "HWIO", "OHWI"}},
      "2-d convolution: data [N,C,H,W], weight [O,C/groups,kH,kW] -> [N,O,H',W'] (or the same "
      "axes in the NHWC / HWIO / OHWI layouts), zero padding, cross-correlation as in ONNX Conv"));
  registry.Register(ConvolutionOp("conv3d", {3, "NCDHW", "OIDHW", {"NCDHW"}, {"OIDHW"}},
                                  "3-d convolution: data [N,C,D,H,W], weight "
                                  "[O,C/groups,kD,kH,kW] -> [N,O,D',H',W'], zero padding"));
  registry.Register(ConvolutionTransposeOp());
}

}  // namespace tandem::ir::ops
