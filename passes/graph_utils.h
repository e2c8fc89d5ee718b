// Small graph-rewriting helpers shared by the heuristic passes.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_append.h"

namespace tandem::passes {

// The function without nodes that the output does not depend on (parameters are kept), with
// operand ids renumbered.
ir::GraphFunction RemoveUnusedNodes(const ir::GraphFunction& function);

using ir::UseCounts;

// Rebuilds `function` node by node: `rewrite(node_id, builder, map)` returns the new id of a
// node (map translates old operand ids to new ones); returning -1 copies the node unchanged.
// Nodes are revisited in order, so a rewrite can look at already-rebuilt operands.
using NodeRewrite = std::function<ir::ValueId(ir::ValueId old_id, ir::GraphFunction& out,
                                              const std::vector<ir::ValueId>& map)>;
ir::GraphFunction RewriteNodes(const ir::GraphFunction& function, const NodeRewrite& rewrite);

using ir::AppendNode;

// Applies `fn` to every graph function of the module except extern functions (subgraphs placed
// on an external backend keep the form their backend compiles).
ir::IRModule MapGraphFunctions(
    const ir::IRModule& module,
    const std::function<ir::GraphFunction(const ir::GraphFunction&)>& fn);

}  // namespace tandem::passes
