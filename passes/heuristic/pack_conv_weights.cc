// PackConvWeights: a channels-last conv2d (data NHWC) with a constant weight gets the weight cut
// into panels of output channels, kernel layout OHWI{nb}o ([O/nb, KH, KW, I, nb]), computed at
// compile time.
//
// Why: our kernels of a channels-last convolution vectorize over output channels and walk the
// taps, then the input channels innermost; in HWIO consecutive input channels are a whole row of
// O weights apart (2 KiB at O = 512), so a register tile touches a new page every few steps, as
// the plain weight of a matmul does (see PackMatmulWeights). In OHWI panels the tile streams one
// contiguous block in the order it reads it (in OIHW panels each input channel would jump over
// the KH x KW taps). oneDNN
// takes blocked constant weights too (it reorders them at build), but the pass runs after
// backend placement like PackMatmulWeights. nb defaults to two vector registers of the target
// (32 f32 on AVX-512, 16 on AVX2), so that a register tile two vectors wide reads one panel row
// per step, as for PackMatmulWeights; one 64-byte cache line of elements where that width does
// not divide the output channels, one vector register where that does not either; many output
// channels that none of these divides are padded with zero channels to whole 64-byte panels and
// the result sliced back. Grouped and depthwise convolutions are left alone (their weight rows
// are short). Values are unchanged (the same products in the same order).
#include <fmt/format.h>

#include <algorithm>

#include "ir/layout.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

bool Plain(const std::string& layout) {
  return layout.find_first_of("0123456789") == std::string::npos;
}

// Output channels below which a convolution is not padded to whole panels (the padded
// channels, computed and then sliced off, cost at most 1/16 more work).
constexpr int64_t kMinPaddedChannels = 240;

// How `node`'s weight is packed: panels of `block` output channels, `padded` of them in all
// (more than the node's when no panel width divides them).
struct Panels {
  int64_t block = 0;  // 0: not packed
  int64_t padded = 0;
};

Panels PanelsFor(const ir::GraphFunction& fn, const ir::Node& node, const PanelSpec& spec) {
  if (node.kind != ir::NodeKind::kCall || node.op != "conv2d") return {};
  if (node.attrs.GetInt("groups") != 1) return {};
  const std::string& data_layout = node.attrs.GetString("data_layout");
  const std::string& kernel_layout = node.attrs.GetString("kernel_layout");
  if (!Plain(data_layout) || !Plain(kernel_layout) || data_layout.back() != 'C') return {};
  const ir::Tensor* weight = ConstantValue(fn, node.inputs[1]);
  if (weight == nullptr || !ir::IsFloat(weight->dtype())) return {};
  const std::string& tag = weight->type().layout;
  if (!tag.empty() && tag != kernel_layout) return {};
  int64_t out_channels = weight->shape()[kernel_layout.find('O')];
  int64_t block = PanelWidth(weight->dtype(), spec);
  // The default panel (two vector registers) falls back to one cache line of elements when it
  // does not divide the output channels (240 channels: panels of 16 on AVX-512), then to one
  // vector register (1000 channels: panels of 8 on AVX2). Where none divides them (1000 on
  // AVX-512), many channels are padded to whole cache-line panels: unpacked, the rows of
  // 4000 bytes would put half of a tile's vector loads across two cache lines.
  if (spec.block == 0 && out_channels % block != 0) {
    int64_t vector = std::max<int64_t>(2, block / 2);
    int64_t line = PanelWidth(weight->dtype(), PanelSpec{.block = 0, .default_bytes = 64});
    block = out_channels % line == 0 ? line : vector;
    if (out_channels % block != 0 && out_channels >= kMinPaddedChannels) {
      return {line, (out_channels + line - 1) / line * line};
    }
  }
  if (out_channels % block != 0 || out_channels <= block) return {};
  return {block, out_channels};
}

ir::GraphFunction PackConvWeights(const ir::GraphFunction& fn, const PanelSpec& spec) {
  return RewriteNodes(
      fn,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        const ir::Node& node = fn.node(id);
        Panels panels = PanelsFor(fn, node, spec);
        if (panels.block == 0) return -1;
        const std::string& kernel_layout = node.attrs.GetString("kernel_layout");
        std::string packed_layout = fmt::format("OHWI{}o", panels.block);
        ir::Tensor weight = *ConstantValue(fn, node.inputs[1]);
        int64_t out_channels = weight.shape()[kernel_layout.find('O')];
        if (panels.padded != out_channels) {
          // Zero output channels appended (pad_width: all begins, then all ends).
          std::vector<int64_t> pad_width(2 * weight.shape().size(), 0);
          pad_width[weight.shape().size() + kernel_layout.find('O')] = panels.padded - out_channels;
          weight = EvaluateConstant("pad", {weight}, ir::Attrs{{"pad_width", pad_width}});
        }
        ir::Tensor packed = EvaluateConstant(
            "layout_transform", {weight},
            ir::Attrs{{"src_layout", kernel_layout}, {"dst_layout", packed_layout}});
        ir::Attrs attrs = node.attrs;
        attrs.Set("kernel_layout", packed_layout);
        if (panels.padded == out_channels) {
          return ReplaceWeight(fn, node, out, map, node.op, packed, attrs, "_packed");
        }
        // Padded: the convolution computes the zero channels too, a slice drops them.
        ir::ValueId conv = AppendWithWeight(fn, node, out, map, node.op, packed, attrs, "_packed",
                                            node.name + "_padded");
        auto channel_axis = static_cast<int64_t>(node.attrs.GetString("data_layout").find('C'));
        ir::ValueId sliced = AppendCall(out, "strided_slice", {conv},
                                        ir::Attrs{{"begin", std::vector<int64_t>{0}},
                                                  {"end", std::vector<int64_t>{out_channels}},
                                                  {"strides", std::vector<int64_t>{1}},
                                                  {"axes", std::vector<int64_t>{channel_axis}}},
                                        node.name);
        return out.type_of(sliced) == node.type ? sliced : -1;
      });
}

}  // namespace

void RegisterPackConvWeights(PassRegistry& registry) {
  RegisterPanelPackingPass(
      registry, "PackConvWeights",
      "Give a channels-last conv2d with a constant weight the kernel layout OHWI{nb}o (panels of "
      "nb output channels, taps then input channels) at compile time, so that a register tile "
      "streams contiguous weights "
      "(after backend placement, like PackMatmulWeights).",
      /*default_vectors=*/2, PackConvWeights);
}

}  // namespace tandem::passes
