// PackMatmulWeights: matmul(x, W) and batch_matmul(x, W) with a constant W [..., K, N] become
// packed_matmul(x, P) with P [..., N/nb, K, nb] = W cut into column panels nb wide, computed at
// compile time. When nb does not divide N (an ImageNet classifier's 1000 classes), the last
// panel is padded with zero columns and packed_matmul's `columns` attribute keeps N.
//
// Why: a register tile of our kernels covers nb (or a multiple of nb) columns and walks k; in
// the plain layout consecutive k are a whole row (4 N bytes) apart, so once rows reach a few KiB
// every step of k touches another page and every row falls into the same few cache sets (on the
// BERT feed-forward GEMMs the tile ran at ~55% of the FMA peak, ~80% with panels). In panels
// the tile streams one contiguous block. oneDNN packs its weights itself, so the pass runs after
// backend placement and leaves call_extern nodes alone. nb defaults to two vector registers of
// the target and at least one 64-byte cache line (32 f32 with AVX-512, 16 with AVX2): a register
// tile two vectors wide then reads one panel row per k, which halves the broadcasts per FMA
// against a one-vector tile (AVX-512: the 8x32 tile instead of 16x16). Values are unchanged (the
// same products in the same order of k).
#include <fmt/format.h>

#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

// W [..., K, N] with zero columns appended up to a multiple of `block`.
ir::Tensor PadColumns(const ir::Tensor& weight, int64_t block) {
  ir::Shape shape = weight.shape();
  int64_t n = shape.back();
  int64_t padded_n = (n + block - 1) / block * block;
  if (padded_n == n) return weight;
  shape.back() = padded_n;
  ir::Tensor padded(shape, weight.dtype());
  int64_t rows = ir::NumElements(shape) / padded_n;
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t j = 0; j < n; ++j) padded.SetDouble(row * padded_n + j, weight.GetDouble(row * n + j));
  }
  return padded;
}

// W [..., K, N] -> [..., ceil(N/nb), K, nb] (the last panel's columns past N are zeros).
ir::Tensor PackColumns(const ir::Tensor& weight, int64_t block) {
  ir::Tensor padded = PadColumns(weight, block);
  ir::Shape shape = padded.shape();
  size_t rank = shape.size();
  int64_t n = shape[rank - 1];
  ir::Shape split(shape.begin(), shape.end() - 1);
  split.push_back(n / block);
  split.push_back(block);
  ir::Tensor reshaped = EvaluateConstant("reshape", {padded}, ir::Attrs{{"newshape", split}});
  std::vector<int64_t> axes;
  for (size_t d = 0; d + 2 < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  axes.push_back(static_cast<int64_t>(rank) - 1);  // N / nb
  axes.push_back(static_cast<int64_t>(rank) - 2);  // K
  axes.push_back(static_cast<int64_t>(rank));      // nb
  return EvaluateConstant("transpose", {reshaped}, ir::Attrs{{"axes", axes}});
}

bool Packable(const ir::GraphFunction& fn, const ir::Node& node, const PanelSpec& spec) {
  if (node.kind != ir::NodeKind::kCall) return false;
  if (node.op == "batch_matmul") {
    if (node.attrs.GetInt("transpose_a") != 0 || node.attrs.GetInt("transpose_b") != 0) {
      return false;
    }
  } else if (node.op != "matmul") {
    return false;
  }
  const ir::Tensor* weight = ConstantValue(fn, node.inputs[1]);
  const ir::TensorType& data = fn.type_of(node.inputs[0]).tensor();
  if (weight == nullptr || weight->rank() < 2 || data.rank() < 2) return false;
  if (!data.layout.empty() || !weight->type().layout.empty()) return false;
  if (!ir::IsFloat(weight->dtype())) return false;
  int64_t block = PanelWidth(weight->dtype(), spec);
  return weight->shape().back() > block;
}

ir::GraphFunction PackMatmulWeights(const ir::GraphFunction& fn, const PanelSpec& spec) {
  return RewriteNodes(fn,
                      [&](ir::ValueId id, ir::GraphFunction& out,
                          const std::vector<ir::ValueId>& map) -> ir::ValueId {
                        const ir::Node& node = fn.node(id);
                        if (!Packable(fn, node, spec)) return -1;
                        const ir::Tensor& weight = *ConstantValue(fn, node.inputs[1]);
                        int64_t block = PanelWidth(weight.dtype(), spec);
                        int64_t n = weight.shape().back();
                        ir::Attrs attrs;
                        if (n % block != 0) attrs = ir::Attrs{{"columns", n}};
                        return ReplaceWeight(fn, node, out, map, "packed_matmul",
                                             PackColumns(weight, block), attrs, "_packed");
                      });
}

}  // namespace

void RegisterPackMatmulWeights(PassRegistry& registry) {
  RegisterPanelPackingPass(
      registry, "PackMatmulWeights",
      "Turn matmul/batch_matmul with a constant weight [..., K, N] into packed_matmul with the "
      "weight cut into column panels [..., N/nb, K, nb] at compile time (the last panel padded with "
      "zero columns when nb does not divide N), so that a register tile streams contiguous memory "
      "(after backend placement: oneDNN packs its own).",
      /*default_vectors=*/2, PackMatmulWeights);
}

}  // namespace tandem::passes
