#include "passes/graph_utils.h"

#include <fmt/format.h>

#include <set>

namespace tandem::passes {

ir::GraphFunction RemoveUnusedNodes(const ir::GraphFunction& fn) {
  std::vector<bool> live(fn.nodes.size(), false);
  if (fn.output >= 0) live[static_cast<size_t>(fn.output)] = true;
  for (size_t i = fn.nodes.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (ir::ValueId in : fn.nodes[i].inputs) live[static_cast<size_t>(in)] = true;
  }
  for (ir::ValueId p : fn.params) live[static_cast<size_t>(p)] = true;
  ir::GraphFunction out;
  out.name = fn.name;
  out.attrs = fn.attrs;
  std::vector<ir::ValueId> map(fn.nodes.size(), -1);
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    if (!live[i]) continue;
    ir::Node n = fn.nodes[i];
    for (ir::ValueId& in : n.inputs) in = map[static_cast<size_t>(in)];
    map[i] = static_cast<ir::ValueId>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (ir::ValueId p : fn.params) out.params.push_back(map[static_cast<size_t>(p)]);
  out.output = map[static_cast<size_t>(fn.output)];
  return out;
}

ir::GraphFunction RewriteNodes(const ir::GraphFunction& fn, const NodeRewrite& rewrite) {
  ir::GraphFunction out;
  out.name = fn.name;
  out.attrs = fn.attrs;
  std::vector<ir::ValueId> map(fn.nodes.size(), -1);
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    ir::ValueId id = rewrite(static_cast<ir::ValueId>(i), out, map);
    if (id < 0) {
      ir::Node n = fn.nodes[i];
      for (ir::ValueId& in : n.inputs) in = map[static_cast<size_t>(in)];
      out.nodes.push_back(std::move(n));
      id = static_cast<ir::ValueId>(out.nodes.size() - 1);
    }
    map[i] = id;
  }
  for (ir::ValueId p : fn.params) out.params.push_back(map[static_cast<size_t>(p)]);
  out.output = map[static_cast<size_t>(fn.output)];
  return RemoveUnusedNodes(out);
}

ir::IRModule MapGraphFunctions(
    const ir::IRModule& module,
    const std::function<ir::GraphFunction(const ir::GraphFunction&)>& fn) {
  ir::IRModule out = module;
  for (const auto& [name, function] : module.graph_functions()) {
    if (function->ExternBackend().empty()) out.Add(fn(*function));
  }
  return out;
}

}  // namespace tandem::passes
