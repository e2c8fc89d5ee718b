// PlaceOnBackend: places every subgraph an external backend takes on that backend, without
// measuring: at each anchor op the longest pattern match the backend compiles, in node order,
// skipping matches that overlap one already placed. This is the "all-oneDNN" configuration the
// benchmarks compare against; TuneBackendPlacement chooses by measurement instead. A backend
// that is compiled in but unavailable on this machine (cuBLAS without a GPU) places nothing.
#include <fmt/format.h>

#include "ir/error.h"
#include "passes/backend_placement.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_registry.h"

namespace tandem::passes {

void RegisterPlaceOnBackend(PassRegistry& registry) {
  registry.Register(PassDef{
      .name = "PlaceOnBackend",
      .doc = "Place every subgraph an external backend compiles on it (longest match first).",
      .arguments = {{"backend", ir::AttrKind::kString, std::string("onednn"),
                     "the external backend, e.g. \"onednn\" or \"cublas\""}},
      .create = [](PassArguments args, std::vector<PassPtr>) -> PassPtr {
        std::string backend = StringArgument(args, "backend", "onednn");
        try {
          SelectBackends(backend);  // unknown names fail when the pipeline is made
        } catch (const ir::Error& e) {
          throw e.WithPass("PlaceOnBackend");
        }
        return std::make_shared<FunctionPass>(
            PassInfo{"PlaceOnBackend", {"InferType"}, false}, std::move(args),
            [backend](const ir::IRModule& module, PassContext& context, const PassArguments&) {
              PlacementMatcher matcher(SelectBackends(backend));
              ir::IRModule out = module;
              for (const auto& [name, function] : module.graph_functions()) {
                if (!function->ExternBackend().empty()) continue;
                std::vector<Placement> placements =
                    GreedyPlacements(*function, matcher.Matches(*function));
                out = ApplyPlacements(out, name, placements);
              }
              return out;
            });
      }});
}

}  // namespace tandem::passes
