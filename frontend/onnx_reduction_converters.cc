// Converters of the ONNX reductions beyond ReduceSum, ReduceMean and ReduceMax: ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, and the
// reductions along one axis ArgMax, ArgMin, CumSum and TopK.
//
// ReduceMin and ReduceProd are the graph ops min and prod; the norms and logarithmic sums are
// elementwise ops around a sum (ReduceLogSumExp subtracts the maximum first, so that large
// inputs do not overflow); ArgMax and ArgMin are argmax and argmin, CumSum is cumsum, TopK is
// topk (its K must be known at import: it sets the result's shape).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "frontend/onnx_convert.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;

// The reduced axes of a ReduceX node, normalized and sorted: the attribute 'axes' (older
// opsets) or input 1 (newer ones); none given means every axis. Empty when the node reduces
// nothing (noop_with_empty_axes=1 without axes).
std::vector<int64_t> ReducedAxes(NodeContext& ctx) {
  int64_t rank = ctx.InputRank(0);
  std::optional<std::vector<int64_t>> given = ctx.OptionalInts("axes");
  if (ctx.HasInput(1)) given = ctx.ConstantInts(1, "axes");
  bool noop_with_empty_axes = ctx.Int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (!given || given->empty()) {
    if (noop_with_empty_axes) return {};
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
    return axes;
  }
  for (int64_t axis : *given) axes.push_back(ir::ops::NormalizeAxis(axis, rank));
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    ctx.Fail(fmt::format("axes [{}] of {} repeat an axis", fmt::join(*given, ","), ctx.op_type()));
  }
  return axes;
}

// ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp.
std::vector<Value> ConvertReduce(NodeContext& ctx) {
  const std::string& type = ctx.op_type();
  if (!ir::IsFloat(ctx.InputType(0).dtype) && type != "ReduceMin" && type != "ReduceProd") {
    ctx.Fail(
        fmt::format("{} needs a float input but got {}", type, ir::ToString(ctx.InputType(0))));
  }
  int64_t keepdims = ctx.Int("keepdims", 1) != 0 ? 1 : 0;
  std::vector<int64_t> axes = ReducedAxes(ctx);
  Value x = ctx.Input(0);
  auto reduce = [&](const char* op, Value v, int64_t keep) {
    return ctx.Call(op, {v}, Attrs{{"axes", axes}, {"keepdims", keep}});
  };
  if (axes.empty()) {  // noop_with_empty_axes: the elementwise part only
    if (type == "ReduceL1" || type == "ReduceL2") return {ctx.Call("abs", {x})};
    if (type == "ReduceSumSquare") return {ctx.Call("multiply", {x, x})};
    if (type == "ReduceLogSum") return {ctx.Call("log", {x})};
    return {x};  // min, prod, and log(exp(x))
  }
  if (type == "ReduceMin") return {reduce("min", x, keepdims)};
  if (type == "ReduceProd") return {reduce("prod", x, keepdims)};
  if (type == "ReduceL1") return {reduce("sum", ctx.Call("abs", {x}), keepdims)};
  if (type == "ReduceSumSquare") return {reduce("sum", ctx.Call("multiply", {x, x}), keepdims)};
  if (type == "ReduceL2") {
    return {ctx.Call("sqrt", {reduce("sum", ctx.Call("multiply", {x, x}), keepdims)})};
  }
  if (type == "ReduceLogSum") return {ctx.Call("log", {reduce("sum", x, keepdims)})};
  // ReduceLogSumExp: m + log(sum(exp(x - m))) with m the maximum clamped to the finite range,
  // so that all -inf gives -inf and an +inf gives +inf like the direct formula.
  Value shift = ctx.Call("clip", {reduce("max", x, 1)}, Attrs{{"min", -3e38}, {"max", 3e38}});
  Value sum = reduce("sum", ctx.Call("exp", {ctx.Call("subtract", {x, shift})}), keepdims);
  Value kept_shift = keepdims ? shift : ctx.Reshape(shift, ctx.TypeOf(sum).shape);
  return {ctx.Call("add", {ctx.Call("log", {sum}), kept_shift})};
}

// ArgMax and ArgMin: the int64 index of the first (or, with select_last_index, the last)
// extreme element along `axis`.
std::vector<Value> ConvertArgExtreme(NodeContext& ctx) {
  int64_t rank = ctx.InputRank(0);
  int64_t axis = ir::ops::NormalizeAxis(ctx.Int("axis", 0), std::max<int64_t>(rank, 1));
  int64_t keepdims = ctx.Int("keepdims", 1) != 0 ? 1 : 0;
  int64_t select_last = ctx.Int("select_last_index", 0) != 0 ? 1 : 0;
  const char* op = ctx.op_type() == "ArgMax" ? "argmax" : "argmin";
  return {
      ctx.Call(op, {ctx.Input(0)},
               Attrs{{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", select_last}})};
}

// CumSum: running sums along the axis given by input 1, optionally exclusive and/or reversed.
std::vector<Value> ConvertCumSum(NodeContext& ctx) {
  const ir::Tensor& axis_tensor = ctx.ConstantInput(1, "axis");
  if (axis_tensor.num_elements() != 1 || ir::IsFloat(axis_tensor.dtype())) {
    ctx.Fail(fmt::format("the axis of CumSum must be one integer but is {}",
                         ir::ToString(axis_tensor.type())));
  }
  int64_t rank = ctx.InputRank(0);
  if (rank == 0) ctx.Fail("CumSum needs an input of rank 1 or more");
  int64_t axis = ir::ops::NormalizeAxis(TensorToInts(axis_tensor).at(0), rank);
  int64_t exclusive = ctx.Int("exclusive", 0) != 0 ? 1 : 0;
  int64_t reverse = ctx.Int("reverse", 0) != 0 ? 1 : 0;
  return {ctx.Call("cumsum", {ctx.Input(0)},
                   Attrs{{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}})};
}

// TopK (opset 11 on): the K largest or smallest elements along `axis` and their int64 indices;
// K is the one-element input 1.
std::vector<Value> ConvertTopK(NodeContext& ctx) {
  if (!ctx.HasInput(1)) ctx.Fail("TopK needs input K");
  // K sets the shape of the outputs, so it must be known at import.
  const ir::Tensor& k_tensor = ctx.ConstantInput(1, "K");
  if (k_tensor.num_elements() != 1 || ir::IsFloat(k_tensor.dtype())) {
    ctx.Fail(fmt::format("TopK's K must be one integer but is {}", ir::ToString(k_tensor.type())));
  }
  int64_t k = TensorToInts(k_tensor).at(0);
  int64_t rank = ctx.InputRank(0);
  if (rank == 0) ctx.Fail("TopK needs an input of rank 1 or more");
  int64_t axis = ir::ops::NormalizeAxis(ctx.Int("axis", -1), rank);
  int64_t extent = ctx.InputType(0).shape[static_cast<size_t>(axis)];
  if (k < 1 || k > extent) {
    ctx.Fail(
        fmt::format("TopK's K = {} must lie in [1, {}] (the extent of axis {})", k, extent, axis));
  }
  int64_t largest = ctx.Int("largest", 1);
  int64_t sorted = ctx.Int("sorted", 1);
  for (auto [name, value] : {std::pair{"largest", largest}, std::pair{"sorted", sorted}}) {
    if (value != 0 && value != 1) {
      ctx.Fail(fmt::format("TopK's attribute '{}' must be 0 or 1 but is {}", name, value));
    }
  }
  return ctx.CallTuple("topk", {ctx.Input(0)},
                       Attrs{{"k", k}, {"axis", axis}, {"largest", largest}, {"sorted", sorted}});
}

}  // namespace

void AddReductionConverters(ConverterMap& converters) {
  for (const char* op : {"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                         "ReduceLogSum", "ReduceLogSumExp"}) {
    converters[op] = ConvertReduce;
  }
  converters["ArgMax"] = ConvertArgExtreme;
  converters["ArgMin"] = ConvertArgExtreme;
  converters["CumSum"] = ConvertCumSum;
  converters["TopK"] = ConvertTopK;
}

}  // namespace tandem::frontend::onnx_import
