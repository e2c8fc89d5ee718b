// Converters of the ONNX neural-network ops: convolution, dense algebra, normalization, pooling
// and elementwise math.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "frontend/onnx_convert.h"
#include "ir/checked_math.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::DataType;
using ir::Shape;

// A per-spatial-axis int list attribute with `count` entries (default `fallback` each).
std::vector<int64_t> SpatialAttr(NodeContext& ctx, const std::string& name, size_t count,
                                 int64_t fallback) {
  std::vector<int64_t> values = ctx.Ints(name, std::vector<int64_t>(count, fallback));
  if (values.size() != count) {
    ctx.Fail(
        fmt::format("attribute '{}' of {} must have {} entries (one per spatial axis) but "
                    "has {}",
                    name, ctx.op_type(), count, values.size()));
  }
  CheckRange(values, 1, fmt::format("attribute '{}' of {}", name, ctx.op_type()));
  return values;
}

// Explicit padding (all begins, then all ends) of a sliding window from the attributes `pads`
// and `auto_pad`. SAME_* pads so that the output extent is ceil(input / stride), the odd unit at
// the end (SAME_UPPER) or at the beginning (SAME_LOWER).
std::vector<int64_t> WindowPadding(NodeContext& ctx, const Shape& spatial,
                                   const std::vector<int64_t>& kernel,
                                   const std::vector<int64_t>& strides,
                                   const std::vector<int64_t>& dilations) {
  size_t n = spatial.size();
  std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  std::vector<int64_t> pads = ctx.Ints("pads", std::vector<int64_t>(2 * n, 0));
  if (auto_pad == "NOTSET") {
    if (pads.size() != 2 * n) {
      ctx.Fail(fmt::format("attribute 'pads' of {} must have {} entries but has {}", ctx.op_type(),
                           2 * n, pads.size()));
    }
    CheckRange(pads, 0, fmt::format("attribute 'pads' of {}", ctx.op_type()));
    return pads;
  }
  if (auto_pad == "VALID") return std::vector<int64_t>(2 * n, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    ctx.Fail(fmt::format("unsupported auto_pad value '{}' of {}", auto_pad, ctx.op_type()));
  }
  CheckRange(spatial, 0, "the input's spatial extents");
  CheckRange(kernel, 0, "the kernel extents");
  std::vector<int64_t> out(2 * n);
  for (size_t i = 0; i < n; ++i) {
    std::string what =
        fmt::format("the {} padding of {} (strides, dilations)", auto_pad, ctx.op_type());
    int64_t output = spatial[i] / strides[i] + (spatial[i] % strides[i] != 0 ? 1 : 0);
    int64_t extent = ir::CheckedAdd(ir::CheckedMul(kernel[i] - 1, dilations[i], what), 1, what);
    int64_t total = std::max<int64_t>(
        0, ir::CheckedAdd(ir::CheckedMul(output - 1, strides[i], what), extent, what) - spatial[i]);
    int64_t small = total / 2;
    out[i] = auto_pad == "SAME_UPPER" ? small : total - small;
    out[i + n] = total - out[i];
  }
  return out;
}

Shape SpatialExtents(const Shape& shape) {
  return Shape(shape.begin() + 2, shape.end());
}

// Adds a per-channel bias [C] to a value [N, C, ...].
Value AddChannelBias(NodeContext& ctx, Value data, Value bias) {
  int64_t rank = ctx.TypeOf(data).rank();
  Shape shape(static_cast<size_t>(rank - 1), 1);
  shape[0] = ctx.TypeOf(bias).num_elements();
  return ctx.Call("add", {data, ctx.Reshape(bias, shape)});
}

std::vector<Value> ConvertConv(NodeContext& ctx) {
  Value data = ctx.Input(0), weight = ctx.Input(1);
  const Shape& shape = ctx.InputType(0).shape;
  int64_t rank = ctx.InputRank(0);
  if (rank < 3 || rank > 5) {
    ctx.Fail(fmt::format("Conv input must have rank 3, 4 or 5 but is {}",
                         ir::ToString(ctx.InputType(0))));
  }
  if (ctx.InputRank(1) != rank) {
    ctx.Fail(fmt::format("Conv weight {} must have the rank of the input {}",
                         ir::ToString(ctx.InputType(1)), ir::ToString(ctx.InputType(0))));
  }
  size_t n = static_cast<size_t>(rank - 2);
  std::vector<int64_t> kernel = SpatialExtents(ctx.InputType(1).shape);
  if (auto declared = ctx.OptionalInts("kernel_shape"); declared && *declared != kernel) {
    ctx.Fail(fmt::format("kernel_shape [{}] differs from the weight's spatial extents [{}]",
                         fmt::join(*declared, ","), fmt::join(kernel, ",")));
  }
  std::vector<int64_t> strides = SpatialAttr(ctx, "strides", n, 1);
  std::vector<int64_t> dilations = SpatialAttr(ctx, "dilations", n, 1);
  std::vector<int64_t> padding =
      WindowPadding(ctx, SpatialExtents(shape), kernel, strides, dilations);
  int64_t groups = ctx.Int("group", 1);
  static const char* kOps[] = {"conv1d", "conv2d", "conv3d"};
  Value out = ctx.Call(
      kOps[n - 1], {data, weight},
      Attrs{
          {"strides", strides}, {"padding", padding}, {"dilation", dilations}, {"groups", groups}});
  if (ctx.HasInput(2)) out = AddChannelBias(ctx, out, ctx.Input(2));
  return {out};
}

std::vector<Value> ConvertConvTranspose(NodeContext& ctx) {
  Value data = ctx.Input(0), weight = ctx.Input(1);
  int64_t rank = ctx.InputRank(0);
  if (rank != 3 && rank != 4) {
    ctx.Fail(fmt::format("ConvTranspose supports 1-D and 2-D inputs, not {}",
                         ir::ToString(ctx.InputType(0))));
  }
  if (ctx.InputRank(1) != rank) ctx.Fail("ConvTranspose weight must have the rank of the input");
  size_t n = static_cast<size_t>(rank - 2);
  Shape spatial = SpatialExtents(ctx.InputType(0).shape);
  std::vector<int64_t> kernel = SpatialExtents(ctx.InputType(1).shape);
  if (auto declared = ctx.OptionalInts("kernel_shape"); declared && *declared != kernel) {
    ctx.Fail("kernel_shape differs from the weight's spatial extents");
  }
  CheckRange(spatial, 0, "the input's spatial extents");
  CheckRange(kernel, 0, "the kernel extents");
  std::vector<int64_t> strides = SpatialAttr(ctx, "strides", n, 1);
  std::vector<int64_t> dilations = SpatialAttr(ctx, "dilations", n, 1);
  std::vector<int64_t> output_padding = ctx.Ints("output_padding", std::vector<int64_t>(n, 0));
  if (output_padding.size() != n) ctx.Fail("output_padding needs one entry per spatial axis");
  CheckRange(output_padding, 0, "attribute 'output_padding' of ConvTranspose");
  std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  std::vector<int64_t> pads = ctx.Ints("pads", std::vector<int64_t>(2 * n, 0));
  CheckRange(pads, 0, "attribute 'pads' of ConvTranspose");
  std::optional<std::vector<int64_t>> output_shape = ctx.OptionalInts("output_shape");
  if (output_shape) CheckRange(*output_shape, 0, "attribute 'output_shape' of ConvTranspose");
  if (output_shape && output_shape->size() == n + 2) {
    output_shape = std::vector<int64_t>(output_shape->begin() + 2, output_shape->end());
  }
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (!output_shape) {
      output_shape = std::vector<int64_t>(n);
      for (size_t i = 0; i < n; ++i) (*output_shape)[i] = spatial[i] * strides[i];
    }
  } else if (auto_pad == "VALID") {
    pads.assign(2 * n, 0);
  } else if (auto_pad != "NOTSET") {
    ctx.Fail(fmt::format("unsupported auto_pad value '{}' of ConvTranspose", auto_pad));
  }
  if (output_shape) {
    if (output_shape->size() != n) ctx.Fail("output_shape needs one entry per spatial axis");
    pads.assign(2 * n, 0);
    for (size_t i = 0; i < n; ++i) {
      int64_t total = strides[i] * (spatial[i] - 1) + output_padding[i] +
                      (kernel[i] - 1) * dilations[i] + 1 - (*output_shape)[i];
      if (total < 0) ctx.Fail("output_shape is larger than ConvTranspose can produce");
      bool upper = auto_pad == "SAME_UPPER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[i + n] = total - pads[i];
    }
  }
  if (pads.size() != 2 * n) ctx.Fail("attribute 'pads' needs two entries per spatial axis");
  int64_t groups = ctx.Int("group", 1);
  if (n == 1) {  // a 1-D transposed convolution is a 2-D one over a height of 1
    const Shape& in = ctx.InputType(0).shape;
    const Shape& w = ctx.InputType(1).shape;
    data = ctx.Reshape(data, {in[0], in[1], 1, in[2]});
    weight = ctx.Reshape(weight, {w[0], w[1], 1, w[2]});
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    output_padding.insert(output_padding.begin(), 0);
    pads = {0, pads[0], 0, pads[1]};
  }
  Value out = ctx.Call("conv2d_transpose", {data, weight},
                       Attrs{{"strides", strides},
                             {"padding", pads},
                             {"dilation", dilations},
                             {"groups", groups},
                             {"output_padding", output_padding}});
  if (n == 1) {
    const Shape& s = ctx.TypeOf(out).shape;
    out = ctx.Reshape(out, {s[0], s[1], s[3]});
  }
  if (ctx.HasInput(2)) out = AddChannelBias(ctx, out, ctx.Input(2));
  return {out};
}

Value Transpose2d(NodeContext& ctx, Value value) {
  return ctx.Call("transpose", {value}, Attrs{{"axes", std::vector<int64_t>{1, 0}}});
}

std::vector<Value> ConvertGemm(NodeContext& ctx) {
  Value a = ctx.Input(0), b = ctx.Input(1);
  double alpha = ctx.Float("alpha", 1.0), beta = ctx.Float("beta", 1.0);
  bool trans_a = ctx.Int("transA", 0) != 0, trans_b = ctx.Int("transB", 0) != 0;
  if (ctx.InputRank(0) != 2 || ctx.InputRank(1) != 2) {
    ctx.Fail(fmt::format("Gemm needs 2-D operands but got {} and {}",
                         ir::ToString(ctx.InputType(0)), ir::ToString(ctx.InputType(1))));
  }
  DataType dtype = ctx.InputType(0).dtype;
  if (trans_a) a = Transpose2d(ctx, a);
  Value out;
  if (ctx.values().IsConstant(b)) {
    // dense takes its weight as [N, K]: that is B when transB is set.
    Value weight = trans_b ? b : Transpose2d(ctx, b);
    if (alpha != 1.0) weight = ctx.Call("multiply", {weight, ctx.Scalar(alpha, dtype)});
    out = ctx.Call("dense", {a, weight});
  } else {
    out = ctx.Call("matmul", {a, trans_b ? Transpose2d(ctx, b) : b});
    if (alpha != 1.0) out = ctx.Call("multiply", {out, ctx.Scalar(alpha, dtype)});
  }
  if (ctx.HasInput(2) && beta != 0.0) {
    Value c = ctx.Input(2);
    if (beta != 1.0) c = ctx.Call("multiply", {c, ctx.Scalar(beta, dtype)});
    out = ctx.Call("add", {out, c});
  }
  return {out};
}

std::vector<Value> ConvertMatMul(NodeContext& ctx) {
  Value a = ctx.Input(0), b = ctx.Input(1);
  // A constant 2-D right operand is a linear layer: dense with the weight laid out [N, K].
  if (ctx.values().IsConstant(b) && ctx.InputRank(1) == 2 && ctx.InputRank(0) >= 2 &&
      !ctx.values().IsConstant(a)) {
    return {ctx.Call("dense", {a, Transpose2d(ctx, b)})};
  }
  return {ctx.Call("matmul", {a, b})};
}

template <const char* kOp>
std::vector<Value> ConvertBinary(NodeContext& ctx) {
  return {ctx.Call(kOp, {ctx.Input(0), ctx.Input(1)})};
}

std::vector<Value> ConvertPow(NodeContext& ctx) {
  Value base = ctx.Input(0), exponent = ctx.Input(1);
  DataType dtype = ctx.InputType(0).dtype;
  // ONNX allows an exponent of another type; the registry's pow takes one dtype.
  if (ctx.InputType(1).dtype != dtype) {
    exponent = ctx.Call("cast", {exponent}, Attrs{{"dtype", ir::ToString(dtype)}});
  }
  return {ctx.Call("pow", {base, exponent})};
}

std::vector<Value> ConvertNeg(NodeContext& ctx) {
  return {ctx.Call("multiply", {ctx.Input(0), ctx.Scalar(-1.0, ctx.InputType(0).dtype)})};
}

std::vector<Value> ConvertReciprocal(NodeContext& ctx) {
  return {ctx.Call("divide", {ctx.Scalar(1.0, ctx.InputType(0).dtype), ctx.Input(0)})};
}

std::vector<Value> ConvertGelu(NodeContext& ctx) {
  std::string approximate = ctx.String("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    ctx.Fail(fmt::format("unsupported approximate value '{}' of Gelu", approximate));
  }
  return {ctx.Call("gelu", {ctx.Input(0)}, Attrs{{"approximate", approximate}})};
}

std::vector<Value> ConvertClip(NodeContext& ctx) {
  double low = ctx.Float("min", -std::numeric_limits<double>::infinity());
  double high = ctx.Float("max", std::numeric_limits<double>::infinity());
  if (ctx.HasInput(1)) low = ctx.ConstantScalar(1, "min");
  if (ctx.HasInput(2)) high = ctx.ConstantScalar(2, "max");
  return {ctx.Call("clip", {ctx.Input(0)}, Attrs{{"min", low}, {"max", high}})};
}

std::vector<Value> ConvertBatchNormalization(NodeContext& ctx) {
  double epsilon = ctx.Float("epsilon", 1e-5);
  ctx.Ignore("momentum");  // only used in training
  if (ctx.Int("training_mode", 0) != 0) {
    ctx.Fail("BatchNormalization in training mode is not supported");
  }
  if (ctx.Int("spatial", 1) != 1) ctx.Fail("BatchNormalization with spatial=0 is not supported");
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (ctx.WantsOutput(i)) {
      ctx.Fail("the training outputs of BatchNormalization are not supported");
    }
  }
  if (ctx.InputRank(0) < 2) ctx.Fail("BatchNormalization needs an input of rank 2 or more");
  std::vector<Value> operands;
  for (size_t i = 0; i < 5; ++i) operands.push_back(ctx.Input(i));
  return {ctx.Call("batch_norm", operands, Attrs{{"epsilon", epsilon}, {"axis", int64_t{1}}})};
}

std::vector<Value> ConvertLayerNormalization(NodeContext& ctx) {
  Value data = ctx.Input(0), scale = ctx.Input(1);
  const ir::TensorType& type = ctx.InputType(0);
  int64_t axis = ir::ops::NormalizeAxis(ctx.Int("axis", -1), type.rank());
  double epsilon = ctx.Float("epsilon", 1e-5);
  ctx.Ignore("stash_type");  // the reference computes in double anyway
  if (ctx.WantsOutput(1) || ctx.WantsOutput(2)) {
    ctx.Fail("the Mean and InvStdDev outputs of LayerNormalization are not supported");
  }
  Shape normalized(type.shape.begin() + axis, type.shape.end());
  // ONNX lets scale and bias broadcast; layer_norm wants the normalized shape exactly.
  auto fit = [&](Value v) {
    if (ctx.TypeOf(v).num_elements() == ir::NumElements(normalized)) {
      return ctx.Reshape(v, normalized);
    }
    return ctx.Call("add", {v, ctx.Zeros(normalized, ctx.TypeOf(v).dtype)});
  };
  Value bias = ctx.HasInput(2) ? ctx.Input(2) : ctx.Zeros(normalized, type.dtype);
  return {ctx.Call("layer_norm", {data, fit(scale), fit(bias)},
                   Attrs{{"axis", axis}, {"epsilon", epsilon}})};
}

std::vector<Value> ConvertSoftmax(NodeContext& ctx) {
  Value data = ctx.Input(0);
  const Shape shape = ctx.InputType(0).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = ir::ops::NormalizeAxis(ctx.Int("axis", ctx.opset() >= 13 ? -1 : 1),
                                        std::max<int64_t>(rank, 1));
  if (ctx.opset() >= 13 || axis == rank - 1) {
    return {ctx.Call("softmax", {data}, Attrs{{"axis", axis}})};
  }
  // Before opset 13, Softmax normalizes over all axes from `axis` on, as one flattened axis.
  int64_t outer = ir::NumElements(Shape(shape.begin(), shape.begin() + axis));
  Value flat = ctx.Reshape(data, {outer, ir::NumElements(shape) / std::max<int64_t>(outer, 1)});
  return {ctx.Reshape(ctx.Call("softmax", {flat}, Attrs{{"axis", int64_t{-1}}}), shape)};
}

// MaxPool and AveragePool (2-D; 1-D ones run as 2-D over a height of 1).
std::vector<Value> ConvertPool(NodeContext& ctx) {
  bool is_max = ctx.op_type() == "MaxPool";
  Value data = ctx.Input(0);
  Shape shape = ctx.InputType(0).shape;
  int64_t rank = ctx.InputRank(0);
  if (rank != 3 && rank != 4) {
    ctx.Fail(fmt::format("{} supports 1-D and 2-D pooling, not an input {}", ctx.op_type(),
                         ir::ToString(ctx.InputType(0))));
  }
  size_t n = static_cast<size_t>(rank - 2);
  std::optional<std::vector<int64_t>> kernel = ctx.OptionalInts("kernel_shape");
  if (!kernel || kernel->size() != n) {
    ctx.Fail(fmt::format("{} needs kernel_shape with {} entries", ctx.op_type(), n));
  }
  CheckRange(*kernel, 1, fmt::format("attribute 'kernel_shape' of {}", ctx.op_type()));
  std::vector<int64_t> strides = SpatialAttr(ctx, "strides", n, 1);
  std::vector<int64_t> dilations = SpatialAttr(ctx, "dilations", n, 1);
  std::vector<int64_t> padding =
      WindowPadding(ctx, SpatialExtents(shape), *kernel, strides, dilations);
  int64_t ceil_mode = ctx.Int("ceil_mode", 0);
  Attrs attrs;
  if (is_max) {
    if (ctx.Int("storage_order", 0) != 0) ctx.Fail("MaxPool with storage_order=1 is not supported");
    if (ctx.WantsOutput(1)) ctx.Fail("the Indices output of MaxPool is not supported");
  } else {
    attrs.Set("count_include_pad", ctx.Int("count_include_pad", 0));
  }
  if (n == 1) {
    data = ctx.Reshape(data, {shape[0], shape[1], 1, shape[2]});
    kernel->insert(kernel->begin(), 1);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    padding = {0, padding[0], 0, padding[1]};
  }
  attrs.Set("pool_size", *kernel);
  attrs.Set("strides", strides);
  attrs.Set("padding", padding);
  attrs.Set("dilation", dilations);
  attrs.Set("ceil_mode", ceil_mode);
  Value out = ctx.Call(is_max ? "max_pool2d" : "avg_pool2d", {data}, attrs);
  if (n == 1) {
    const Shape& s = ctx.TypeOf(out).shape;
    out = ctx.Reshape(out, {s[0], s[1], s[3]});
  }
  return {out};
}

// GlobalAveragePool and GlobalMaxPool: a reduction over every spatial axis, keeping them.
std::vector<Value> ConvertGlobalPool(NodeContext& ctx) {
  Value data = ctx.Input(0);
  int64_t rank = ctx.InputRank(0);
  if (rank < 3) ctx.Fail(fmt::format("{} needs an input of rank 3 or more", ctx.op_type()));
  bool is_average = ctx.op_type() == "GlobalAveragePool";
  if (is_average && rank == 4) return {ctx.Call("global_avg_pool2d", {data})};
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
  return {ctx.Call(is_average ? "mean" : "max", {data},
                   Attrs{{"axes", axes}, {"keepdims", int64_t{1}}})};
}

constexpr char kRelu[] = "relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp",
               kSqrt[] = "sqrt", kErf[] = "erf", kAdd[] = "add", kSubtract[] = "subtract",
               kMultiply[] = "multiply", kDivide[] = "divide";

}  // namespace

void AddNeuralConverters(ConverterMap& converters) {
  converters["Conv"] = ConvertConv;
  converters["ConvTranspose"] = ConvertConvTranspose;
  converters["Gemm"] = ConvertGemm;
  converters["MatMul"] = ConvertMatMul;
  converters["Relu"] = ConvertUnary<kRelu>;
  converters["Sigmoid"] = ConvertUnary<kSigmoid>;
  converters["Tanh"] = ConvertUnary<kTanh>;
  converters["Exp"] = ConvertUnary<kExp>;
  converters["Sqrt"] = ConvertUnary<kSqrt>;
  converters["Erf"] = ConvertUnary<kErf>;
  converters["Add"] = ConvertBinary<kAdd>;
  converters["Sub"] = ConvertBinary<kSubtract>;
  converters["Mul"] = ConvertBinary<kMultiply>;
  converters["Div"] = ConvertBinary<kDivide>;
  converters["Pow"] = ConvertPow;
  converters["Neg"] = ConvertNeg;
  converters["Reciprocal"] = ConvertReciprocal;
  converters["Gelu"] = ConvertGelu;
  converters["Clip"] = ConvertClip;
  converters["BatchNormalization"] = ConvertBatchNormalization;
  converters["LayerNormalization"] = ConvertLayerNormalization;
  converters["Softmax"] = ConvertSoftmax;
  converters["MaxPool"] = ConvertPool;
  converters["AveragePool"] = ConvertPool;
  converters["GlobalAveragePool"] = ConvertGlobalPool;
  converters["GlobalMaxPool"] = ConvertGlobalPool;
}

}  // namespace tandem::frontend::onnx_import
