// CombineParallelMatmul: linear layers that read the same data, such as BERT's query, key and
// value projections, become one dense call over the weights concatenated at compile time,
// followed by one strided_slice per branch along the last axis, which replaces the branch's
// result. (A slice per branch rather than one split: a slice is injective, so FuseOps can fuse
// it with the branch's following reshape or transpose; the tuple of a split is never fused.)
//
// A branch is `dense(x, W)` with a constant W [N_i, K], or `matmul(x, B)` with a constant 2-D
// B [K, N_i] (which computes dense(x, transpose(B))). Branches of one group read the same x and
// have the same dtype and annotations. When every branch is read only by an `add` of a constant
// bias of shape [N_i] (in either operand order), the biases are concatenated too and added once
// before the slices, and the slices replace the adds. Only groups of at least
// `min_branches` branches are combined.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

// The weight of a branch laid out as dense takes it ([N, K]), or an undefined tensor when the
// node is not a branch.
ir::Tensor DenseWeight(const ir::GraphFunction& fn, const ir::Node& node) {
  if (node.kind != ir::NodeKind::kCall || !node.type.is_tensor()) return {};
  if (node.op != "dense" && node.op != "matmul") return {};
  const ir::Tensor* weight = ConstantValue(fn, node.inputs[1]);
  if (weight == nullptr || weight->rank() != 2) return {};
  if (ConstantValue(fn, node.inputs[0]) != nullptr) return {};  // FoldConstant's job
  if (node.op == "dense") return *weight;
  return EvaluateConstant("transpose", {*weight}, ir::Attrs{{"axes", std::vector<int64_t>{1, 0}}});
}

struct Branch {
  ir::ValueId call = -1;
  ir::Tensor weight;     // [N, K]
  ir::ValueId add = -1;  // the bias add reading the call, or -1
  ir::Tensor bias;       // [N]
};

struct Group {
  std::vector<Branch> branches;  // in node order
  bool with_bias = false;
  ir::ValueId combined = -1;     // the combined result, in the rewritten function
  std::vector<int64_t> offsets;  // where each branch's columns start in it
};

// The bias add that alone reads `call`, if any.
void FindBias(const ir::GraphFunction& fn, const std::vector<int>& uses,
              const std::vector<std::vector<ir::ValueId>>& consumers, Branch& branch) {
  size_t call = static_cast<size_t>(branch.call);
  if (uses[call] != 1 || consumers[call].size() != 1) return;
  const ir::Node& add = fn.node(consumers[call][0]);
  if (add.kind != ir::NodeKind::kCall || add.op != "add") return;
  if (add.type != fn.type_of(branch.call)) return;
  ir::ValueId other = add.inputs[0] == branch.call ? add.inputs[1] : add.inputs[0];
  const ir::Tensor* bias = ConstantValue(fn, other);
  if (bias == nullptr || bias->shape() != ir::Shape{branch.weight.shape()[0]} ||
      bias->dtype() != branch.weight.dtype()) {
    return;
  }
  branch.add = consumers[call][0];
  branch.bias = *bias;
}

std::vector<Group> FindGroups(const ir::GraphFunction& fn, int64_t min_branches) {
  std::map<std::string, Group> by_key;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const ir::Node& node = fn.nodes[i];
    ir::Tensor weight = DenseWeight(fn, node);
    if (!weight.defined() || weight.rank() != 2) continue;
    std::string key = fmt::format("{}|{}|{}", node.inputs[0], ir::ToString(weight.dtype()),
                                  ir::ToString(node.annotations));
    by_key[key].branches.push_back(Branch{static_cast<ir::ValueId>(i), weight});
  }
  std::vector<int> uses = UseCounts(fn);
  std::vector<std::vector<ir::ValueId>> consumers = Consumers(fn);
  std::vector<Group> groups;
  for (auto& [key, group] : by_key) {
    if (static_cast<int64_t>(group.branches.size()) < min_branches) continue;
    group.with_bias = true;
    for (Branch& branch : group.branches) {
      FindBias(fn, uses, consumers, branch);
      group.with_bias = group.with_bias && branch.add >= 0;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

ir::GraphFunction Combine(const ir::GraphFunction& fn, int64_t min_branches) {
  std::vector<Group> groups = FindGroups(fn, min_branches);
  if (groups.empty()) return fn;
  // The node each branch's field replaces (the add with a merged bias, else the call).
  std::map<ir::ValueId, std::pair<size_t, size_t>> replaced;
  std::map<ir::ValueId, size_t> first_call;
  for (size_t g = 0; g < groups.size(); ++g) {
    first_call[groups[g].branches[0].call] = g;
    for (size_t b = 0; b < groups[g].branches.size(); ++b) {
      const Branch& branch = groups[g].branches[b];
      replaced[groups[g].with_bias ? branch.add : branch.call] = {g, b};
    }
  }
  return RewriteNodes(
      fn,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        if (auto first = first_call.find(id); first != first_call.end()) {
          Group& group = groups[first->second];
          const ir::Node& node = fn.node(id);
          std::vector<ir::Tensor> weights, biases;
          int64_t offset = 0;
          for (const Branch& branch : group.branches) {
            weights.push_back(branch.weight);
            biases.push_back(branch.bias);
            group.offsets.push_back(offset);
            offset += branch.weight.shape()[0];
          }
          ir::ValueId weight = AppendConstant(
              out, EvaluateConstant("concat", weights, ir::Attrs{{"axis", int64_t{0}}}),
              node.name + "_combined_weight");
          ir::ValueId data = map[static_cast<size_t>(node.inputs[0])];
          ir::ValueId combined = AppendCall(out, "dense", {data, weight}, {},
                                            node.name + "_combined", node.annotations);
          if (group.with_bias) {
            ir::ValueId bias = AppendConstant(
                out, EvaluateConstant("concat", biases, ir::Attrs{{"axis", int64_t{0}}}),
                node.name + "_combined_bias");
            combined = AppendCall(out, "add", {combined, bias}, {}, node.name + "_combined_biased");
          }
          group.combined = combined;
        }
        auto it = replaced.find(id);
        if (it == replaced.end()) return -1;
        const Group& group = groups[it->second.first];
        size_t b = it->second.second;
        int64_t begin = group.offsets[b];
        int64_t end = begin + group.branches[b].weight.shape()[0];
        int64_t last_axis = out.type_of(group.combined).tensor().rank() - 1;
        return AppendCall(out, "strided_slice", {group.combined},
                          ir::Attrs{{"begin", std::vector<int64_t>{begin}},
                                    {"end", std::vector<int64_t>{end}},
                                    {"strides", std::vector<int64_t>{1}},
                                    {"axes", std::vector<int64_t>{last_axis}}},
                          fn.node(id).name);
      });
}

}  // namespace

void RegisterCombineParallelMatmul(PassRegistry& registry) {
  RegisterFunctionPass<MinBranchesOptions>(
      registry,
      {.name = "CombineParallelMatmul",
       .summary =
           "Combine dense (and matmul with a constant 2-D right operand) calls reading the same "
           "data into one dense over concatenated weights (and biases), sliced per branch.",
       .required = {"InferType"},
       .arguments = {{"min_branches", &MinBranchesOptions::min_branches,
                      "fewest parallel linear layers worth combining"}},
       .check =
           [](const MinBranchesOptions& options) {
             CheckMinBranches(options, "CombineParallelMatmul");
           }},
      [](const ir::IRModule& module, PassContext&, const MinBranchesOptions& options) {
        return MapGraphFunctions(
            module, [&](const ir::GraphFunction& fn) { return Combine(fn, options.min_branches); });
      });
}

}  // namespace tandem::passes
