// Patterns: which subgraphs an external backend can take.
//
// A pattern is an anchor op (convolution, matmul, softmax ...) followed by a sequence of epilogue
// steps, each an elementwise op that consumes the previous matched node as its only user. A step
// is optional (skipped when the next node does not match it) or required. Every prefix that ends
// after the anchor or after a matched step is a match, so "conv2d (-> add)? (-> relu)?" offers
// conv2d, conv2d+add, conv2d+relu and conv2d+add+relu wherever the graph has them; backend
// placement then chooses among them by measurement. Constraints on attributes and operand types
// are predicates with a printable description, so a pattern prints as text a user can read.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::backends {

// One op of a pattern: any of `ops`, when `constraint` (if set) returns no reason to refuse.
struct OpMatcher {
  std::vector<std::string> ops;
  // Returns why `node` (of `function`) does not match, or nullopt when it does.
  std::function<std::optional<std::string>(const ir::GraphFunction& function, const ir::Node& node)>
      constraint;
  std::string constraint_text;  // e.g. "groups any, 2-D weight"; printed in braces
  bool optional = false;        // epilogue steps only

  // Why `node` does not match (wrong op, constraint), or nullopt.
  std::optional<std::string> Refuse(const ir::GraphFunction& function, const ir::Node& node) const;
  std::string ToString() const;
};

struct Pattern {
  std::string name;  // stable, e.g. "convolution_epilogue"
  OpMatcher anchor;
  std::vector<OpMatcher> epilogue;

  // "conv1d|conv2d{...} (-> add{...})? (-> relu|sigmoid)?"
  std::string ToString() const;
};

// A matched subgraph: the anchor, then the matched epilogue nodes, in dataflow order. The last
// node's value is the subgraph's result; every other node is used only inside the subgraph.
struct PatternMatch {
  std::string backend;
  std::string pattern;
  std::vector<ir::ValueId> nodes;

  // "conv2d+add+relu": the ops of the matched nodes.
  std::string OpsText(const ir::GraphFunction& function) const;
};

// Every match of `pattern` in `function` (all prefixes, see the file comment), anchors in node
// order. `backend` is copied into the matches.
std::vector<PatternMatch> FindMatches(const ir::GraphFunction& function, const Pattern& pattern,
                                      const std::string& backend);

}  // namespace tandem::backends
