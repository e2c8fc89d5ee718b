// Converters of the ONNX ops that exporters use to compute shapes: Shape and Size (always known,
// since shapes are static), and Gather, Range, ConstantOfShape, Equal, Less, Greater, Not and
// Where, evaluated here when their inputs are known at import time. These have no registry op;
// Gather on a graph value with known indices becomes slices.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "frontend/onnx_convert.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::DataType;
using ir::Shape;
using ir::Tensor;

void CheckFoldable(NodeContext& ctx, const Shape& shape) {
  if (CheckedNumElements(shape) > kFoldLimit) {
    ctx.Fail(fmt::format("the result {} of {} is too large to compute at import time",
                         ir::ShapeToString(shape), ctx.op_type()));
  }
}

const Tensor& KnownInput(NodeContext& ctx, size_t index) {
  if (!ctx.values().IsConstant(ctx.Input(index))) {
    ctx.Fail(
        fmt::format("{} is supported only when its inputs are known at import time "
                    "(initializers, constants or shapes), but input {} ('{}') is computed "
                    "by the graph",
                    ctx.op_type(), index, ctx.proto().input(static_cast<int>(index))));
  }
  return ctx.values().ConstantOf(ctx.Input(index));
}

std::vector<Value> ConvertShape(NodeContext& ctx) {
  const Shape& shape = ctx.InputType(0).shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  auto clamp = [rank](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  int64_t start = clamp(ctx.Int("start", 0)), end = clamp(ctx.Int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(shape[static_cast<size_t>(i)]);
  return {ctx.Constant(Tensor::FromInt64s({static_cast<int64_t>(dims.size())}, dims))};
}

std::vector<Value> ConvertSize(NodeContext& ctx) {
  return {ctx.Constant(Tensor::FromInt64s({}, {ctx.InputType(0).num_elements()}))};
}

std::vector<Value> ConvertGather(NodeContext& ctx) {
  Value data = ctx.Input(0);
  const ir::TensorType& type = ctx.InputType(0);
  if (type.rank() == 0) ctx.Fail("Gather needs data of rank 1 or more");
  int64_t axis = ir::ops::NormalizeAxis(ctx.Int("axis", 0), type.rank());
  if (!ctx.values().IsConstant(ctx.Input(1))) {
    ctx.Fail("Gather with indices computed by the graph is not supported");
  }
  const Tensor& index_tensor = ctx.values().ConstantOf(ctx.Input(1));
  std::vector<int64_t> indices = TensorToInts(index_tensor);
  int64_t extent = type.shape[static_cast<size_t>(axis)];
  for (int64_t& i : indices) {
    if (i < -extent || i >= extent) {
      ctx.Fail(fmt::format("Gather index {} is out of range for extent {}", i, extent));
    }
    if (i < 0) i += extent;
  }
  Shape out_shape(type.shape.begin(), type.shape.begin() + axis);
  out_shape.insert(out_shape.end(), index_tensor.shape().begin(), index_tensor.shape().end());
  out_shape.insert(out_shape.end(), type.shape.begin() + axis + 1, type.shape.end());
  if (ctx.values().IsConstant(data)) {
    CheckFoldable(ctx, out_shape);
    const Tensor& in = ctx.values().ConstantOf(data);
    int64_t outer = ir::NumElements(Shape(type.shape.begin(), type.shape.begin() + axis));
    int64_t inner = ir::NumElements(Shape(type.shape.begin() + axis + 1, type.shape.end()));
    size_t block = static_cast<size_t>(inner * ir::SizeOf(type.dtype));
    Tensor out(out_shape, type.dtype);
    const auto* src = static_cast<const uint8_t*>(in.raw_data());
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i : indices) {
        std::memcpy(dst, src + static_cast<size_t>(o * extent + i) * block, block);
        dst += block;
      }
    }
    return {ctx.Constant(out)};
  }
  // Known indices into a graph value: one slice per index, concatenated.
  constexpr size_t kMaxSlices = 1024;
  if (indices.empty() || indices.size() > kMaxSlices) {
    ctx.Fail(
        fmt::format("Gather of {} indices from a graph value is not supported", indices.size()));
  }
  std::vector<Value> slices;
  for (int64_t i : indices) {
    slices.push_back(ctx.Call("strided_slice", {data},
                              Attrs{{"begin", std::vector<int64_t>{i}},
                                    {"end", std::vector<int64_t>{i + 1}},
                                    {"strides", std::vector<int64_t>{1}},
                                    {"axes", std::vector<int64_t>{axis}}}));
  }
  Value joined = slices.size() == 1 ? slices[0] : ctx.Call("concat", slices, Attrs{{"axis", axis}});
  return {ctx.Reshape(joined, out_shape)};
}

std::vector<Value> ConvertRange(NodeContext& ctx) {
  const Tensor& start = KnownInput(ctx, 0);
  const Tensor& limit = KnownInput(ctx, 1);
  const Tensor& delta = KnownInput(ctx, 2);
  for (const Tensor* t : {&start, &limit, &delta}) {
    if (t->num_elements() != 1) ctx.Fail("Range needs scalar start, limit and delta");
  }
  DataType dtype = start.dtype();
  Tensor out;
  if (dtype == DataType::kInt64 || dtype == DataType::kInt32) {
    int64_t first = TensorToInts(start)[0], last = TensorToInts(limit)[0];
    int64_t step = TensorToInts(delta)[0];
    if (step == 0) ctx.Fail("Range delta must not be 0");
    int64_t span = 0;
    if (__builtin_sub_overflow(last, first, &span) ||
        __builtin_add_overflow(span, step + (step > 0 ? -1 : 1), &span)) {
      ctx.Fail("the Range is too long");
    }
    int64_t count = std::max<int64_t>(0, span / step);
    CheckFoldable(ctx, {count});
    out = Tensor({count}, dtype);
    for (int64_t i = 0; i < count; ++i) out.SetDouble(i, static_cast<double>(first + i * step));
  } else {
    double first = start.GetDouble(0), step = delta.GetDouble(0);
    if (step == 0) ctx.Fail("Range delta must not be 0");
    double count = std::max(0.0, std::ceil((limit.GetDouble(0) - first) / step));
    if (!(count <= static_cast<double>(kFoldLimit))) ctx.Fail("the Range is too long");
    out = Tensor({static_cast<int64_t>(count)}, dtype);
    for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, first + i * step);
  }
  return {ctx.Constant(out)};
}

std::vector<Value> ConvertConstantOfShape(NodeContext& ctx) {
  std::vector<int64_t> shape = ctx.ConstantInts(0, "shape");
  Tensor fill = Tensor::FromFloats({}, {0.0f});
  if (ctx.HasAttr("value")) fill = TensorFromProto(ctx.TensorAttr("value"));
  if (fill.num_elements() != 1) ctx.Fail("the value of ConstantOfShape must hold one element");
  for (int64_t d : shape) {
    if (d < 0) {
      ctx.Fail(fmt::format("ConstantOfShape got a negative extent in [{}]", fmt::join(shape, ",")));
    }
  }
  CheckFoldable(ctx, shape);
  Tensor out(shape, fill.dtype());
  size_t width = static_cast<size_t>(ir::SizeOf(fill.dtype()));
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::memcpy(dst + i * width, fill.raw_data(), width);
  }
  return {ctx.Constant(out)};
}

// An elementwise function of known inputs with numpy broadcasting. `function(offsets, flat, out)`
// writes element `flat` of the result from the inputs' elements at `offsets`.
template <typename Function>
Value Broadcast(NodeContext& ctx, const std::vector<const Tensor*>& inputs, DataType dtype,
                Function function) {
  Shape shape;
  for (const Tensor* t : inputs) shape = ir::ops::BroadcastShapes(shape, t->shape());
  CheckFoldable(ctx, shape);
  Tensor out(shape, dtype);
  std::vector<int64_t> offsets(inputs.size());
  ir::ops::ForEachIndex(shape, [&](const std::vector<int64_t>& index, int64_t flat) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      offsets[k] = ir::ops::BroadcastOffset(index, inputs[k]->shape());
    }
    function(offsets, flat, out);
  });
  return ctx.Constant(out);
}

std::vector<Value> ConvertCompare(NodeContext& ctx) {
  const Tensor& a = KnownInput(ctx, 0);
  const Tensor& b = KnownInput(ctx, 1);
  if (a.dtype() != b.dtype()) {
    ctx.Fail(fmt::format("{} needs operands of one dtype", ctx.op_type()));
  }
  const std::string& op = ctx.op_type();
  bool exact = a.dtype() == DataType::kInt64;
  return {Broadcast(ctx, {&a, &b}, DataType::kBool,
                    [&](const std::vector<int64_t>& at, int64_t flat, Tensor& out) {
                      int order;
                      if (exact) {
                        int64_t x = a.data<int64_t>()[at[0]], y = b.data<int64_t>()[at[1]];
                        order = x < y ? -1 : (x > y ? 1 : 0);
                      } else {
                        double x = a.GetDouble(at[0]), y = b.GetDouble(at[1]);
                        order = x < y ? -1 : (x > y ? 1 : (x == y ? 0 : 2));  // 2: unordered (NaN)
                      }
                      bool result = op == "Equal"  ? order == 0
                                    : op == "Less" ? order == -1
                                                   : order == 1;
                      out.data<uint8_t>()[flat] = result ? 1 : 0;
                    })};
}

std::vector<Value> ConvertNot(NodeContext& ctx) {
  const Tensor& a = KnownInput(ctx, 0);
  return {Broadcast(ctx, {&a}, DataType::kBool,
                    [&](const std::vector<int64_t>& at, int64_t flat, Tensor& out) {
                      out.data<uint8_t>()[flat] = a.GetDouble(at[0]) == 0 ? 1 : 0;
                    })};
}

std::vector<Value> ConvertWhere(NodeContext& ctx) {
  const Tensor& condition = KnownInput(ctx, 0);
  const Tensor& x = KnownInput(ctx, 1);
  const Tensor& y = KnownInput(ctx, 2);
  if (x.dtype() != y.dtype()) ctx.Fail("Where needs X and Y of one dtype");
  size_t width = static_cast<size_t>(ir::SizeOf(x.dtype()));
  return {Broadcast(ctx, {&condition, &x, &y}, x.dtype(),
                    [&](const std::vector<int64_t>& at, int64_t flat, Tensor& out) {
                      bool pick_x = condition.GetDouble(at[0]) != 0;
                      const auto* src =
                          static_cast<const uint8_t*>(pick_x ? x.raw_data() : y.raw_data());
                      std::memcpy(static_cast<uint8_t*>(out.raw_data()) + flat * width,
                                  src + (pick_x ? at[1] : at[2]) * width, width);
                    })};
}

}  // namespace

void AddConstantConverters(ConverterMap& converters) {
  converters["Shape"] = ConvertShape;
  converters["Size"] = ConvertSize;
  converters["Gather"] = ConvertGather;
  converters["Range"] = ConvertRange;
  converters["ConstantOfShape"] = ConvertConstantOfShape;
  converters["Equal"] = ConvertCompare;
  converters["Less"] = ConvertCompare;
  converters["Greater"] = ConvertCompare;
  converters["Not"] = ConvertNot;
  converters["Where"] = ConvertWhere;
}

}  // namespace tandem::frontend::onnx_import
