#include "passes/tuning/knob_pass.h"

namespace tandem::passes {

void RegisterKnobPass(PassRegistry& registry, std::string name, std::string doc,
                      std::vector<std::string> required, std::vector<ir::AttrSpec> extra,
                      KnobPass::KnobFunction knob) {
  std::vector<ir::AttrSpec> arguments = SearchArguments();
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  PassInfo info{name, std::move(required), true};
  registry.Register(PassDef{
      .name = std::move(name),
      .doc = std::move(doc),
      .arguments = std::move(arguments),
      .is_tuning = true,
      .takes_eval_passes = true,
      .create = [info, knob](PassArguments args, std::vector<PassPtr> eval) -> PassPtr {
        return std::make_shared<KnobPass>(info, std::move(args), std::move(eval), knob);
      }});
}

ir::IRModule RunRegisteredPass(PassContext& context, const std::string& name,
                               PassArguments arguments, const ir::IRModule& module) {
  PassPtr pass = PassRegistry::Global().Create(name, std::move(arguments));
  return context.RunPass(*pass, module);
}

tuning::Choice KeepChoice(std::string name) {
  return tuning::Choice{std::move(name), [](const ir::IRModule& m) { return m; }, nullptr};
}

}  // namespace tandem::passes
