#include "passes/tuning/knob_pass.h"

namespace tandem::passes {

ir::IRModule RunRegisteredPass(PassContext& context, const std::string& name,
                               PassArguments arguments, const ir::IRModule& module) {
  PassPtr pass = PassRegistry::Global().Create(name, std::move(arguments));
  return context.RunPass(*pass, module);
}

tuning::Choice KeepChoice(std::string name) {
  return tuning::Choice{std::move(name), [](const ir::IRModule& m) { return m; }, nullptr};
}

}  // namespace tandem::passes
