// Backend placement: which subgraphs of a graph function run on an external backend.
//
// A Placement names the nodes of one subgraph (by their SSA names, so it reads well in a trace
// and replays on the same input) and the backend and pattern that take it. ApplyPlacements turns
// each placed subgraph into an extern graph function of the module (its weights copied in as
// constants, so the backend can pack them at build time) called by one call_extern node that
// keeps the name of the subgraph's result and carries `backend` and `pattern` annotations.
// PlacementText / ParsePlacementText give the one-line form recorded as a tuning decision:
//   onednn/convolution:conv_0,add_1,relu_2;onednn/matmul:dense_7
// (the empty string places nothing).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends/external/external_backend.h"
#include "ir/graph.h"

namespace tandem::passes {

struct Placement {
  std::string backend;
  std::string pattern;
  std::vector<std::string> nodes;  // in dataflow order; the last one is the subgraph's result

  bool operator==(const Placement& other) const = default;
};

std::string PlacementText(const std::vector<Placement>& placements);
// Throws ir::Error naming the malformed entry.
std::vector<Placement> ParsePlacementText(const std::string& text);

// The placement of a pattern match of `function`.
Placement ToPlacement(const ir::GraphFunction& function, const backends::PatternMatch& match);

// The subgraph of `function` made of `nodes` (ids in dataflow order) as a graph function named
// `name`: parameters for the operands computed outside it (in order of first use), copies of the
// constants it uses, the nodes (names kept, fusion-group annotations dropped), and the last node
// as its output. Throws ir::Error when a node other than the last is used outside the subgraph.
ir::GraphFunction ExtractSubgraph(const ir::GraphFunction& function,
                                  const std::vector<ir::ValueId>& nodes, const std::string& name);

// `module` with every placement of graph function `function` applied (see the file comment).
// Throws ir::Error for an unknown node name, placements that overlap, or a subgraph whose inner
// values are used outside it. Fusion groups that lose a member to a placement are dissolved.
ir::IRModule ApplyPlacements(const ir::IRModule& module, const std::string& function,
                             const std::vector<Placement>& placements);

// The structural hash of `subgraph` with its weights (constants of 16 elements or more) left
// out: what a backend compiles, and how fast it runs, does not depend on their values. Smaller
// constants stay in, since passes may rewrite by value (a multiplication by one).
uint64_t WeightFreeHash(ir::GraphFunction subgraph);

// Finds the pattern matches of some backends that their backend really compiles: each distinct
// subgraph up to its weights (WeightFreeHash) is compiled once in the process and the answer
// remembered, so the candidates of a tuning pass, which share their subgraphs' shapes, do not
// compile them again.
class PlacementMatcher {
 public:
  explicit PlacementMatcher(std::vector<const backends::ExternalBackend*> backends);
  std::vector<backends::PatternMatch> Matches(const ir::GraphFunction& function);
  // Why the refused subgraphs failed to compile (for diagnostics), by pattern text.
  const std::map<std::string, std::string>& refusals() const { return refusals_; }

 private:
  std::vector<const backends::ExternalBackend*> backends_;
  std::map<std::string, std::string> refusals_;
};

// The longest compilable match at each anchor, taken greedily in node order where it overlaps
// none taken before: what "everything this backend can take" means.
std::vector<Placement> GreedyPlacements(const ir::GraphFunction& function,
                                        const std::vector<backends::PatternMatch>& matches);

// The backends named in a comma-separated list (empty: every available backend). Throws
// ir::Error for an unknown name; a known backend unavailable here is skipped.
std::vector<const backends::ExternalBackend*> SelectBackends(const std::string& names);

}  // namespace tandem::passes
