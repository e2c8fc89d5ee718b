// CombineParallelConv2D: conv2d calls that read the same data with the same attributes (strides,
// padding, dilation, groups = 1, layouts), the same kernel size and dtype, the same annotations,
// and constant weights, are replaced by one conv2d over the weights concatenated along the output
// channel axis (at compile time); each original result becomes a strided_slice of the combined
// result along its channel axis. Only groups of at least `min_branches` convolutions are
// combined, and only convolutions whose result has no layout tag (a slice's result has none).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

// The attributes, kernel extents and dtype that convolutions must share to be combined.
std::string CombineKey(const ir::GraphFunction& fn, const ir::Node& conv) {
  const ir::TensorType& weight = fn.type_of(conv.inputs[1]).tensor();
  const std::string& kernel_layout = conv.attrs.GetString("kernel_layout");
  ir::Shape kernel;
  for (size_t d = 0; d < kernel_layout.size() && d < weight.shape.size(); ++d) {
    if (kernel_layout[d] != 'O') kernel.push_back(weight.shape[d]);
  }
  return fmt::format("{}|{}|{}|{}", ir::ToString(conv.attrs), ir::ShapeToString(kernel),
                     ir::ToString(weight.dtype), ir::ToString(conv.annotations));
}

bool Combinable(const ir::GraphFunction& fn, const ir::Node& node) {
  if (node.kind != ir::NodeKind::kCall || node.op != "conv2d" || !node.type.is_tensor()) {
    return false;
  }
  if (node.attrs.GetInt("groups") != 1) return false;
  if (ConstantValue(fn, node.inputs[1]) == nullptr) return false;
  const std::string& kernel_layout = node.attrs.GetString("kernel_layout");
  const std::string& data_layout = node.attrs.GetString("data_layout");
  // A slice has no layout tag, so only untagged results can be replaced by slices.
  return kernel_layout.find('O') != std::string::npos &&
         data_layout.find('C') != std::string::npos && node.type.tensor().layout.empty();
}

// One group to combine: its convolutions in node order.
struct Group {
  std::vector<ir::ValueId> convs;
  ir::ValueId combined = -1;  // the combined conv in the rewritten function
};

ir::GraphFunction Combine(const ir::GraphFunction& fn, int64_t min_branches) {
  // Groups by (data operand, key), in node order of their first member.
  std::map<std::pair<ir::ValueId, std::string>, Group> by_key;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const ir::Node& node = fn.nodes[i];
    if (!Combinable(fn, node)) continue;
    by_key[{node.inputs[0], CombineKey(fn, node)}].convs.push_back(static_cast<ir::ValueId>(i));
  }
  std::vector<Group> groups;
  std::map<ir::ValueId, std::pair<size_t, size_t>> member;  // conv -> (group, branch)
  for (auto& [key, group] : by_key) {
    if (static_cast<int64_t>(group.convs.size()) < min_branches) continue;
    for (size_t b = 0; b < group.convs.size(); ++b) member[group.convs[b]] = {groups.size(), b};
    groups.push_back(group);
  }
  if (groups.empty()) return fn;

  return RewriteNodes(
      fn,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        auto it = member.find(id);
        if (it == member.end()) return -1;
        Group& group = groups[it->second.first];
        size_t branch = it->second.second;
        const ir::Node& node = fn.node(id);
        size_t out_axis = node.attrs.GetString("kernel_layout").find('O');
        int64_t channel_axis = static_cast<int64_t>(node.attrs.GetString("data_layout").find('C'));
        if (branch == 0) {
          std::vector<ir::Tensor> weights;
          for (ir::ValueId conv : group.convs) {
            weights.push_back(*ConstantValue(fn, fn.node(conv).inputs[1]));
          }
          ir::Tensor weight = EvaluateConstant("concat", weights,
                                               ir::Attrs{{"axis", static_cast<int64_t>(out_axis)}});
          ir::ValueId weight_id = AppendConstant(out, weight, node.name + "_combined_weight");
          group.combined =
              AppendCall(out, "conv2d", {map[static_cast<size_t>(node.inputs[0])], weight_id},
                         node.attrs, node.name + "_combined", node.annotations);
        }
        int64_t begin = 0;
        for (size_t b = 0; b < branch; ++b) {
          begin += fn.type_of(group.convs[b]).tensor().shape[static_cast<size_t>(channel_axis)];
        }
        int64_t end = begin + node.type.tensor().shape[static_cast<size_t>(channel_axis)];
        ir::Attrs slice{{"begin", std::vector<int64_t>{begin}},
                        {"end", std::vector<int64_t>{end}},
                        {"strides", std::vector<int64_t>{1}},
                        {"axes", std::vector<int64_t>{channel_axis}}};
        return AppendCall(out, "strided_slice", {group.combined}, slice, node.name);
      });
}

}  // namespace

void RegisterCombineParallelConv2D(PassRegistry& registry) {
  RegisterFunctionPass<MinBranchesOptions>(
      registry,
      {.name = "CombineParallelConv2D",
       .summary =
           "Combine conv2d calls reading the same data with equal attributes and kernel size "
           "into one conv2d over concatenated constant weights, sliced per branch.",
       .required = {"InferType"},
       .arguments = {{"min_branches", &MinBranchesOptions::min_branches,
                      "fewest parallel convolutions worth combining"}},
       .check =
           [](const MinBranchesOptions& options) {
             CheckMinBranches(options, "CombineParallelConv2D");
           }},
      [](const ir::IRModule& module, PassContext&, const MinBranchesOptions& options) {
        return MapGraphFunctions(
            module, [&](const ir::GraphFunction& fn) { return Combine(fn, options.min_branches); });
      });
}

}  // namespace tandem::passes
