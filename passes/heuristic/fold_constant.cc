// FoldConstant: evaluates op calls whose operands are all constants (with the op's reference
// semantics) and replaces them with constants; a tuple_get_item of a folded tuple becomes the
// field. Results larger than `max_bytes` are left as calls so weights are not duplicated. The
// same fold of the same constants in a later module is answered from a memo
// (constant_fold_memo.h).
#include "passes/graph_utils.h"
#include "passes/heuristic/constant_fold_memo.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

ir::GraphFunction Fold(const ir::GraphFunction& fn, int64_t max_bytes) {
  // Constant values of folded tuples, by new id.
  std::map<ir::ValueId, std::vector<ir::Tensor>> tuples;
  return RewriteNodes(
      fn,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        const ir::Node& node = fn.node(id);
        auto is_constant = [&](ir::ValueId old) {
          return out.node(map[static_cast<size_t>(old)]).kind == ir::NodeKind::kConstant;
        };
        if (node.kind == ir::NodeKind::kTupleGetItem) {
          auto it = tuples.find(map[static_cast<size_t>(node.inputs[0])]);
          if (it == tuples.end()) return -1;
          ir::Node c;
          c.kind = ir::NodeKind::kConstant;
          c.name = node.name;
          c.value = it->second.at(static_cast<size_t>(node.attrs.GetInt("index")));
          c.type = node.type;
          return AppendNode(out, std::move(c));
        }
        if (node.kind != ir::NodeKind::kCall || node.inputs.empty()) return -1;
        for (ir::ValueId in : node.inputs) {
          if (!is_constant(in)) return -1;
        }
        int64_t bytes = 0;
        if (node.type.is_tensor()) {
          bytes = node.type.tensor().num_bytes();
        } else {
          for (const ir::Type& f : node.type.fields())
            bytes += f.is_tensor() ? f.tensor().num_bytes() : 0;
        }
        if (max_bytes >= 0 && bytes > max_bytes) return -1;
        std::vector<ir::Tensor> operands;
        for (ir::ValueId in : node.inputs)
          operands.push_back(out.node(map[static_cast<size_t>(in)]).value);
        std::vector<ir::Tensor> results = FoldWithMemo(node.op, operands, node.attrs, node.type);
        if (!node.type.is_tensor()) {
          // Keep the call for the tuple itself (its fields fold through tuple_get_item).
          ir::Node n = node;
          for (ir::ValueId& in : n.inputs) in = map[static_cast<size_t>(in)];
          ir::ValueId kept = AppendNode(out, std::move(n));
          tuples[kept] = results;
          return kept;
        }
        ir::Node c;
        c.kind = ir::NodeKind::kConstant;
        c.name = node.name;
        c.value = results.at(0).WithLayout("");
        c.type = node.type;
        return AppendNode(out, std::move(c));
      });
}

}  // namespace

void RegisterFoldConstant(PassRegistry& registry) {
  struct Options {
    int64_t max_bytes = -1;
  };
  RegisterFunctionPass<Options>(
      registry,
      {.name = "FoldConstant",
       .summary = "Evaluate op calls whose operands are all constants.",
       .arguments = {{"max_bytes", &Options::max_bytes,
                      "largest folded result in bytes (-1: no limit)"}}},
      [](const ir::IRModule& module, PassContext&, const Options& options) {
        return MapGraphFunctions(
            module, [&](const ir::GraphFunction& fn) { return Fold(fn, options.max_bytes); });
      });
}

}  // namespace tandem::passes
