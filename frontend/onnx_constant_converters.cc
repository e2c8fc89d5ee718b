// Converters of the ONNX ops that exporters use to compute shapes: Shape and Size (always known,
// since shapes are static), and Range and ConstantOfShape, evaluated here when their inputs are
// known at import time. These have no registry op. (Gather, the comparisons and Where, which
// shape chains use too, are graph ops: onnx_index_converters.cc.)
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

}  // namespace

void AddConstantConverters(ConverterMap& converters) {
  converters["Shape"] = ConvertShape;
  converters["Size"] = ConvertSize;
  converters["Range"] = ConvertRange;
  converters["ConstantOfShape"] = ConvertConstantOfShape;
}

}  // namespace tandem::frontend::onnx_import
