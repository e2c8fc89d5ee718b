// The converter of ONNX Runtime's contrib op com.microsoft Attention (multi-head self-attention
// of BERT-style models exported with the ONNX Runtime transformer optimizer), decomposed into
// graph ops:
//
//   qkv = input [B, S, H] x weights [H, 3H] + bias [3H], split into Q, K, V of [B, S, H];
//   each reshaped to [B, S, N, D], transposed to [B, N, S, D] and merged to [B*N, S, D]
//   (N = num_heads, D = H / N);
//   scores = Q K^T * scale (scale defaults to 1/sqrt(D)), as [B, N, S, S];
//   + mask_filter_value where the 2-D mask_index [B, S] is 0 (ONNX Runtime's raw mask: a key
//     position with a mask value > 0 is attended), + mask_filter_value for a key after the query
//     with unidirectional=1 (causal);
//   softmax over the keys, times V, heads merged back to [B, S, H].
//
// Other forms (qkv_hidden_sizes, the 1-D, 3-D and 4-D mask_index, past state, relative position
// bias, rotary embeddings, the present output) are import errors naming what is not supported.
#include <fmt/format.h>

#include <cmath>

#include "frontend/onnx_convert.h"
#include "ir/error.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::Shape;

void CheckSupportedForm(NodeContext& ctx) {
  if (ctx.HasAttr("qkv_hidden_sizes")) {
    ctx.Fail(
        "Attention with attribute 'qkv_hidden_sizes' is not supported (Q, K and V must "
        "each have the hidden size)");
  }
  for (const char* flag : {"do_rotary", "past_present_share_buffer"}) {
    if (ctx.Int(flag, 0) != 0) {
      ctx.Fail(fmt::format("Attention with attribute '{}' = 1 is not supported", flag));
    }
  }
  if (ctx.HasAttr("rotary_embedding_dim")) {
    ctx.Fail("Attention with attribute 'rotary_embedding_dim' is not supported");
  }
  const char* inputs[] = {"", "", "", "", "past", "relative_position_bias", "past_sequence_length"};
  for (size_t i = 4; i < ctx.num_inputs(); ++i) {
    if (ctx.HasInput(i)) {
      ctx.Fail(fmt::format("Attention input {} ('{}') is not supported", i,
                           i < std::size(inputs) ? inputs[i] : "unknown"));
    }
  }
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (ctx.WantsOutput(i)) {
      ctx.Fail(fmt::format("Attention output {} (present) is not supported", i));
    }
  }
}

// The additive mask [B, 1, 1, S] of a 2-D mask_index [B, S]: 0 where the mask is > 0,
// `filter` elsewhere.
Value KeyMask(NodeContext& ctx, int64_t batch, int64_t sequence, float filter) {
  const ir::TensorType& mask = ctx.InputType(3);
  if (mask.shape != Shape{batch, sequence}) {
    ctx.Fail(
        fmt::format("Attention mask_index {} is not supported: only the 2-D [batch, "
                    "sequence] = [{}, {}] mask of 0 and 1",
                    ir::ToString(mask), batch, sequence));
  }
  if (mask.dtype != ir::DataType::kInt32 && mask.dtype != ir::DataType::kInt64) {
    ctx.Fail(fmt::format("Attention mask_index must be int32 but is {}", ir::ToString(mask)));
  }
  Value attended = ctx.Call("greater", {ctx.Input(3), ctx.Scalar(0, mask.dtype)});
  Value additive = ctx.Call("where", {attended, ctx.Scalar(0, ir::DataType::kFloat32),
                                      ctx.Scalar(filter, ir::DataType::kFloat32)});
  return ctx.Reshape(additive, {batch, 1, 1, sequence});
}

// The additive causal mask [S, S]: `filter` where the key comes after the query.
Value CausalMask(NodeContext& ctx, int64_t sequence, float filter) {
  ir::Tensor mask({sequence, sequence}, ir::DataType::kFloat32);
  for (int64_t q = 0; q < sequence; ++q) {
    for (int64_t k = 0; k < sequence; ++k)
      mask.data<float>()[q * sequence + k] = k > q ? filter : 0;
  }
  return ctx.Constant(mask);
}

std::vector<Value> ConvertAttention(NodeContext& ctx) {
  CheckSupportedForm(ctx);
  const ir::TensorType& input = ctx.InputType(0);
  if (input.rank() != 3 || input.dtype != ir::DataType::kFloat32) {
    ctx.Fail(fmt::format("Attention needs an f32 input [batch, sequence, hidden] but has {}",
                         ir::ToString(input)));
  }
  int64_t batch = input.shape[0], sequence = input.shape[1], hidden = input.shape[2];
  std::optional<int64_t> heads = ctx.OptionalInt("num_heads");
  if (!heads) ctx.Fail("Attention needs attribute 'num_heads'");
  if (*heads < 1 || hidden % *heads != 0) {
    ctx.Fail(fmt::format("Attention num_heads {} must divide the hidden size {}", *heads, hidden));
  }
  if (ctx.InputType(1).shape != Shape{hidden, 3 * hidden}) {
    ctx.Fail(fmt::format("Attention weights {} must be [{}, {}]", ir::ToString(ctx.InputType(1)),
                         hidden, 3 * hidden));
  }
  if (ctx.InputType(2).shape != Shape{3 * hidden}) {
    ctx.Fail(
        fmt::format("Attention bias {} must be [{}]", ir::ToString(ctx.InputType(2)), 3 * hidden));
  }
  int64_t unidirectional = ctx.Int("unidirectional", 0);
  if (unidirectional != 0 && unidirectional != 1) {
    ctx.Fail(fmt::format("Attention unidirectional must be 0 or 1 but is {}", unidirectional));
  }
  int64_t n = *heads, d = hidden / n;
  auto filter = static_cast<float>(ctx.Float("mask_filter_value", -10000.0));
  double scale = ctx.Float("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(d));

  Value qkv = ctx.Call("add", {ctx.Call("matmul", {ctx.Input(0), ctx.Input(1)}), ctx.Input(2)});
  std::vector<Value> parts = ctx.CallTuple(
      "split", {qkv}, Attrs{{"axis", int64_t{2}}, {"sections", std::vector<int64_t>(3, hidden)}});
  auto heads_of = [&](Value x) {
    Value split = ctx.Reshape(x, {batch, sequence, n, d});
    Value moved = ctx.Call("transpose", {split}, Attrs{{"axes", std::vector<int64_t>{0, 2, 1, 3}}});
    return ctx.Reshape(moved, {batch * n, sequence, d});
  };
  Value q = heads_of(parts.at(0)), k = heads_of(parts.at(1)), v = heads_of(parts.at(2));
  Value scores = ctx.Call("batch_matmul", {q, k}, Attrs{{"transpose_b", int64_t{1}}});
  scores = ctx.Call("multiply", {scores, ctx.Scalar(scale, ir::DataType::kFloat32)});
  scores = ctx.Reshape(scores, {batch, n, sequence, sequence});
  if (ctx.HasInput(3)) scores = ctx.Call("add", {scores, KeyMask(ctx, batch, sequence, filter)});
  if (unidirectional == 1) scores = ctx.Call("add", {scores, CausalMask(ctx, sequence, filter)});
  Value probs = ctx.Call("softmax", {scores}, Attrs{{"axis", int64_t{-1}}});
  Value context =
      ctx.Call("batch_matmul", {ctx.Reshape(probs, {batch * n, sequence, sequence}), v});
  context = ctx.Reshape(context, {batch, n, sequence, d});
  context = ctx.Call("transpose", {context}, Attrs{{"axes", std::vector<int64_t>{0, 2, 1, 3}}});
  return {ctx.Reshape(context, {batch, sequence, hidden})};
}

}  // namespace

void AddAttentionConverters(ConverterMap& converters) {
  converters[std::string(kMicrosoftDomain) + ".Attention"] = ConvertAttention;
}

}  // namespace tandem::frontend::onnx_import
