// Converters of the ONNX ops that index, compare and select: Gather, GatherElements and
// ScatterND (indices known at import or computed by the graph, such as the token ids of an
// embedding lookup), Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor and
// Where. Each becomes the graph op of the same meaning (ir/ops/gather_ops.cc,
// ir/ops/scatter_nd_ops.cc, ir/ops/logical_ops.cc); like every call, one whose operands are all
// known at import is evaluated there (the shape chains that exporters emit), exactly for i64
// values.
#include <fmt/format.h>

#include "frontend/onnx_convert.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;

// Fails naming the first index known at import outside [-extent, extent), before any graph op
// is built (a constant index out of range is a broken model, not a run-time input).
void CheckKnownIndices(NodeContext& ctx, size_t data_input, size_t index_input, int64_t axis) {
  if (!ctx.values().IsConstant(ctx.Input(index_input))) return;
  int64_t extent = ctx.InputType(data_input).shape[static_cast<size_t>(axis)];
  for (int64_t i : TensorToInts(ctx.values().ConstantOf(ctx.Input(index_input)))) {
    if (i < -extent || i >= extent) {
      ctx.Fail(fmt::format("{} index {} is out of range for extent {}", ctx.op_type(), i, extent));
    }
  }
}

int64_t Axis(NodeContext& ctx) {
  const ir::TensorType& data = ctx.InputType(0);
  if (data.rank() == 0) ctx.Fail(fmt::format("{} needs data of rank 1 or more", ctx.op_type()));
  return ir::ops::NormalizeAxis(ctx.Int("axis", 0), data.rank());
}

std::vector<Value> ConvertGather(NodeContext& ctx) {
  int64_t axis = Axis(ctx);
  CheckKnownIndices(ctx, 0, 1, axis);
  const char* op = ctx.op_type() == "Gather" ? "gather" : "gather_elements";
  return {ctx.Call(op, {ctx.Input(0), ctx.Input(1)}, Attrs{{"axis", axis}})};
}

// ScatterND: data with the slices addressed by the rows of indices replaced by (reduction
// none) or combined with (add, mul from opset 16; max, min from opset 18) updates.
std::vector<Value> ConvertScatterND(NodeContext& ctx) {
  std::string reduction = ctx.String("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min") {
    ctx.Fail(fmt::format("ScatterND reduction '{}' is not supported (none, add, mul, max, min)",
                         reduction));
  }
  const ir::TensorType& data = ctx.InputType(0);
  const ir::TensorType& indices = ctx.InputType(1);
  if (ctx.values().IsConstant(ctx.Input(1)) && indices.rank() > 0 &&
      indices.shape.back() <= data.rank()) {
    std::vector<int64_t> values = TensorToInts(ctx.values().ConstantOf(ctx.Input(1)));
    size_t k = static_cast<size_t>(indices.shape.back());
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t extent = data.shape[i % k];
      if (values[i] < -extent || values[i] >= extent) {
        ctx.Fail(
            fmt::format("ScatterND index {} (column {} of the indices) is out of range for "
                        "extent {}",
                        values[i], i % k, extent));
      }
    }
  }
  return {ctx.Call("scatter_nd", {ctx.Input(0), ctx.Input(1), ctx.Input(2)},
                   Attrs{{"reduction", reduction}})};
}

std::vector<Value> ConvertBinary(NodeContext& ctx) {
  static const std::map<std::string, std::string> ops = {{"Equal", "equal"},
                                                         {"Less", "less"},
                                                         {"Greater", "greater"},
                                                         {"LessOrEqual", "less_equal"},
                                                         {"GreaterOrEqual", "greater_equal"},
                                                         {"And", "logical_and"},
                                                         {"Or", "logical_or"},
                                                         {"Xor", "logical_xor"}};
  if (ctx.InputType(0).dtype != ctx.InputType(1).dtype) {
    ctx.Fail(fmt::format("{} needs operands of one dtype but has {} and {}", ctx.op_type(),
                         ir::ToString(ctx.InputType(0)), ir::ToString(ctx.InputType(1))));
  }
  return {ctx.Call(ops.at(ctx.op_type()), {ctx.Input(0), ctx.Input(1)})};
}

std::vector<Value> ConvertNot(NodeContext& ctx) {
  return {ctx.Call("logical_not", {ctx.Input(0)})};
}

std::vector<Value> ConvertWhere(NodeContext& ctx) {
  if (ctx.InputType(1).dtype != ctx.InputType(2).dtype) {
    ctx.Fail(fmt::format("Where needs X and Y of one dtype but has {} and {}",
                         ir::ToString(ctx.InputType(1)), ir::ToString(ctx.InputType(2))));
  }
  return {ctx.Call("where", {ctx.Input(0), ctx.Input(1), ctx.Input(2)})};
}

}  // namespace

void AddIndexConverters(ConverterMap& converters) {
  converters["Gather"] = ConvertGather;
  converters["GatherElements"] = ConvertGather;
  converters["ScatterND"] = ConvertScatterND;
  for (const char* op :
       {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}) {
    converters[op] = ConvertBinary;
  }
  converters["Not"] = ConvertNot;
  converters["Where"] = ConvertWhere;
}

}  // namespace tandem::frontend::onnx_import
