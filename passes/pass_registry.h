// The pass registry: every pass under its stable name, with its documented arguments.
//
// All built-in passes are registered in one place, passes/register_all_passes.cc; each declares
// itself once (passes/pass_declaration.h), and its PassDef is derived from that declaration. The
// pipeline text parser creates passes through the registry, so an unknown name or a bad argument
// is a clear error listing what the pass accepts.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "passes/pass.h"

namespace tandem::passes {

struct PassDef {
  std::string name;
  std::string doc;
  std::vector<ir::AttrSpec> arguments;  // accepted arguments (kinds, defaults, docs)
  std::vector<std::string> required;    // passes that must run before it (for the docs)
  bool is_tuning = false;
  bool takes_eval_passes = false;  // accepts eval=[...]
  // Creates the pass from checked arguments (only those given, in the given order) and eval
  // passes.
  std::function<PassPtr(PassArguments arguments, std::vector<PassPtr> eval)> create;
};

class PassRegistry {
 public:
  // The registry of built-in passes (built on first use, thread-safe). Users may add their own
  // passes to a registry they own and parse pipelines against it.
  static PassRegistry& Global();

  void Register(PassDef def);
  const PassDef* Find(const std::string& name) const;
  // Throws ir::Error "unknown pass 'x'" with close known names.
  const PassDef& Get(const std::string& name) const;
  std::vector<std::string> Names() const;

  // Checks arguments against the definition (unknown names, wrong kinds, eval passes given to a
  // pass that takes none) and creates the pass.
  PassPtr Create(const std::string& name, PassArguments arguments = {},
                 std::vector<PassPtr> eval = {}) const;

 private:
  std::map<std::string, PassDef> passes_;
};

void RegisterAllPasses(PassRegistry& registry);

}  // namespace tandem::passes
