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

// The length of the longest piece at each anchor (its first node) for each backend ("": ours).
using LongestLengths = std::map<std::pair<ir::ValueId, std::string>, size_t>;
LongestLengths LongestAtEachAnchor(const std::vector<Piece>& pieces);
bool IsLongest(const Piece& piece, const LongestLengths& longest);

// A program's guesses where a budget left pieces unmeasured: an unmeasured longest chain (its
// `unmeasured` flag set) costs nothing on the guessed side (ours with `own`, else the backend's)
// and kLastResort on the other, so that it is chosen only where nothing else covers its anchor.
// Measured pieces keep their times.
inline constexpr double kLastResort = 1e3;
std::vector<Piece> WithGuesses(const std::vector<Piece>& pieces,
                               const std::vector<bool>& unmeasured, bool own);

// The share of our own kernels in the measured time of the backend-guessing program's cover
// (guessed pieces left out of both sums): what tuning our kernels after the placement could work
// on. 0 when the cover has no measured piece or there is no cover.
double OwnShareOfCover(const std::vector<Piece>& pieces, const std::vector<bool>& unmeasured);

}  // namespace tandem::passes
