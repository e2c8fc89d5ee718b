// TuneCombineParallel: decides by measurement whether to combine parallel convolutions and
// matmuls that share an input (CombineParallelConv2D, CombineParallelMatmul), e.g. the Q, K and
// V projections of an attention layer. "on" is only a candidate where it changes the module.
#include "ir/structural.h"
#include "passes/tuning/knob_pass.h"

namespace tandem::passes {

void RegisterTuneCombineParallel(PassRegistry& registry) {
  RegisterKnobPass<SearchOptions>(
      registry,
      {.name = "TuneCombineParallel",
       .summary =
           "Combine parallel conv2d/matmul branches (on) or leave them (off), by measurement.",
       .required = {"InferType"}},
      [](const ir::IRModule& module, PassContext& context, const SearchOptions&) {
        auto combine = [&context](const ir::IRModule& m) {
          ir::IRModule out = RunRegisteredPass(context, "CombineParallelConv2D", {}, m);
          return RunRegisteredPass(context, "CombineParallelMatmul", {}, out);
        };
        bool changes = ir::StructuralHash(combine(module)) != ir::StructuralHash(module);
        tuning::Choice on{"on", combine, [changes](const ir::IRModule&) { return changes; }};
        return tuning::Knob("TuneCombineParallel", {KeepChoice("off"), on});
      });
}

}  // namespace tandem::passes
