// Appending nodes to a graph function being rebuilt node by node (the graph rewriting passes, the
// dynamic build's rewrite of means): each appended node is type-checked as GraphBuilder checks it.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::ir {

// Appends a node to `out` (operands already in `out`'s numbering) with a name unique in `out`
// (its own, or "v", with "_1", "_2", ... appended when taken); its id in `out`.
ValueId AppendNode(GraphFunction& out, Node node);
// Appends a call of `op` on `inputs` (ids in `out`) to `out`; the attributes are normalized and
// the result type inferred exactly as GraphBuilder::Call does (a type error throws ir::Error).
ValueId AppendCall(GraphFunction& out, const std::string& op, const std::vector<ValueId>& inputs,
                   Attrs attrs, const std::string& name, const Attrs& annotations = {});
// Appends a constant node holding `value` (its type is the value's, without layout).
ValueId AppendConstant(GraphFunction& out, const Tensor& value, const std::string& name);

}  // namespace tandem::ir
