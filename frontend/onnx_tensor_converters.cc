// Converters of the ONNX ops that move, reshape, combine and reduce tensors, and of the ops that
// make or pass through values (Constant, Identity, Dropout, Cast).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "frontend/onnx_convert.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::Shape;

// Normalizes a list of axes against `rank`, rejecting duplicates.
std::vector<int64_t> NormalizeAxes(NodeContext& ctx, const std::vector<int64_t>& axes,
                                   int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) out.push_back(ir::ops::NormalizeAxis(axis, rank));
  std::set<int64_t> unique(out.begin(), out.end());
  if (unique.size() != out.size()) {
    ctx.Fail(fmt::format("axes [{}] of {} repeat an axis", fmt::join(axes, ","), ctx.op_type()));
  }
  return out;
}

// Axes given by the attribute `axes` (older opsets) or by input `index` (newer ones).
std::optional<std::vector<int64_t>> AxesOperand(NodeContext& ctx, size_t index) {
  std::optional<std::vector<int64_t>> axes = ctx.OptionalInts("axes");
  if (ctx.HasInput(index)) axes = ctx.ConstantInts(index, "axes");
  return axes;
}

std::vector<Value> ConvertReshape(NodeContext& ctx) {
  Value data = ctx.Input(0);
  const Shape& in = ctx.InputType(0).shape;
  std::vector<int64_t> spec = ctx.ConstantInts(1, "shape");
  bool allow_zero = ctx.Int("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == 0 && !allow_zero) {
      if (i >= in.size()) {
        ctx.Fail(fmt::format("shape entry {} is 0 but the input has rank {}", i, in.size()));
      }
      v = in[i];
    }
    if (v == -1) {
      if (inferred >= 0) {
        ctx.Fail(fmt::format("shape [{}] has more than one -1", fmt::join(spec, ",")));
      }
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (v < 0) ctx.Fail(fmt::format("shape [{}] has a negative extent", fmt::join(spec, ",")));
    out[i] = v;
    if (__builtin_mul_overflow(known, v, &known)) ctx.Fail("the shape is too large");
  }
  int64_t total = ir::NumElements(in);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      ctx.Fail(
          fmt::format("cannot reshape {} to [{}]", ir::ShapeToString(in), fmt::join(spec, ",")));
    }
    out[static_cast<size_t>(inferred)] = total / known;
  } else if (known != total) {
    ctx.Fail(fmt::format("cannot reshape {} ({} elements) to {}", ir::ShapeToString(in), total,
                         ir::ShapeToString(out)));
  }
  return {ctx.Reshape(data, out)};
}

std::vector<Value> ConvertTranspose(NodeContext& ctx) {
  int64_t rank = ctx.InputRank(0);
  std::vector<int64_t> reverse(static_cast<size_t>(rank));
  std::iota(reverse.rbegin(), reverse.rend(), 0);
  std::vector<int64_t> perm = ctx.Ints("perm", reverse);
  std::vector<int64_t> sorted = NormalizeAxes(ctx, perm, rank);
  if (static_cast<int64_t>(perm.size()) != rank) {
    ctx.Fail(
        fmt::format("perm [{}] is not a permutation of the {} axes", fmt::join(perm, ","), rank));
  }
  perm = sorted;
  std::sort(sorted.begin(), sorted.end());
  if (sorted == perm) return {ctx.Input(0)};
  return {ctx.Call("transpose", {ctx.Input(0)}, Attrs{{"axes", perm}})};
}

std::vector<Value> ConvertFlatten(NodeContext& ctx) {
  int64_t rank = ctx.InputRank(0);
  int64_t axis = ctx.Int("axis", 1);
  if (axis < -rank || axis > rank) {
    ctx.Fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  if (axis < 0) axis += rank;
  return {ctx.Call("flatten", {ctx.Input(0)}, Attrs{{"axis", axis}})};
}

std::vector<Value> ConvertConcat(NodeContext& ctx) {
  std::optional<int64_t> axis = ctx.OptionalInt("axis");
  if (!axis) ctx.Fail("Concat needs attribute 'axis'");
  std::vector<Value> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.Input(i));
  if (inputs.empty()) ctx.Fail("Concat needs at least one input");
  if (inputs.size() == 1) return inputs;
  int64_t normalized = ir::ops::NormalizeAxis(*axis, ctx.InputRank(0));
  return {ctx.Call("concat", inputs, Attrs{{"axis", normalized}})};
}

std::vector<Value> ConvertSplit(NodeContext& ctx) {
  Value data = ctx.Input(0);
  const Shape& shape = ctx.InputType(0).shape;
  int64_t axis = ir::ops::NormalizeAxis(ctx.Int("axis", 0), ctx.InputRank(0));
  int64_t extent = shape[static_cast<size_t>(axis)];
  int64_t parts = static_cast<int64_t>(ctx.num_outputs());
  std::optional<std::vector<int64_t>> sizes = ctx.OptionalInts("split");
  std::optional<int64_t> num_outputs = ctx.OptionalInt("num_outputs");
  if (ctx.HasInput(1)) sizes = ctx.ConstantInts(1, "split");
  if (!sizes && num_outputs) {
    if (*num_outputs != parts || parts < 1) {
      ctx.Fail(fmt::format("num_outputs is {} but the node has {} outputs", *num_outputs, parts));
    }
    int64_t chunk = (extent + parts - 1) / parts;
    sizes = std::vector<int64_t>(static_cast<size_t>(parts), chunk);
    sizes->back() = extent - chunk * (parts - 1);
  }
  if (!sizes) {
    if (parts < 1 || extent % parts != 0) {
      ctx.Fail(fmt::format("cannot split extent {} evenly into {} outputs", extent, parts));
    }
    sizes = std::vector<int64_t>(static_cast<size_t>(parts), extent / parts);
  }
  int64_t total = 0;
  CheckRange(*sizes, 0, "split sizes");
  for (int64_t s : *sizes) total += s;
  if (total != extent || static_cast<int64_t>(sizes->size()) != parts) {
    ctx.Fail(
        fmt::format("split sizes [{}] must sum to the extent {} of axis {} and give one size "
                    "per output ({})",
                    fmt::join(*sizes, ","), extent, axis, parts));
  }
  if (parts == 1) return {data};
  return ctx.CallTuple("split", {data}, Attrs{{"axis", axis}, {"sections", *sizes}});
}

std::vector<Value> ConvertSlice(NodeContext& ctx) {
  Value data = ctx.Input(0);
  const Shape& shape = ctx.InputType(0).shape;
  int64_t rank = ctx.InputRank(0);
  std::vector<int64_t> starts = ctx.ConstantInts(1, "starts");
  std::vector<int64_t> ends = ctx.ConstantInts(2, "ends");
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.HasInput(3)) axes = ctx.ConstantInts(3, "axes");
  std::vector<int64_t> steps(starts.size(), 1);
  if (ctx.HasInput(4)) steps = ctx.ConstantInts(4, "steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    ctx.Fail("starts, ends, axes and steps of Slice must have the same length");
  }
  axes = NormalizeAxes(ctx, axes, rank);
  for (size_t i = 0; i < starts.size(); ++i) {
    if (steps[i] == 0) ctx.Fail("Slice steps must not be 0");
    // Bounding the indices to [-(d+1), d+1] keeps ONNX's clamping meaning and avoids the
    // INT64_MIN/INT64_MAX sentinels exporters use.
    int64_t d = shape[static_cast<size_t>(axes[i])];
    starts[i] = std::clamp(starts[i], -(d + 1), d + 1);
    ends[i] = std::clamp(ends[i], -(d + 1), d + 1);
  }
  return {ctx.Call("strided_slice", {data},
                   Attrs{{"begin", starts}, {"end", ends}, {"strides", steps}, {"axes", axes}})};
}

std::vector<Value> ConvertSqueeze(NodeContext& ctx) {
  const Shape& shape = ctx.InputType(0).shape;
  std::vector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> given = AxesOperand(ctx, 1); given && !given->empty()) {
    axes = NormalizeAxes(ctx, *given, ctx.InputRank(0));
    for (int64_t a : axes) {
      if (shape[static_cast<size_t>(a)] != 1) {
        ctx.Fail(fmt::format("cannot squeeze axis {} of extent {} ({})", a,
                             shape[static_cast<size_t>(a)], ir::ShapeToString(shape)));
      }
    }
  } else {
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1) axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return {ctx.Input(0)};
  std::sort(axes.begin(), axes.end());
  return {ctx.Call("squeeze", {ctx.Input(0)}, Attrs{{"axes", axes}})};
}

std::vector<Value> ConvertUnsqueeze(NodeContext& ctx) {
  std::optional<std::vector<int64_t>> given = AxesOperand(ctx, 1);
  if (!given || given->empty()) ctx.Fail("Unsqueeze needs axes");
  int64_t rank = ctx.InputRank(0) + static_cast<int64_t>(given->size());
  std::vector<int64_t> axes = NormalizeAxes(ctx, *given, rank);
  std::sort(axes.begin(), axes.end());
  return {ctx.Call("expand_dims", {ctx.Input(0)}, Attrs{{"axes", axes}})};
}

std::vector<Value> ConvertPad(NodeContext& ctx) {
  Value data = ctx.Input(0);
  const Shape& shape = ctx.InputType(0).shape;
  int64_t rank = ctx.InputRank(0);
  std::string mode = ctx.String("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    ctx.Fail(fmt::format("unsupported Pad mode '{}'", mode));
  }
  std::vector<int64_t> pads = ctx.Ints("pads", {});
  if (ctx.HasInput(1)) pads = ctx.ConstantInts(1, "pads");
  double value = ctx.Float("value", 0.0);
  if (ctx.HasInput(2)) value = ctx.ConstantScalar(2, "constant_value");
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.HasInput(3)) axes = NormalizeAxes(ctx, ctx.ConstantInts(3, "axes"), rank);
  if (pads.size() != 2 * axes.size()) {
    ctx.Fail(fmt::format("Pad needs {} pads but has {}", 2 * axes.size(), pads.size()));
  }
  CheckRange(pads, -kMaxAttributeValue, "pads of Pad");
  size_t r = static_cast<size_t>(rank);
  std::vector<int64_t> grow(2 * r, 0), crop(2 * r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t side = 0; side < 2; ++side) {
      int64_t p = pads[i + side * axes.size()];
      (p >= 0 ? grow : crop)[static_cast<size_t>(axes[i]) + side * r] = std::abs(p);
    }
  }
  Value out = data;
  if (std::any_of(grow.begin(), grow.end(), [](int64_t p) { return p != 0; })) {
    out = ctx.Call("pad", {data}, Attrs{{"pad_width", grow}, {"pad_value", value}, {"mode", mode}});
  }
  if (std::any_of(crop.begin(), crop.end(), [](int64_t p) { return p != 0; })) {
    // Negative pads remove elements: a slice of the padded tensor.
    std::vector<int64_t> begin(r), end(r), steps(r, 1), all(r);
    for (size_t a = 0; a < r; ++a) {
      int64_t extent = shape[a] + grow[a] + grow[a + r];
      begin[a] = crop[a];
      end[a] = extent - crop[a + r];
      all[a] = static_cast<int64_t>(a);
      if (end[a] < begin[a]) ctx.Fail("negative pads remove more than the whole axis");
    }
    out = ctx.Call("strided_slice", {out},
                   Attrs{{"begin", begin}, {"end", end}, {"strides", steps}, {"axes", all}});
  }
  return {out};
}

// ReduceSum, ReduceMean and ReduceMax.
std::vector<Value> ConvertReduce(NodeContext& ctx) {
  static const std::map<std::string, std::string> kOps = {
      {"ReduceSum", "sum"}, {"ReduceMean", "mean"}, {"ReduceMax", "max"}};
  int64_t rank = ctx.InputRank(0);
  int64_t keepdims = ctx.Int("keepdims", 1) != 0 ? 1 : 0;
  bool noop_with_empty_axes = ctx.Int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes = AxesOperand(ctx, 1).value_or(std::vector<int64_t>{});
  if (axes.empty()) {
    if (noop_with_empty_axes) return {ctx.Input(0)};
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  axes = NormalizeAxes(ctx, axes, rank);
  std::sort(axes.begin(), axes.end());
  return {ctx.Call(kOps.at(ctx.op_type()), {ctx.Input(0)},
                   Attrs{{"axes", axes}, {"keepdims", keepdims}})};
}

std::vector<Value> ConvertCast(NodeContext& ctx) {
  std::optional<int32_t> to = ctx.OptionalInt32("to");
  ctx.Ignore("saturate");  // only affects float8 targets, which are unsupported anyway
  if (!to) ctx.Fail("Cast needs attribute 'to'");
  ir::DataType dtype = DataTypeFromOnnx(*to);
  if (dtype == ctx.InputType(0).dtype) return {ctx.Input(0)};
  return {ctx.Call("cast", {ctx.Input(0)}, Attrs{{"dtype", ir::ToString(dtype)}})};
}

std::vector<Value> ConvertIdentity(NodeContext& ctx) {
  return {ctx.Input(0)};
}

std::vector<Value> ConvertDropout(NodeContext& ctx) {
  ctx.Ignore("seed");
  ctx.Ignore("ratio");  // an attribute before opset 12
  if (ctx.HasInput(2) && ctx.ConstantScalar(2, "training_mode") != 0) {
    ctx.Fail("Dropout in training mode is not supported");
  }
  std::vector<Value> out = {ctx.Input(0)};
  if (ctx.WantsOutput(1)) {  // the mask keeps everything
    const Shape& shape = ctx.InputType(0).shape;
    if (CheckedNumElements(shape) > kFoldLimit) ctx.Fail("the Dropout mask is too large");
    ir::Tensor mask(shape, ir::DataType::kBool);
    for (int64_t i = 0; i < mask.num_elements(); ++i) mask.data<uint8_t>()[i] = 1;
    out.push_back(ctx.Constant(mask));
  }
  return out;
}

std::vector<Value> ConvertConstant(NodeContext& ctx) {
  for (const char* unsupported : {"sparse_value", "value_string", "value_strings"}) {
    if (ctx.HasAttr(unsupported)) {
      ctx.Fail(fmt::format("Constant with '{}' is not supported", unsupported));
    }
  }
  int given = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    given += ctx.HasAttr(name) ? 1 : 0;
  }
  if (given != 1) ctx.Fail("Constant needs exactly one of its value attributes");
  if (ctx.HasAttr("value")) return {ctx.Constant(TensorFromProto(ctx.TensorAttr("value")))};
  if (ctx.HasAttr("value_float")) {
    return {ctx.Constant(
        ir::Tensor::FromFloats({}, {static_cast<float>(ctx.Float("value_float", 0))}))};
  }
  if (ctx.HasAttr("value_int")) {
    return {ctx.Constant(ir::Tensor::FromInt64s({}, {ctx.Int("value_int", 0)}))};
  }
  if (ctx.HasAttr("value_ints")) {
    std::vector<int64_t> v = ctx.Ints("value_ints", {});
    return {ctx.Constant(ir::Tensor::FromInt64s({static_cast<int64_t>(v.size())}, v))};
  }
  std::vector<double> v = ctx.Floats("value_floats");
  std::vector<float> f(v.begin(), v.end());
  return {ctx.Constant(ir::Tensor::FromFloats({static_cast<int64_t>(f.size())}, f))};
}

std::vector<Value> ConvertExpand(NodeContext& ctx) {
  Value data = ctx.Input(0);
  std::vector<int64_t> target = ctx.ConstantInts(1, "shape");
  Shape out = ir::ops::BroadcastShapes(ctx.InputType(0).shape, target);
  if (out == ctx.InputType(0).shape) return {data};
  // Broadcasting against zeros of the target shape expands without a dedicated op.
  return {ctx.Call("add", {data, ctx.Zeros(out, ctx.InputType(0).dtype)})};
}

}  // namespace

void AddTensorConverters(ConverterMap& converters) {
  converters["Reshape"] = ConvertReshape;
  converters["Transpose"] = ConvertTranspose;
  converters["Flatten"] = ConvertFlatten;
  converters["Concat"] = ConvertConcat;
  converters["Split"] = ConvertSplit;
  converters["Slice"] = ConvertSlice;
  converters["Squeeze"] = ConvertSqueeze;
  converters["Unsqueeze"] = ConvertUnsqueeze;
  converters["Pad"] = ConvertPad;
  converters["ReduceSum"] = ConvertReduce;
  converters["ReduceMean"] = ConvertReduce;
  converters["ReduceMax"] = ConvertReduce;
  converters["Cast"] = ConvertCast;
  converters["Identity"] = ConvertIdentity;
  converters["Dropout"] = ConvertDropout;
  converters["Constant"] = ConvertConstant;
  converters["Expand"] = ConvertExpand;
}

}  // namespace tandem::frontend::onnx_import
