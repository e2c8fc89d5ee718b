// PlaceOnBackend: places every subgraph an external backend takes on that backend, without
// measuring: at each anchor op the longest pattern match the backend compiles, in node order,
// skipping matches that overlap one already placed. This is the "all-oneDNN" configuration the
// benchmarks compare against; TuneBackendPlacement chooses by measurement instead. A backend
// that is compiled in but unavailable on this machine (cuBLAS without a GPU) places nothing.
#include <fmt/format.h>

#include "ir/error.h"
#include "passes/backend_placement.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

void RegisterPlaceOnBackend(PassRegistry& registry) {
  struct Options {
    std::string backend = "onednn";
  };
  RegisterFunctionPass<Options>(
      registry,
      {.name = "PlaceOnBackend",
       .summary = "Place every subgraph an external backend compiles on it (longest match first).",
       .required = {"InferType"},
       .arguments = {{"backend", &Options::backend,
                      "the external backend, e.g. \"onednn\" or \"cublas\""}},
       .check =
           [](const Options& options) {
             try {
               SelectBackends(options.backend);  // unknown names fail when the pipeline is made
             } catch (const ir::Error& e) {
               throw e.WithPass("PlaceOnBackend");
             }
           }},
      [](const ir::IRModule& module, PassContext&, const Options& options) {
        PlacementMatcher matcher(SelectBackends(options.backend));
        ir::IRModule out = module;
        for (const auto& [name, function] : module.graph_functions()) {
          if (!function->ExternBackend().empty()) continue;
          std::vector<Placement> placements =
              GreedyPlacements(*function, matcher.Matches(*function));
          out = ApplyPlacements(out, name, placements);
        }
        return out;
      });
}

}  // namespace tandem::passes
