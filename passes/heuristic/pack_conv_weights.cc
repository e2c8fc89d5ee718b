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
// not divide the output channels, one vector register where that does not either.
// Grouped and depthwise convolutions are left alone (their weight rows are short). Values are
// unchanged (the same products in the same order).
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

// The panel width for `node`, or 0 when it is not packed.
int64_t PanelFor(const ir::GraphFunction& fn, const ir::Node& node, const PanelSpec& spec) {
  if (node.kind != ir::NodeKind::kCall || node.op != "conv2d") return 0;
  if (node.attrs.GetInt("groups") != 1) return 0;
  const std::string& data_layout = node.attrs.GetString("data_layout");
  const std::string& kernel_layout = node.attrs.GetString("kernel_layout");
  if (!Plain(data_layout) || !Plain(kernel_layout) || data_layout.back() != 'C') return 0;
  const ir::Tensor* weight = ConstantValue(fn, node.inputs[1]);
  if (weight == nullptr || !ir::IsFloat(weight->dtype())) return 0;
  const std::string& tag = weight->type().layout;
  if (!tag.empty() && tag != kernel_layout) return 0;
  int64_t out_channels = weight->shape()[kernel_layout.find('O')];
  int64_t block = PanelWidth(weight->dtype(), spec);
  // The default panel (two vector registers) falls back to one cache line of elements when it
  // does not divide the output channels (240 channels: panels of 16 on AVX-512), then to one
  // vector register (1000 channels: panels of 8 on AVX2).
  if (spec.block == 0 && out_channels % block != 0) {
    int64_t vector = std::max<int64_t>(2, block / 2);
    block = PanelWidth(weight->dtype(), PanelSpec{.block = 0, .default_bytes = 64});
    if (out_channels % block != 0) block = vector;
  }
  return out_channels % block == 0 && out_channels > block ? block : 0;
}

ir::GraphFunction PackConvWeights(const ir::GraphFunction& fn, const PanelSpec& spec) {
  return RewriteNodes(fn,
                      [&](ir::ValueId id, ir::GraphFunction& out,
                          const std::vector<ir::ValueId>& map) -> ir::ValueId {
                        const ir::Node& node = fn.node(id);
                        int64_t panel = PanelFor(fn, node, spec);
                        if (panel == 0) return -1;
                        std::string packed_layout = fmt::format("OHWI{}o", panel);
                        ir::Tensor packed = EvaluateConstant(
                            "layout_transform", {*ConstantValue(fn, node.inputs[1])},
                            ir::Attrs{{"src_layout", node.attrs.GetString("kernel_layout")},
                                      {"dst_layout", packed_layout}});
                        ir::Attrs attrs = node.attrs;
                        attrs.Set("kernel_layout", packed_layout);
                        return ReplaceWeight(fn, node, out, map, node.op, packed, attrs, "_packed");
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
