// HopelessSides: which side of a kind of placement piece is not worth measuring again.
//
// A model repeats the same operators at many shapes (MobileNetV2's depthwise convolution with
// its bias and clip, at 17 shapes), and where one side (a backend, or our kernels) loses by far
// at the first few of them, it loses at the rest too. TuneBackendPlacement measures its pieces
// anchor by anchor and, under a budget too small for every piece, stops measuring that side of
// such a kind (the "drop hopeless candidates before measuring them"), which leaves the
// budget to the kinds whose comparison is close. The kind of a chain is its operators and their
// attributes, shapes and the group count left out (a depthwise convolution's groups are its
// channels).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::passes {

// The kind of the chain `nodes` of `function` (see the file comment).
std::string PieceKind(const ir::GraphFunction& function, const std::vector<ir::ValueId>& nodes);

class HopelessSides {
 public:
  // A side is hopeless for a kind when it lost by more than `factor` at every one of at least
  // `anchors` anchors measured both ways.
  HopelessSides(double factor, int anchors) : factor_(factor), anchors_(anchors) {}

  // One anchor of `kind` measured both ways: our chain took `own_seconds`, the backend's
  // `backend_seconds` (the same nodes).
  void Add(const std::string& kind, double own_seconds, double backend_seconds);
  // Whether measuring our side (`own`) or the backend's of `kind` is hopeless.
  bool IsHopeless(const std::string& kind, bool own) const;

 private:
  double factor_;
  int anchors_;
  std::map<std::string, std::vector<double>> own_over_backend_;
};

}  // namespace tandem::passes
