// Helpers shared by the heuristic rewriting passes (SimplifyExpr, CombineParallel*): appending
// type-checked nodes during RewriteNodes, reading constants, consumer lists, compile-time tensor
// ops, and the registration of the passes that share one declaration form.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_append.h"
#include "passes/pass.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

using ir::AppendCall;
using ir::AppendConstant;
// Appends `op`(data of `node`, `weight`) with `attrs` and `node`'s annotations, named `name`, the
// new constant named after `node`'s weight plus `suffix`; the id of the call in `out`.
ir::ValueId AppendWithWeight(const ir::GraphFunction& fn, const ir::Node& node,
                             ir::GraphFunction& out, const std::vector<ir::ValueId>& map,
                             const std::string& op, const ir::Tensor& weight, ir::Attrs attrs,
                             const std::string& suffix, const std::string& name);
// The rewrite of a call `node` of `fn` (data, weight) into `op`(data, `weight`) with `attrs`,
// the new constant named after the old weight plus `suffix`: the id of the new call in `out`, or
// -1 when its type differs from the node's (the appended nodes are then unused and dropped by
// RewriteNodes). The shared last step of DenseToMatmul, PackMatmulWeights and PackConvWeights.
ir::ValueId ReplaceWeight(const ir::GraphFunction& fn, const ir::Node& node, ir::GraphFunction& out,
                          const std::vector<ir::ValueId>& map, const std::string& op,
                          const ir::Tensor& weight, ir::Attrs attrs, const std::string& suffix);
// Appends field `index` of the tuple value `tuple`.
ir::ValueId AppendTupleGetItem(ir::GraphFunction& out, ir::ValueId tuple, int64_t index,
                               const std::string& name);

// The panel width of a weight-packing pass: `block` elements when positive, else
// `default_bytes` of elements (at least 2).
struct PanelSpec {
  int64_t block = 0;
  int64_t default_bytes = 64;
};

// Registers a weight-packing pass (PackMatmulWeights, PackConvWeights): it needs InferType,
// takes the argument `block` (the panel width nb; 1 and negative widths are an ir::Error naming
// the pass) and rewrites every graph function with `rewrite(function, spec)`. When `block` is 0
// (the default) the panel is `default_vectors` vector registers of the pass context's target
// wide, and at least one 64-byte cache line (default_vectors 0: one cache line).
void RegisterPanelPackingPass(
    PassRegistry& registry, const std::string& name, const std::string& doc, int default_vectors,
    std::function<ir::GraphFunction(const ir::GraphFunction&, const PanelSpec& spec)> rewrite);
// The panel width of a weight-packing pass for elements of `dtype` (see PanelSpec).
int64_t PanelWidth(ir::DataType dtype, const PanelSpec& spec);

// Registers a heuristic pass without arguments that needs InferType and rewrites every graph
// function of the module (extern functions excepted) with `rewrite`.
void RegisterGraphRewritePass(PassRegistry& registry, const std::string& name,
                              const std::string& doc,
                              std::function<ir::GraphFunction(const ir::GraphFunction&)> rewrite);

// One local rewrite rule: given the function being swept (`fn`, its use counts), the function
// being rebuilt (`out`, `map` from fn's ids to out's) and a call node `id` of fn with a tensor
// result, returns the id in `out` that replaces the node, or -1 to leave it.
using RewriteRule = std::function<ir::ValueId(const ir::GraphFunction& fn,
                                              const std::vector<int>& uses, ir::GraphFunction& out,
                                              const std::vector<ir::ValueId>& map, ir::ValueId id)>;
// Rewrites `function` in sweeps until no rule fires (at most `max_sweeps`). In a sweep each call
// node with a tensor result is offered to the rules in order; the first rule that answers
// replaces the node, unless its result has another type than the node (then the node is kept).
ir::GraphFunction RewriteToFixpoint(const ir::GraphFunction& function,
                                    const std::vector<RewriteRule>& rules, int max_sweeps);

// True for a call of reshape, flatten, squeeze or expand_dims (ops that only regroup axes).
bool IsReshapeLike(const ir::Node& node);

// The data of node `id` when it is a constant, else nullptr.
const ir::Tensor* ConstantValue(const ir::GraphFunction& function, ir::ValueId id);
// True when `tensor` is non-empty and every element equals `value`.
bool AllElementsEqual(const ir::Tensor& tensor, double value);

// The nodes that read each node (one entry per operand use, in node order).
std::vector<std::vector<ir::ValueId>> Consumers(const ir::GraphFunction& function);

// Evaluates `op` on constant tensors with its reference semantics (attributes normalized
// first). Used to concatenate and transpose weights at compile time; exact for data movement.
ir::Tensor EvaluateConstant(const std::string& op, const std::vector<ir::Tensor>& operands,
                            ir::Attrs attrs);

// The options of CombineParallelConv2D and CombineParallelMatmul.
struct MinBranchesOptions {
  int64_t min_branches = 2;  // fewest parallel branches worth combining
};

// Throws ir::Error (naming `pass`) unless `min_branches` is at least 2.
void CheckMinBranches(const MinBranchesOptions& options, const std::string& pass);

}  // namespace tandem::passes
