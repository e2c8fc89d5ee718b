// Converters of the ONNX ops that rearrange elements without computing: DepthToSpace,
// SpaceToDepth and Tile. Each is a reshape, a transpose or a broadcast, and a reshape, which
// move exactly the elements the ONNX definition names.
#include <fmt/format.h>

#include "frontend/onnx_convert.h"
#include "ir/error.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::Shape;

Value Transpose(NodeContext& ctx, Value x, const std::vector<int64_t>& axes) {
  return ctx.Call("transpose", {x}, Attrs{{"axes", axes}});
}

// The NCHW input and block size of DepthToSpace / SpaceToDepth, checked.
struct Blocked {
  int64_t n, c, h, w, block;
};

Blocked BlockedInput(NodeContext& ctx) {
  const ir::TensorType& type = ctx.InputType(0);
  if (type.rank() != 4) {
    ctx.Fail(
        fmt::format("{} needs a 4-D (NCHW) input but got {}", ctx.op_type(), ir::ToString(type)));
  }
  std::optional<int64_t> block = ctx.OptionalInt("blocksize");
  if (!block || *block < 1 || *block > kMaxAttributeValue) {
    ctx.Fail(fmt::format("{} needs a positive attribute 'blocksize'", ctx.op_type()));
  }
  return {type.shape[0], type.shape[1], type.shape[2], type.shape[3], *block};
}

// DepthToSpace: channel blocks move into b x b spatial tiles. DCR mode (the default) takes the
// block offset from the high channel bits: [N, b, b, C/b^2, H, W] -> [N, C/b^2, H, b, W, b];
// CRD from the low ones: [N, C/b^2, b, b, H, W] -> the same.
std::vector<Value> ConvertDepthToSpace(NodeContext& ctx) {
  Blocked in = BlockedInput(ctx);
  std::string mode = ctx.String("mode", "DCR");
  int64_t b = in.block;
  if (in.c % (b * b) != 0) {
    ctx.Fail(fmt::format("DepthToSpace: {} channels are not a multiple of blocksize^2 = {}", in.c,
                         b * b));
  }
  int64_t depth = in.c / (b * b);
  Value x = ctx.Input(0);
  if (mode == "DCR") {
    x = Transpose(ctx, ctx.Reshape(x, {in.n, b, b, depth, in.h, in.w}), {0, 3, 4, 1, 5, 2});
  } else if (mode == "CRD") {
    x = Transpose(ctx, ctx.Reshape(x, {in.n, depth, b, b, in.h, in.w}), {0, 1, 4, 2, 5, 3});
  } else {
    ctx.Fail(fmt::format("DepthToSpace mode must be DCR or CRD but is '{}'", mode));
  }
  return {ctx.Reshape(x, {in.n, depth, in.h * b, in.w * b})};
}

// SpaceToDepth: each b x b spatial tile moves into channels, block offset first:
// [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b].
std::vector<Value> ConvertSpaceToDepth(NodeContext& ctx) {
  Blocked in = BlockedInput(ctx);
  int64_t b = in.block;
  if (in.h % b != 0 || in.w % b != 0) {
    ctx.Fail(
        fmt::format("SpaceToDepth: the spatial extents {}x{} are not multiples of blocksize {}",
                    in.h, in.w, b));
  }
  Value x = ctx.Reshape(ctx.Input(0), {in.n, in.c, in.h / b, b, in.w / b, b});
  x = Transpose(ctx, x, {0, 3, 5, 1, 2, 4});
  return {ctx.Reshape(x, {in.n, in.c * b * b, in.h / b, in.w / b})};
}

// Tile: axis i repeated repeats[i] times. Every repeated axis gets a unit axis in front of it,
// which a broadcast against zeros grows to the repeat count; merging each pair gives the result.
std::vector<Value> ConvertTile(NodeContext& ctx) {
  const ir::TensorType& type = ctx.InputType(0);
  std::vector<int64_t> repeats = ctx.ConstantInts(1, "repeats");
  if (static_cast<int64_t>(repeats.size()) != type.rank()) {
    ctx.Fail(fmt::format("Tile needs one repeat count per axis of {} but got {}",
                         ir::ToString(type), repeats.size()));
  }
  CheckRange(repeats, 0, "the repeats of Tile");
  Shape split, grown, out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] != 1) {
      split.push_back(1);
      grown.push_back(repeats[i]);
    }
    split.push_back(type.shape[i]);
    grown.push_back(type.shape[i]);
    out.push_back(type.shape[i] * repeats[i]);
  }
  CheckedNumElements(grown);
  if (out == type.shape) return {ctx.Input(0)};
  Value x = ctx.Reshape(ctx.Input(0), split);
  x = ctx.Call("add", {x, ctx.Zeros(grown, type.dtype)});
  return {ctx.Reshape(x, out)};
}

}  // namespace

void AddLayoutConverters(ConverterMap& converters) {
  converters["DepthToSpace"] = ConvertDepthToSpace;
  converters["SpaceToDepth"] = ConvertSpaceToDepth;
  converters["Tile"] = ConvertTile;
}

}  // namespace tandem::frontend::onnx_import
