// Converters of the ONNX normalizations beyond BatchNormalization and LayerNormalization:
// InstanceNormalization, GroupNormalization, LRN, and the com.microsoft ones ONNX Runtime's
// exporters emit (LayerNormalization, SkipLayerNormalization, SimplifiedLayerNormalization,
// SkipSimplifiedLayerNormalization).
//
// Each becomes existing graph ops with the same semantics: the statistics of instance and group
// normalization are those of layer_norm over the trailing axes of a (reshaped) input, with the
// per-channel scale and bias applied after it; LRN's window sum over channels is an average pool
// over a channel axis made spatial; the skip variants add their inputs first.
#include <fmt/format.h>

#include <cmath>

#include "frontend/onnx_convert.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::DataType;
using ir::Shape;

Value Filled(NodeContext& ctx, const Shape& shape, DataType dtype, double value) {
  if (CheckedNumElements(shape) > kFoldLimit) {
    ctx.Fail(fmt::format("{} would need a constant of shape {}, which is too large", ctx.op_type(),
                         ir::ShapeToString(shape)));
  }
  ir::Tensor tensor(shape, dtype);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.SetDouble(i, value);
  return ctx.Constant(std::move(tensor));
}

// The attribute 'epsilon' (default `fallback`); Fail unless it is finite and not negative.
double Epsilon(NodeContext& ctx, double fallback) {
  double epsilon = ctx.Float("epsilon", fallback);
  if (!std::isfinite(epsilon) || epsilon < 0) {
    ctx.Fail(fmt::format("attribute 'epsilon' of {} must be finite and not negative but is {}",
                         ctx.op_type(), epsilon));
  }
  return epsilon;
}

// Normalizes `x` over its axes from `axis` on to mean 0 and variance 1 (layer_norm without
// scale and bias).
Value Standardize(NodeContext& ctx, Value x, int64_t axis, double epsilon) {
  const ir::TensorType& type = ctx.TypeOf(x);
  Shape normalized(type.shape.begin() + axis, type.shape.end());
  return ctx.Call(
      "layer_norm",
      {x, Filled(ctx, normalized, type.dtype, 1.0), Filled(ctx, normalized, type.dtype, 0.0)},
      Attrs{{"axis", axis}, {"epsilon", epsilon}});
}

// A per-channel vector (input `index`, C values) shaped [C, 1, ...] to broadcast against axis 1
// of a tensor of rank `rank`.
Value ChannelVector(NodeContext& ctx, size_t index, int64_t channels, int64_t rank,
                    const std::string& role) {
  const ir::TensorType& type = ctx.InputType(index);
  if (type.num_elements() != channels || type.dtype != ctx.InputType(0).dtype) {
    ctx.Fail(fmt::format("the {} of {} must hold {} values of the input's dtype but is {}", role,
                         ctx.op_type(), channels, ir::ToString(type)));
  }
  Shape shape(static_cast<size_t>(rank - 1), 1);
  shape[0] = channels;
  return ctx.Reshape(ctx.Input(index), shape);
}

// The input's type, checked to be a float tensor with a channel axis and spatial axes after it.
const ir::TensorType& ChannelInput(NodeContext& ctx, int64_t min_rank) {
  const ir::TensorType& type = ctx.InputType(0);
  if (type.rank() < min_rank || !ir::IsFloat(type.dtype)) {
    ctx.Fail(fmt::format("{} needs a float input of rank {} or more but got {}", ctx.op_type(),
                         min_rank, ir::ToString(type)));
  }
  return type;
}

// InstanceNormalization: each (n, c) slice over the spatial axes normalized, then scaled and
// shifted per channel.
std::vector<Value> ConvertInstanceNormalization(NodeContext& ctx) {
  const ir::TensorType& type = ChannelInput(ctx, 3);
  double epsilon = Epsilon(ctx, 1e-5);
  int64_t channels = type.shape[1];
  Value y = Standardize(ctx, ctx.Input(0), 2, epsilon);
  y = ctx.Call("multiply", {y, ChannelVector(ctx, 1, channels, type.rank(), "scale")});
  return {ctx.Call("add", {y, ChannelVector(ctx, 2, channels, type.rank(), "bias")})};
}

// GroupNormalization: the channels split into num_groups groups, each (n, group) normalized over
// its channels and spatial axes, then scaled and shifted: per group before opset 21 (scale and
// bias hold num_groups values), per channel from opset 21 on (C values).
std::vector<Value> ConvertGroupNormalization(NodeContext& ctx) {
  const ir::TensorType& type = ChannelInput(ctx, 2);
  double epsilon = Epsilon(ctx, 1e-5);
  ctx.Ignore("stash_type");  // layer_norm accumulates in a wider type anyway
  std::optional<int64_t> groups = ctx.OptionalInt("num_groups");
  int64_t channels = type.shape[1];
  if (!groups || *groups < 1 || channels % *groups != 0) {
    ctx.Fail(fmt::format("GroupNormalization needs num_groups dividing the {} channels", channels));
  }
  int64_t batch = type.shape[0];
  int64_t group_size = ir::NumElements(type.shape) / std::max<int64_t>(batch * *groups, 1);
  Value grouped = ctx.Reshape(ctx.Input(0), {batch, *groups, group_size});
  Value y = Standardize(ctx, grouped, 2, epsilon);
  if (ctx.opset() < 21) {
    y = ctx.Call("multiply", {y, ChannelVector(ctx, 1, *groups, 3, "scale")});
    y = ctx.Call("add", {y, ChannelVector(ctx, 2, *groups, 3, "bias")});
    return {ctx.Reshape(y, type.shape)};
  }
  y = ctx.Reshape(y, type.shape);
  y = ctx.Call("multiply", {y, ChannelVector(ctx, 1, channels, type.rank(), "scale")});
  return {ctx.Call("add", {y, ChannelVector(ctx, 2, channels, type.rank(), "bias")})};
}

// LRN: x / (bias + alpha / size * square_sum)^beta, where square_sum sums x^2 over the channels
// c - floor((size-1)/2) .. c + ceil((size-1)/2). With the channels made the height of a
// one-channel image, that sum is size times an average pool of window (size, 1) that counts the
// zero padding.
std::vector<Value> ConvertLRN(NodeContext& ctx) {
  const ir::TensorType& type = ChannelInput(ctx, 3);
  std::optional<int64_t> size = ctx.OptionalInt("size");
  if (!size || *size < 1 || *size > kMaxAttributeValue) {
    ctx.Fail("LRN needs a positive attribute 'size'");
  }
  double alpha = ctx.Float("alpha", 1e-4), beta = ctx.Float("beta", 0.75);
  double bias = ctx.Float("bias", 1.0);
  for (double v : {alpha, beta, bias}) {
    if (!std::isfinite(v)) ctx.Fail("the attributes alpha, beta and bias of LRN must be finite");
  }
  Value x = ctx.Input(0);
  int64_t batch = type.shape[0], channels = type.shape[1];
  int64_t spatial = ir::NumElements(type.shape) / std::max<int64_t>(batch * channels, 1);
  Value square = ctx.Reshape(ctx.Call("multiply", {x, x}), {batch, 1, channels, spatial});
  int64_t before = (*size - 1) / 2, after = *size - 1 - before;
  Value average = ctx.Call("avg_pool2d", {square},
                           Attrs{{"pool_size", std::vector<int64_t>{*size, 1}},
                                 {"padding", std::vector<int64_t>{before, 0, after, 0}},
                                 {"count_include_pad", int64_t{1}}});
  Value scaled =
      ctx.Call("multiply", {ctx.Reshape(average, type.shape), ctx.Scalar(alpha, type.dtype)});
  Value base = ctx.Call("add", {scaled, ctx.Scalar(bias, type.dtype)});
  return {ctx.Call("divide", {x, ctx.Call("pow", {base, ctx.Scalar(beta, type.dtype)})})};
}

// A scale or bias operand of a last-axis normalization: `hidden` values, reshaped to [hidden].
Value HiddenVector(NodeContext& ctx, size_t index, int64_t hidden, const std::string& role) {
  const ir::TensorType& type = ctx.InputType(index);
  if (type.num_elements() != hidden || type.dtype != ctx.InputType(0).dtype) {
    ctx.Fail(fmt::format("the {} of {} must hold {} values of the input's dtype but is {}", role,
                         ctx.op_type(), hidden, ir::ToString(type)));
  }
  return ctx.Reshape(ctx.Input(index), {hidden});
}

// Fails when the node wants one of the statistics outputs (mean, inverse standard deviation).
void RejectStatisticsOutputs(NodeContext& ctx) {
  if (ctx.WantsOutput(1) || ctx.WantsOutput(2)) {
    ctx.Fail(fmt::format("the mean and inverse standard deviation outputs of {} are not supported",
                         ctx.op_type()));
  }
}

// x / sqrt(mean(x^2 over the last axis) + epsilon) * scale (RMS normalization).
Value RootMeanSquareNormalize(NodeContext& ctx, Value x, Value scale, double epsilon) {
  const ir::TensorType& type = ctx.TypeOf(x);
  int64_t last = type.rank() - 1;
  Value mean_square =
      ctx.Call("mean", {ctx.Call("multiply", {x, x})},
               Attrs{{"axes", std::vector<int64_t>{last}}, {"keepdims", int64_t{1}}});
  Value root = ctx.Call("sqrt", {ctx.Call("add", {mean_square, ctx.Scalar(epsilon, type.dtype)})});
  return ctx.Call("multiply", {ctx.Call("divide", {x, root}), scale});
}

// com.microsoft LayerNormalization and SimplifiedLayerNormalization (input, scale[, bias];
// axis, epsilon): the ONNX LayerNormalization, and its RMS variant without the mean.
std::vector<Value> ConvertMicrosoftLayerNormalization(NodeContext& ctx) {
  const ir::TensorType& type = ctx.InputType(0);
  if (type.rank() < 1 || !ir::IsFloat(type.dtype)) {
    ctx.Fail(fmt::format("{} needs a float input but got {}", ctx.op_type(), ir::ToString(type)));
  }
  int64_t axis = ir::ops::NormalizeAxis(ctx.Int("axis", -1), type.rank());
  double epsilon = Epsilon(ctx, 1e-5);
  ctx.Ignore("stash_type");
  RejectStatisticsOutputs(ctx);
  Shape normalized(type.shape.begin() + axis, type.shape.end());
  int64_t hidden = ir::NumElements(normalized);
  Value x = ctx.Input(0);
  bool simplified = ctx.op_type() == "SimplifiedLayerNormalization";
  if (simplified) {
    Shape flat(type.shape.begin(), type.shape.begin() + axis);
    flat.push_back(hidden);
    Value y = RootMeanSquareNormalize(ctx, ctx.Reshape(x, flat),
                                      HiddenVector(ctx, 1, hidden, "scale"), epsilon);
    return {ctx.Reshape(y, type.shape)};
  }
  Value scale = ctx.Reshape(HiddenVector(ctx, 1, hidden, "scale"), normalized);
  Value bias = ctx.HasInput(2) ? ctx.Reshape(HiddenVector(ctx, 2, hidden, "bias"), normalized)
                               : Filled(ctx, normalized, type.dtype, 0.0);
  return {ctx.Call("layer_norm", {x, scale, bias}, Attrs{{"axis", axis}, {"epsilon", epsilon}})};
}

// com.microsoft SkipLayerNormalization (input, skip, gamma[, beta[, bias]]) and
// SkipSimplifiedLayerNormalization (input, skip, gamma[, bias]): s = input + skip (+ bias)
// normalized over the last axis; output 3 (input_skip_bias_sum), when wanted, is s.
std::vector<Value> ConvertSkipLayerNormalization(NodeContext& ctx) {
  const ir::TensorType& type = ctx.InputType(0);
  if (type.rank() < 1 || !ir::IsFloat(type.dtype)) {
    ctx.Fail(fmt::format("{} needs a float input but got {}", ctx.op_type(), ir::ToString(type)));
  }
  bool simplified = ctx.op_type() == "SkipSimplifiedLayerNormalization";
  double epsilon = Epsilon(ctx, 1e-12);
  RejectStatisticsOutputs(ctx);
  int64_t hidden = type.shape.back();
  size_t bias_index = simplified ? 3 : 4;
  Value sum = ctx.Call("add", {ctx.Input(0), ctx.Input(1)});
  if (!ctx.TypeOf(sum).shape.empty() && ctx.TypeOf(sum).shape != type.shape) {
    ctx.Fail(fmt::format("the skip {} of {} must broadcast to the input {}",
                         ir::ToString(ctx.InputType(1)), ctx.op_type(), ir::ToString(type)));
  }
  if (ctx.HasInput(bias_index)) {
    sum = ctx.Call("add", {sum, HiddenVector(ctx, bias_index, hidden, "bias")});
  }
  Value gamma = HiddenVector(ctx, 2, hidden, "gamma");
  Value y;
  if (simplified) {
    y = RootMeanSquareNormalize(ctx, sum, gamma, epsilon);
  } else {
    Value beta = ctx.HasInput(3) ? HiddenVector(ctx, 3, hidden, "beta")
                                 : Filled(ctx, {hidden}, type.dtype, 0.0);
    y = ctx.Call("layer_norm", {sum, gamma, beta},
                 Attrs{{"axis", type.rank() - 1}, {"epsilon", epsilon}});
  }
  std::vector<Value> out = {y};
  if (ctx.WantsOutput(3)) {
    out.push_back(y);  // placeholders for the rejected statistics outputs, never named
    out.push_back(y);
    out.push_back(sum);
  }
  return out;
}

}  // namespace

void AddNormalizationConverters(ConverterMap& converters) {
  converters["InstanceNormalization"] = ConvertInstanceNormalization;
  converters["GroupNormalization"] = ConvertGroupNormalization;
  converters["LRN"] = ConvertLRN;
  const std::string microsoft = std::string(kMicrosoftDomain) + ".";
  converters[microsoft + "LayerNormalization"] = ConvertMicrosoftLayerNormalization;
  // ONNX Runtime registers SimplifiedLayerNormalization in the default domain; some exporters
  // write it in com.microsoft.
  converters["SimplifiedLayerNormalization"] = ConvertMicrosoftLayerNormalization;
  converters[microsoft + "SimplifiedLayerNormalization"] = ConvertMicrosoftLayerNormalization;
  converters[microsoft + "SkipLayerNormalization"] = ConvertSkipLayerNormalization;
  converters[microsoft + "SkipSimplifiedLayerNormalization"] = ConvertSkipLayerNormalization;
}

}  // namespace tandem::frontend::onnx_import
