// DeadCodeElimination: removes nodes the returned value does not depend on, and kernel
// functions and extern functions (backend-placed subgraphs) no graph function calls any more.
#include <set>

#include "passes/graph_utils.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

ir::IRModule EliminateDeadCode(const ir::IRModule& module) {
  ir::IRModule out = MapGraphFunctions(module, RemoveUnusedNodes);
  std::set<std::string> called;
  for (const auto& [name, fn] : out.graph_functions()) {
    for (const ir::Node& n : fn->nodes) {
      if (n.kind == ir::NodeKind::kCallKernel || n.kind == ir::NodeKind::kCallExtern) {
        called.insert(n.callee);
      }
    }
  }
  for (const auto& [name, kernel] : module.kernel_functions()) {
    if (!called.count(name)) out.RemoveKernel(name);
  }
  for (const auto& [name, fn] : module.graph_functions()) {
    if (!fn->ExternBackend().empty() && !called.count(name)) out.Remove(name);
  }
  return out;
}

}  // namespace

void RegisterDeadCodeElimination(PassRegistry& registry) {
  RegisterFunctionPass<NoOptions>(
      registry,
      {.name = "DeadCodeElimination",
       .summary = "Remove nodes the result does not depend on, and uncalled kernel functions."},
      [](const ir::IRModule& module, PassContext&, const NoOptions&) {
        return EliminateDeadCode(module);
      });
}

}  // namespace tandem::passes
