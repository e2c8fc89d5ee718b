// AnnotateBackend: records on op calls which backend should run them, as the string annotation
// `backend` (read later by backend placement). `backend` names the backend (default "llvm");
// `ops` is a comma-separated list of op names (spaces allowed around names; empty: every op).
// Both op calls and call_kernel nodes (by the op they implement) are annotated; an existing
// `backend` annotation is replaced. Nothing else changes, so the module computes the same.
// An unknown op name in `ops` or an empty backend name is an error.
#include <fmt/format.h>

#include <set>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

// The op names of `ops`; empty means every op. Throws ir::Error for unknown names.
std::set<std::string> ParseOpList(const std::string& ops) {
  std::set<std::string> names;
  if (Trim(ops).empty()) return names;
  size_t start = 0;
  while (true) {
    size_t comma = ops.find(',', start);
    std::string name = Trim(ops.substr(start, comma == std::string::npos ? comma : comma - start));
    if (name.empty()) {
      throw ir::Error(fmt::format("AnnotateBackend: ops \"{}\" has an empty op name", ops));
    }
    ir::OpRegistry::Global().Get(name);  // throws "unknown op" with close names
    names.insert(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

ir::GraphFunction Annotate(const ir::GraphFunction& fn, const std::string& backend,
                           const std::set<std::string>& ops) {
  ir::GraphFunction out = fn;
  for (ir::Node& node : out.nodes) {
    bool is_op = node.kind == ir::NodeKind::kCall ||
                 (node.kind == ir::NodeKind::kCallKernel && !node.op.empty());
    if (!is_op || (!ops.empty() && !ops.count(node.op))) continue;
    node.annotations.Set("backend", backend);
  }
  return out;
}

}  // namespace

void RegisterAnnotateBackend(PassRegistry& registry) {
  struct Options {
    std::string backend = "llvm";
    std::string ops;
  };
  // The backend to record and the ops to annotate; a bad value is an error naming the pass.
  auto parse = [](const Options& options) {
    try {
      std::string backend = Trim(options.backend);
      if (backend.empty()) throw ir::Error("AnnotateBackend: backend must not be empty");
      return std::make_pair(backend, ParseOpList(options.ops));
    } catch (const ir::Error& e) {
      throw e.WithPass("AnnotateBackend");
    }
  };
  RegisterFunctionPass<Options>(
      registry,
      {.name = "AnnotateBackend",
       .summary = "Set the `backend` annotation on op calls (all, or those named in `ops`).",
       .arguments = {{"backend", &Options::backend,
                      "backend to record, e.g. \"llvm\", \"onednn\", \"cublas\""},
                     {"ops", &Options::ops,
                      "comma-separated op names to annotate (empty: every op)"}},
       .check = [parse](const Options& options) { parse(options); }},
      [parse](const ir::IRModule& module, PassContext&, const Options& options) {
        auto parsed = parse(options);  // (backend, ops)
        return MapGraphFunctions(module, [&](const ir::GraphFunction& fn) {
          return Annotate(fn, parsed.first, parsed.second);
        });
      });
}

}  // namespace tandem::passes
