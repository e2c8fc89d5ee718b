// The dynamic program of TuneBackendPlacement (Collage-style): placement pieces, each a chain
// of graph nodes on one backend or on our own code generator with its measured time, and the
// cover of the nodes by pieces, each node exactly once, at the least summed time. Nodes are
// visited in dataflow order; a state is the position and the set of later nodes already covered
// by a chosen piece, which stays small because pieces are short chains.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace tandem::passes {

struct Piece {
  std::vector<ir::ValueId> nodes;
  std::string backend;  // "" for our own code generator
  std::string pattern;
  double seconds = std::numeric_limits<double>::infinity();  // unmeasured: never chosen
};

class CoverProgram {
 public:
  explicit CoverProgram(const std::vector<Piece>& pieces);

  // The chosen pieces (indices), or empty when no exact cover exists.
  std::vector<size_t> Solve();

 private:
  struct Entry {
    double seconds;
    int64_t piece;  // chosen at this state (-1: the node was already covered)
  };

  // The covered set after position `position`: without its node, plus a piece's later nodes.
  std::vector<ir::ValueId> Advance(const std::vector<ir::ValueId>& covered, size_t position,
                                   const Piece* piece) const;
  double Best(size_t position, const std::vector<ir::ValueId>& covered);

  const std::vector<Piece>& pieces_;
  std::vector<ir::ValueId> order_;
  std::map<ir::ValueId, std::vector<size_t>> starting_at_;
  std::map<std::pair<size_t, std::vector<ir::ValueId>>, Entry> memo_;
};

}  // namespace tandem::passes
