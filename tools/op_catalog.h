// The operator catalog of `tandem ops` and `tandem.ops()`: every registered graph op with the
// implementations registered for it: its compute definition (kernels/compute), the default
// schedule each code generator's target kind gives its kernels (kernels/default_schedule.h), and
// the external backends whose patterns take it, as anchor or as an epilogue step
// (backends/external). Built from the registries at the time of the call, so a plugin's backend
// shows once the plugin is loaded.
#pragma once

#include <string>
#include <vector>

namespace tandem::tools {

struct OpBackendUse {
  std::string backend;
  std::string pattern;     // the pattern's name
  std::string role;        // "anchor" or "epilogue"
  std::string matcher;     // the op's matcher as text, with its constraints
  bool available = false;  // on this machine
  std::string why;         // why not available ("" when it is)
};

struct OpImplementations {
  std::string op;
  std::string doc;
  std::string pattern_kind;             // fusion kind (ir::PatternKind)
  int min_inputs = 0, max_inputs = 0;   // max -1: variadic
  std::vector<std::string> attributes;  // "name: kind = default" or "name: kind (required)"
  bool has_compute = false;  // ops without one are rewritten away before kernels are made
  std::vector<std::string> compute_operands;
  // Per target kind with a code generator ("llvm", "cuda"): how the default schedule treats a
  // kernel whose main block is this op.
  std::vector<std::pair<std::string, std::string>> default_schedules;
  std::vector<OpBackendUse> backends;
};

// Every registered op, sorted by name.
std::vector<OpImplementations> OpCatalog();
// One op; ir::Error naming the closest known ops when there is no such op.
OpImplementations DescribeOp(const std::string& op);
// The catalog as text: one line per op, or, for a single op, every field.
std::string OpCatalogText(const std::vector<OpImplementations>& ops);
std::string OpDetailText(const OpImplementations& op);

}  // namespace tandem::tools
