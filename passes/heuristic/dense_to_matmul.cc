// DenseToMatmul: dense(x, W) with a constant weight W [N, K] becomes matmul(x, W^T) with W^T
// [K, N] computed at compile time.
//
// Why: a dense reads its weight with stride K along the output axis N, the axis our kernels
// vectorize, so its register tile cannot load the weight as vectors and the default schedule
// falls back to a per-lane reduction (several times slower); matmul reads the
// transposed weight contiguously along N. External backends take both forms (oneDNN packs the
// weight at build either way). The result has the same type and values (the products and sums
// are the same, in the same order of k).
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

ir::GraphFunction DenseToMatmul(const ir::GraphFunction& fn) {
  return RewriteNodes(
      fn,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        const ir::Node& node = fn.node(id);
        if (node.kind != ir::NodeKind::kCall || node.op != "dense") return -1;
        const ir::Tensor* weight = ConstantValue(fn, node.inputs[1]);
        if (weight == nullptr || weight->rank() != 2) return -1;
        const ir::TensorType& data = fn.type_of(node.inputs[0]).tensor();
        if (data.rank() < 2 || !data.layout.empty()) return -1;
        ir::Tensor transposed = EvaluateConstant("transpose", {*weight},
                                                 ir::Attrs{{"axes", std::vector<int64_t>{1, 0}}});
        return ReplaceWeight(fn, node, out, map, "matmul", transposed, {}, "_transposed");
      });
}

}  // namespace

void RegisterDenseToMatmul(PassRegistry& registry) {
  RegisterGraphRewritePass(
      registry, "DenseToMatmul",
      "Turn dense(x, W) with a constant weight into matmul(x, W^T), W^T folded at compile "
      "time, so that kernels read the weight contiguously along the output axis.",
      DenseToMatmul);
}

}  // namespace tandem::passes
