// KnobPass: a one-knob tuning pass defined by a function that builds its knob. The graph-level
// tuning passes (TuneLayout, TuneCombineParallel, TuneFusion, TuneCodegenFlags) are KnobPasses;
// each file declares the pass and defines its knob.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "passes/pass_declaration.h"
#include "passes/pass_registry.h"
#include "passes/tuning_pass.h"

namespace tandem::passes {

class KnobPass : public TuningPass {
 public:
  // Builds the knob for a module; the pass's options are bound in already.
  using KnobFunction = std::function<tuning::Knob(const ir::IRModule&, PassContext&)>;
  KnobPass(PassInfo info, PassArguments arguments, std::vector<PassPtr> eval, SearchOptions search,
           KnobFunction knob)
      : TuningPass(std::move(info), std::move(arguments), std::move(eval), std::move(search)),
        knob_(std::move(knob)) {}
  tuning::Knob MakeKnob(const ir::IRModule& module, PassContext& context) const override {
    return knob_(module, context);
  }

 private:
  KnobFunction knob_;
};

// Builds the knob of a KnobPass for a module, given the pass's parsed options.
template <typename Options>
using KnobOf = std::function<tuning::Knob(const ir::IRModule&, PassContext&, const Options&)>;

// Registers a KnobPass declared by `declaration`: it takes eval passes and the search arguments
// (SearchArguments, put before the declared ones), and builds its knob with `knob`.
template <typename Options>
void RegisterKnobPass(PassRegistry& registry, PassDeclaration<Options> declaration,
                      std::type_identity_t<KnobOf<Options>> knob) {
  static_assert(std::is_base_of_v<SearchOptions, Options>, "knob options derive SearchOptions");
  std::vector<PassOption<Options>> arguments = SearchArguments<Options>();
  arguments.insert(arguments.end(), declaration.arguments.begin(), declaration.arguments.end());
  declaration.arguments = std::move(arguments);
  auto decl = std::make_shared<const PassDeclaration<Options>>(std::move(declaration));
  registry.Register(decl->Def(
      /*is_tuning=*/true, /*takes_eval_passes=*/true,
      [decl, knob](PassArguments args, std::vector<PassPtr> eval) -> PassPtr {
        Options options = decl->Create(args);
        SearchOptions search = options;
        return std::make_shared<KnobPass>(
            decl->Info(true), std::move(args), std::move(eval), std::move(search),
            [options = std::move(options), knob](const ir::IRModule& module, PassContext& context) {
              return knob(module, context, options);
            });
      }));
}

// Runs the registered heuristic pass `name` with `arguments` on `module` through the context
// (so instruments see it).
ir::IRModule RunRegisteredPass(PassContext& context, const std::string& name,
                               PassArguments arguments, const ir::IRModule& module);

// A choice that leaves the module as it is.
tuning::Choice KeepChoice(std::string name);

}  // namespace tandem::passes
