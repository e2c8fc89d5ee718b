// TuneFusion: chooses among fusion decisions the heuristic cannot settle alone: the default
// FuseOps grouping, the same without fusing injective chains into a following reduction (a
// fused reduction recomputes its producers per reduced element, which can lose), small groups
// only (at most 3 calls), or no fusion (every existing group removed). Runs where FuseOps
// would; a choice that gives the same grouping as an earlier one is not a candidate.
#include <set>

#include "ir/structural.h"
#include "passes/tuning/knob_pass.h"

namespace tandem::passes {

void RegisterTuneFusion(PassRegistry& registry) {
  RegisterKnobPass<SearchOptions>(
      registry,
      {.name = "TuneFusion",
       .summary = "Choose the fusion grouping (FuseOps variants or none) by measurement.",
       .required = {"InferType"}},
      [](const ir::IRModule& module, PassContext& context, const SearchOptions&) {
        struct Variant {
          std::string name;
          PassArguments arguments;
        };
        std::vector<Variant> variants{
            {"none", {{"max_size", int64_t{1}}}},
            {"fuse", {}},
            {"no_reduction_fusion", {{"into_reductions", int64_t{0}}}},
            {"small_groups", {{"max_size", int64_t{3}}}},
        };
        std::vector<tuning::Choice> choices;
        std::set<uint64_t> seen;
        for (const Variant& variant : variants) {
          auto apply = [&context, arguments = variant.arguments](const ir::IRModule& m) {
            return RunRegisteredPass(context, "FuseOps", arguments, m);
          };
          bool distinct = seen.insert(ir::StructuralHash(apply(module))).second;
          choices.push_back(tuning::Choice{variant.name, apply,
                                           [distinct](const ir::IRModule&) { return distinct; }});
        }
        return tuning::Knob("TuneFusion", std::move(choices));
      });
}

}  // namespace tandem::passes
