#include "passes/heuristic/rewrite_helpers.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include <variant>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/constant_fold_memo.h"

namespace tandem::passes {

ir::ValueId AppendTupleGetItem(ir::GraphFunction& out, ir::ValueId tuple, int64_t index,
                               const std::string& name) {
  ir::Node node;
  node.kind = ir::NodeKind::kTupleGetItem;
  node.name = name;
  node.inputs = {tuple};
  node.attrs.Set("index", index);
  node.type = out.type_of(tuple).fields().at(static_cast<size_t>(index));
  return AppendNode(out, std::move(node));
}

ir::ValueId AppendWithWeight(const ir::GraphFunction& fn, const ir::Node& node,
                             ir::GraphFunction& out, const std::vector<ir::ValueId>& map,
                             const std::string& op, const ir::Tensor& weight, ir::Attrs attrs,
                             const std::string& suffix, const std::string& name) {
  ir::ValueId constant = AppendConstant(out, weight, fn.node(node.inputs[1]).name + suffix);
  return AppendCall(out, op, {map[static_cast<size_t>(node.inputs[0])], constant}, std::move(attrs),
                    name, node.annotations);
}

ir::ValueId ReplaceWeight(const ir::GraphFunction& fn, const ir::Node& node, ir::GraphFunction& out,
                          const std::vector<ir::ValueId>& map, const std::string& op,
                          const ir::Tensor& weight, ir::Attrs attrs, const std::string& suffix) {
  ir::ValueId result =
      AppendWithWeight(fn, node, out, map, op, weight, std::move(attrs), suffix, node.name);
  return out.type_of(result) == node.type ? result : -1;
}

void RegisterPanelPackingPass(
    PassRegistry& registry, const std::string& name, const std::string& doc, int default_vectors,
    std::function<ir::GraphFunction(const ir::GraphFunction&, const PanelSpec& spec)> rewrite) {
  struct Options {
    int64_t block = 0;
  };
  std::string default_text =
      default_vectors > 0
          ? fmt::format(
                "0: {} vector registers of the target, at least a 64-byte cache line; "
                "32 f32 with AVX-512, 16 with AVX2",
                default_vectors)
          : "0: one 64-byte cache line of elements, 16 f32";
  RegisterFunctionPass<Options>(
      registry,
      {.name = name,
       .summary = doc,
       .required = {"InferType"},
       .arguments = {{"block", &Options::block, "panel width nb (" + default_text + ")"}}},
      [name, rewrite, default_vectors](const ir::IRModule& module, PassContext& context,
                                       const Options& options) {
        int64_t block = options.block;
        if (block < 0 || block == 1) {
          throw ir::Error(fmt::format("{}: block must be 0 (the default) or at least 2 but is {}",
                                      name, block));
        }
        PanelSpec spec{.block = block, .default_bytes = 64};
        if (default_vectors > 0 && context.target.kind == "llvm") {
          int64_t vector_bytes =
              int64_t{4} * backends::DefaultScheduleOptionsFor(context.target).vector_lanes;
          spec.default_bytes =
              std::max<int64_t>(spec.default_bytes, default_vectors * vector_bytes);
        }
        return MapGraphFunctions(module,
                                 [&](const ir::GraphFunction& fn) { return rewrite(fn, spec); });
      });
}

int64_t PanelWidth(ir::DataType dtype, const PanelSpec& spec) {
  return spec.block > 0 ? spec.block : std::max<int64_t>(2, spec.default_bytes / ir::SizeOf(dtype));
}

void RegisterGraphRewritePass(PassRegistry& registry, const std::string& name,
                              const std::string& doc,
                              std::function<ir::GraphFunction(const ir::GraphFunction&)> rewrite) {
  RegisterFunctionPass<NoOptions>(
      registry, {.name = name, .summary = doc, .required = {"InferType"}},
      [rewrite](const ir::IRModule& module, PassContext&, const NoOptions&) {
        return MapGraphFunctions(module, rewrite);
      });
}

ir::GraphFunction RewriteToFixpoint(const ir::GraphFunction& function,
                                    const std::vector<RewriteRule>& rules, int max_sweeps) {
  ir::GraphFunction current = function;
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    bool changed = false;
    std::vector<int> uses = UseCounts(current);
    const ir::GraphFunction& fn = current;
    ir::GraphFunction next =
        RewriteNodes(fn,
                     [&](ir::ValueId id, ir::GraphFunction& out,
                         const std::vector<ir::ValueId>& map) -> ir::ValueId {
                       const ir::Node& node = fn.node(id);
                       if (node.kind != ir::NodeKind::kCall || !node.type.is_tensor()) return -1;
                       for (const RewriteRule& rule : rules) {
                         ir::ValueId result = rule(fn, uses, out, map, id);
                         if (result < 0) continue;
                         // Nodes appended by a rejected rewrite are unused and dropped by
                         // RewriteNodes.
                         if (out.type_of(result) != node.type) return -1;
                         changed = true;
                         return result;
                       }
                       return -1;
                     });
    current = std::move(next);
    if (!changed) break;
  }
  return current;
}

bool IsReshapeLike(const ir::Node& node) {
  static const std::set<std::string> kOps = {"reshape", "flatten", "squeeze", "expand_dims"};
  return node.kind == ir::NodeKind::kCall && kOps.count(node.op) != 0;
}

const ir::Tensor* ConstantValue(const ir::GraphFunction& function, ir::ValueId id) {
  const ir::Node& node = function.node(id);
  return node.kind == ir::NodeKind::kConstant ? &node.value : nullptr;
}

bool AllElementsEqual(const ir::Tensor& tensor, double value) {
  if (tensor.num_elements() == 0) return false;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    if (tensor.GetDouble(i) != value) return false;
  }
  return true;
}

std::vector<std::vector<ir::ValueId>> Consumers(const ir::GraphFunction& function) {
  std::vector<std::vector<ir::ValueId>> consumers(function.nodes.size());
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    for (ir::ValueId in : function.nodes[i].inputs) {
      consumers[static_cast<size_t>(in)].push_back(static_cast<ir::ValueId>(i));
    }
  }
  return consumers;
}

ir::Tensor EvaluateConstant(const std::string& op, const std::vector<ir::Tensor>& operands,
                            ir::Attrs attrs) {
  std::vector<ir::Type> types;
  for (const ir::Tensor& t : operands) types.push_back(ir::TensorType{t.shape(), t.dtype(), ""});
  ir::Type result = ir::InferCallType(op, types, attrs);
  return FoldWithMemo(op, operands, attrs, result).at(0).WithLayout("");
}

void CheckMinBranches(const MinBranchesOptions& options, const std::string& pass) {
  int64_t min_branches = options.min_branches;
  if (min_branches < 2) {
    throw ir::Error(fmt::format("min_branches must be at least 2 but is {}", min_branches),
                    ir::ErrorLocation{.pass = pass});
  }
}

}  // namespace tandem::passes
