// Converters of ONNX Resize and Upsample: nearest, linear and cubic interpolation with the
// coordinate transformation modes half_pixel, pytorch_half_pixel, align_corners, asymmetric and
// tf_half_pixel_for_nn (not tf_crop_and_resize), given scales or sizes known at import.
//
// Interpolation is separable, so each resized axis is done on its own:
//   1. For every output position j, the source coordinate x(j) and the taps: nearest takes one
//      index (the rounding of x by nearest_mode), linear the two around x, cubic the four, each
//      with its weight, computed at import in double exactly as ONNX's reference does. Indices
//      past the ends read the edge element (the reference pads with edge values).
//   2. Each tap is a gather along the axis with constant indices. The indices of a regular
//      resize repeat a pattern: with some period r, index j + r is index j plus a constant
//      step. The gather then is r strided slices (one per phase j mod r) interleaved by a
//      concat over a new axis and a reshape; identical phases (a nearest upsample by an
//      integer factor) become one broadcast instead. Edge padding makes indices past the ends
//      regular too.
//   3. The taps are weighted (a constant vector along the axis) and summed.
// Every step is an existing graph op; the elements each output reads and the weights are the
// reference's, so nearest results are exact and linear or cubic ones differ by rounding only.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "frontend/onnx_convert.h"
#include "ir/error.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::Shape;

// The largest period tried when decomposing a gather (step 2), and the most output positions a
// gather without such a period may have: each position is then a phase of its own.
constexpr int64_t kMaxPeriod = 256;
constexpr int64_t kMaxIrregularPositions = 1024;

struct ResizeMode {
  std::string mode = "nearest";            // nearest, linear, cubic
  std::string coordinates = "half_pixel";  // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
};

// One tap of an axis's interpolation: the source index of every output position (possibly
// past the ends) and its weight.
struct Tap {
  std::vector<int64_t> index;
  std::vector<double> weight;
};

// The source coordinate of output position j. The resized length in pytorch_half_pixel and
// align_corners is scale * in, as in ONNX's reference: the output extent rounded down only when
// scales are given.
double SourceCoordinate(NodeContext& ctx, const ResizeMode& m, int64_t j, int64_t in, double scale,
                        double resized_length) {
  double x = static_cast<double>(j);
  const std::string& c = m.coordinates;
  if (c == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (c == "pytorch_half_pixel") return resized_length > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (c == "align_corners") {
    return resized_length == 1 ? 0.0 : x * static_cast<double>(in - 1) / (resized_length - 1);
  }
  if (c == "asymmetric") return x / scale;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  ctx.Fail(
      fmt::format("{} coordinate_transformation_mode '{}' is not supported", ctx.op_type(), c));
}

std::vector<double> CubicCoefficients(double t, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// The taps of one axis resized from `in` to `out` elements (step 1).
std::vector<Tap> AxisTaps(NodeContext& ctx, const ResizeMode& m, int64_t in, int64_t out,
                          double scale, double resized_length) {
  size_t count = m.mode == "nearest" ? 1 : m.mode == "linear" ? 2 : 4;
  std::vector<Tap> taps(count);
  for (int64_t j = 0; j < out; ++j) {
    double x = SourceCoordinate(ctx, m, j, in, scale, resized_length);
    double base = std::floor(x);
    double ratio = x - base;
    auto floor_index = static_cast<int64_t>(base);
    if (m.mode == "nearest") {
      bool up = false;
      if (ratio != 0) {
        const std::string& n = m.nearest_mode;
        up = n == "round_prefer_floor"  ? ratio > 0.5
             : n == "round_prefer_ceil" ? ratio >= 0.5
             : n == "ceil"              ? true
                                        : false;
      }
      taps[0].index.push_back(floor_index + (up ? 1 : 0));
      taps[0].weight.push_back(1.0);
      continue;
    }
    std::vector<double> weights = m.mode == "linear" ? std::vector<double>{1 - ratio, ratio}
                                                     : CubicCoefficients(ratio, m.cubic_a);
    int64_t first = floor_index - (m.mode == "cubic" ? 1 : 0);
    if (m.exclude_outside) {
      double sum = 0;
      for (size_t t = 0; t < count; ++t) {
        int64_t i = first + static_cast<int64_t>(t);
        if (i < 0 || i >= in) weights[t] = 0;
        sum += weights[t];
      }
      if (sum != 0) {
        for (double& w : weights) w /= sum;
      }
    }
    for (size_t t = 0; t < count; ++t) {
      taps[t].index.push_back(first + static_cast<int64_t>(t));
      taps[t].weight.push_back(weights[t]);
    }
  }
  return taps;
}

// One phase of a gather: the elements begin, begin + step, ... (count of them).
struct Phase {
  int64_t begin = 0, step = 0;
};

// The smallest period r (with its phases) such that index[j + r] = index[j] + step of j's phase
// for every j; without one up to kMaxPeriod, one phase per position when there are at most
// kMaxIrregularPositions of them, else none.
std::vector<Phase> FindPhases(const std::vector<int64_t>& index) {
  int64_t n = static_cast<int64_t>(index.size());
  for (int64_t r = 1; r <= std::min(n, kMaxPeriod); ++r) {
    std::vector<Phase> phases;
    bool regular = true;
    for (int64_t p = 0; p < r && regular; ++p) {
      Phase phase{index[static_cast<size_t>(p)], 0};
      if (p + r < n) phase.step = index[static_cast<size_t>(p + r)] - phase.begin;
      for (int64_t j = p + r; j < n && regular; j += r) {
        regular = phase.step >= 0 &&
                  index[static_cast<size_t>(j)] - index[static_cast<size_t>(j - r)] == phase.step;
      }
      phases.push_back(phase);
    }
    if (regular) return phases;
  }
  if (n > kMaxIrregularPositions) return {};
  std::vector<Phase> phases;
  for (int64_t i : index) phases.push_back(Phase{i, 0});
  return phases;
}

Shape WithExtent(Shape shape, int64_t axis, int64_t extent) {
  shape[static_cast<size_t>(axis)] = extent;
  return shape;
}

Value SliceAxis(NodeContext& ctx, Value x, int64_t axis, int64_t begin, int64_t end, int64_t step) {
  const Shape& shape = ctx.TypeOf(x).shape;
  if (begin == 0 && end == shape[static_cast<size_t>(axis)] && step == 1) return x;
  return ctx.Call("strided_slice", {x},
                  Attrs{{"begin", std::vector<int64_t>{begin}},
                        {"end", std::vector<int64_t>{end}},
                        {"strides", std::vector<int64_t>{step}},
                        {"axes", std::vector<int64_t>{axis}}});
}

// x gathered along `axis` at the constant `index` (step 2).
Value GatherAxis(NodeContext& ctx, Value x, int64_t axis, std::vector<int64_t> index) {
  Shape shape = ctx.TypeOf(x).shape;
  auto a = static_cast<size_t>(axis);
  int64_t n = static_cast<int64_t>(index.size());
  std::vector<Phase> phases = FindPhases(index);
  if (phases.empty()) {
    ctx.Fail(
        fmt::format("{}: the {} source positions of axis {} repeat no pattern of period {} or "
                    "less, which is not supported beyond {} positions",
                    ctx.op_type(), n, axis, kMaxPeriod, kMaxIrregularPositions));
  }
  auto r = static_cast<int64_t>(phases.size());
  int64_t count = (n + r - 1) / r;  // per phase; the last period may be cut short
  // Edge padding so that every index of every phase lies inside.
  int64_t low = 0, high = shape[a] - 1;
  for (const Phase& p : phases) {
    low = std::min(low, p.begin);
    high = std::max(high, p.begin + p.step * (count - 1));
  }
  if (low < 0 || high >= shape[a]) {
    std::vector<int64_t> pads(2 * shape.size(), 0);
    pads[a] = -low;
    pads[a + shape.size()] = high - (shape[a] - 1);
    x = ctx.Call("pad", {x}, Attrs{{"pad_width", pads}, {"mode", std::string("edge")}});
    for (Phase& p : phases) p.begin -= low;
    shape = ctx.TypeOf(x).shape;
  }
  auto phase_values = [&](const Phase& p) {
    if (p.step > 0)
      return SliceAxis(ctx, x, axis, p.begin, p.begin + p.step * (count - 1) + 1, p.step);
    Value one = SliceAxis(ctx, x, axis, p.begin, p.begin + 1, 1);
    if (count == 1) return one;
    return ctx.Call("add", {one, ctx.Zeros(WithExtent(shape, axis, count), ctx.TypeOf(x).dtype)});
  };
  bool identical = std::all_of(phases.begin(), phases.end(), [&](const Phase& p) {
    return p.begin == phases[0].begin && p.step == phases[0].step;
  });
  Shape split = WithExtent(shape, axis, count);
  split.insert(split.begin() + axis + 1, 1);
  Value y;
  if (r == 1) {
    y = phase_values(phases[0]);
  } else if (identical) {  // every phase the same: one broadcast over the new axis
    Shape grown = split;
    grown[a + 1] = r;
    y = ctx.Call("add", {ctx.Reshape(phase_values(phases[0]), split),
                         ctx.Zeros(grown, ctx.TypeOf(x).dtype)});
  } else {
    std::vector<Value> parts;
    for (const Phase& p : phases) parts.push_back(ctx.Reshape(phase_values(p), split));
    y = ctx.Call("concat", parts, Attrs{{"axis", axis + 1}});
  }
  y = ctx.Reshape(y, WithExtent(shape, axis, count * r));
  return SliceAxis(ctx, y, axis, 0, n, 1);
}

// x resized along `axis` to `out` elements (steps 1 to 3).
Value ResizeAxis(NodeContext& ctx, const ResizeMode& m, Value x, int64_t axis, int64_t out,
                 double scale, double resized_length) {
  const ir::TensorType& type = ctx.TypeOf(x);
  int64_t in = type.shape[static_cast<size_t>(axis)];
  Value sum;
  bool has_sum = false;
  for (const Tap& tap : AxisTaps(ctx, m, in, out, scale, resized_length)) {
    if (std::all_of(tap.weight.begin(), tap.weight.end(), [](double w) { return w == 0; })) {
      continue;
    }
    Value term = GatherAxis(ctx, x, axis, tap.index);
    if (!std::all_of(tap.weight.begin(), tap.weight.end(), [](double w) { return w == 1; })) {
      Shape weight_shape(static_cast<size_t>(type.rank() - axis), 1);
      weight_shape[0] = out;
      ir::Tensor weights(weight_shape, type.dtype);
      for (int64_t j = 0; j < out; ++j) weights.SetDouble(j, tap.weight[static_cast<size_t>(j)]);
      term = ctx.Call("multiply", {term, ctx.Constant(std::move(weights))});
    }
    sum = has_sum ? ctx.Call("add", {sum, term}) : term;
    has_sum = true;
  }
  if (!has_sum) ctx.Fail(fmt::format("{}: every interpolation weight is 0", ctx.op_type()));
  return sum;
}

// The scales operand, or nullopt when the node gives none (an empty tensor counts as none).
std::optional<std::vector<double>> Scales(NodeContext& ctx, size_t index) {
  if (!ctx.HasInput(index)) return std::nullopt;
  const ir::Tensor& tensor = ctx.ConstantInput(index, "scales");
  if (tensor.num_elements() == 0) return std::nullopt;
  return tensor.ToDoubles();
}

// Resize (opset 10: X, scales; 11 on: X, roi, scales, sizes) and Upsample (X, scales).
std::vector<Value> ConvertResize(NodeContext& ctx) {
  const ir::TensorType& type = ctx.InputType(0);
  bool legacy = ctx.op_type() == "Upsample" || ctx.opset() < 11;
  ResizeMode m;
  m.mode = ctx.String("mode", "nearest");
  if (m.mode == "bilinear") m.mode = "linear";  // Upsample-7's name
  if (legacy) {  // Upsample and Resize-10: asymmetric coordinates, nearest rounds down
    m.coordinates = "asymmetric";
    m.nearest_mode = "floor";
  } else {
    m.coordinates = ctx.String("coordinate_transformation_mode", "half_pixel");
    m.nearest_mode = ctx.String("nearest_mode", "round_prefer_floor");
    m.cubic_a = ctx.Float("cubic_coeff_a", -0.75);
    m.exclude_outside = ctx.Int("exclude_outside", 0) != 0;
    ctx.Ignore("extrapolation_value");  // used by tf_crop_and_resize only, which fails below
    if (ctx.Int("antialias", 0) != 0) ctx.Fail("Resize with antialias=1 is not supported");
    if (ctx.String("keep_aspect_ratio_policy", "stretch") != "stretch") {
      ctx.Fail("Resize with a keep_aspect_ratio_policy other than 'stretch' is not supported");
    }
  }
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") {
    ctx.Fail(
        fmt::format("{} mode must be nearest, linear or cubic but is '{}'", ctx.op_type(), m.mode));
  }
  const std::string& n = m.nearest_mode;
  if (n != "round_prefer_floor" && n != "round_prefer_ceil" && n != "floor" && n != "ceil") {
    ctx.Fail(
        fmt::format("{} nearest_mode '{}' is not one of round_prefer_floor, "
                    "round_prefer_ceil, floor and ceil",
                    ctx.op_type(), n));
  }
  if (m.mode != "nearest" && !ir::IsFloat(type.dtype)) {
    ctx.Fail(fmt::format("{} {} needs a float input but got {}", ctx.op_type(), m.mode,
                         ir::ToString(type)));
  }
  int64_t rank = type.rank();
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) axes[static_cast<size_t>(i)] = i;
  if (std::optional<std::vector<int64_t>> given = ctx.OptionalInts("axes")) {
    axes.clear();
    for (int64_t axis : *given) axes.push_back(axis < 0 ? axis + rank : axis);
  }
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.op_type() == "Upsample" && ctx.opset() < 9) {
    std::vector<double> s = ctx.Floats("scales");
    if (!s.empty()) scales = s;
  } else {
    scales = Scales(ctx, ctx.opset() < 11 || ctx.op_type() == "Upsample" ? 1 : 2);
    if (!legacy && ctx.HasInput(3)) sizes = ctx.ConstantInts(3, "sizes");
  }
  if (scales.has_value() == sizes.has_value()) {
    ctx.Fail(fmt::format("{} needs exactly one of scales and sizes", ctx.op_type()));
  }
  size_t given = scales ? scales->size() : sizes->size();
  if (given != axes.size()) {
    ctx.Fail(
        fmt::format("{} gives {} scales or sizes for {} axes", ctx.op_type(), given, axes.size()));
  }
  Value x = ctx.Input(0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i];
    if (axis < 0 || axis >= rank)
      ctx.Fail(fmt::format("{} axis {} is out of range", ctx.op_type(), axis));
    int64_t in = type.shape[static_cast<size_t>(axis)];
    double scale = 0, resized_length = 0;
    int64_t out = 0;
    if (scales) {
      scale = (*scales)[i];
      if (!(scale > 0) || !std::isfinite(scale)) {
        ctx.Fail(
            fmt::format("{} scale {} of axis {} must be positive", ctx.op_type(), scale, axis));
      }
      resized_length = static_cast<double>(in) * scale;
      out = static_cast<int64_t>(std::floor(resized_length));
    } else {
      out = (*sizes)[i];
      if (in == 0) ctx.Fail(fmt::format("{} cannot resize the empty axis {}", ctx.op_type(), axis));
      scale = static_cast<double>(out) / static_cast<double>(in);
      resized_length = static_cast<double>(out);
    }
    CheckRange({out}, 1, fmt::format("the output extent of axis {} of {}", axis, ctx.op_type()));
    if (in == 0) ctx.Fail(fmt::format("{} cannot resize the empty axis {}", ctx.op_type(), axis));
    CheckedNumElements(WithExtent(ctx.TypeOf(x).shape, axis, out));
    x = ResizeAxis(ctx, m, x, axis, out, scale, resized_length);
  }
  return {x};  // the roi input matters to tf_crop_and_resize only
}

}  // namespace

void AddResizeConverters(ConverterMap& converters) {
  converters["Resize"] = ConvertResize;
  converters["Upsample"] = ConvertResize;
}

}  // namespace tandem::frontend::onnx_import
