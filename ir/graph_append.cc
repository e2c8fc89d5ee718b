#include "ir/graph_append.h"

#include <fmt/format.h>

#include <set>

#include "ir/op_registry.h"

namespace tandem::ir {

ValueId AppendNode(GraphFunction& out, Node node) {
  std::set<std::string> names;
  for (const Node& n : out.nodes) names.insert(n.name);
  std::string base = node.name.empty() ? "v" : node.name;
  std::string name = base;
  for (int i = 1; names.count(name); ++i) name = fmt::format("{}_{}", base, i);
  node.name = name;
  out.nodes.push_back(std::move(node));
  return static_cast<ValueId>(out.nodes.size() - 1);
}

ValueId AppendCall(GraphFunction& out, const std::string& op, const std::vector<ValueId>& inputs,
                   Attrs attrs, const std::string& name, const Attrs& annotations) {
  std::vector<Type> operands;
  for (ValueId id : inputs) operands.push_back(out.type_of(id));
  Node node;
  node.kind = NodeKind::kCall;
  node.op = op;
  node.name = name;
  node.inputs = inputs;
  node.type = InferCallType(op, operands, attrs);
  node.attrs = std::move(attrs);
  node.annotations = annotations;
  return AppendNode(out, std::move(node));
}

ValueId AppendConstant(GraphFunction& out, const Tensor& value, const std::string& name) {
  Node node;
  node.kind = NodeKind::kConstant;
  node.name = name;
  node.value = value.WithLayout("");
  node.type = TensorType{value.shape(), value.dtype(), ""};
  return AppendNode(out, std::move(node));
}

}  // namespace tandem::ir
