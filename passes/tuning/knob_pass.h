// KnobPass: a one-knob tuning pass defined by a function that builds its knob. The graph-level
// tuning passes (TuneLayout, TuneCombineParallel, TuneFusion, TuneCodegenFlags) are KnobPasses;
// each file defines its knob and registers the pass.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "passes/pass_registry.h"
#include "passes/tuning_pass.h"

namespace tandem::passes {

class KnobPass : public TuningPass {
 public:
  using KnobFunction =
      std::function<tuning::Knob(const ir::IRModule&, PassContext&, const PassArguments&)>;
  KnobPass(PassInfo info, PassArguments arguments, std::vector<PassPtr> eval, KnobFunction knob)
      : TuningPass(std::move(arguments), std::move(eval)),
        info_(std::move(info)),
        knob_(std::move(knob)) {}
  const PassInfo& info() const override { return info_; }
  tuning::Knob MakeKnob(const ir::IRModule& module, PassContext& context) const override {
    return knob_(module, context, arguments());
  }

 private:
  PassInfo info_;
  KnobFunction knob_;
};

// Registers a KnobPass under `name` taking eval passes and the search arguments plus `extra`.
void RegisterKnobPass(PassRegistry& registry, std::string name, std::string doc,
                      std::vector<std::string> required, std::vector<ir::AttrSpec> extra,
                      KnobPass::KnobFunction knob);

// Runs the registered heuristic pass `name` with `arguments` on `module` through the context
// (so instruments see it).
ir::IRModule RunRegisteredPass(PassContext& context, const std::string& name,
                               PassArguments arguments, const ir::IRModule& module);

// A choice that leaves the module as it is.
tuning::Choice KeepChoice(std::string name);

}  // namespace tandem::passes
