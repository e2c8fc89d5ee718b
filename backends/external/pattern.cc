#include "backends/external/pattern.h"

#include <fmt/format.h>

#include <algorithm>

namespace tandem::backends {

std::optional<std::string> OpMatcher::Refuse(const ir::GraphFunction& function,
                                             const ir::Node& node) const {
  if (node.kind != ir::NodeKind::kCall) return std::string("not an op call");
  if (std::find(ops.begin(), ops.end(), node.op) == ops.end()) {
    return fmt::format("op {} is not {}", node.op, fmt::join(ops, "|"));
  }
  if (constraint) return constraint(function, node);
  return std::nullopt;
}

std::string OpMatcher::ToString() const {
  std::string text = fmt::format("{}", fmt::join(ops, "|"));
  if (!constraint_text.empty()) text += "{" + constraint_text + "}";
  return text;
}

std::string Pattern::ToString() const {
  std::string text = anchor.ToString();
  for (const OpMatcher& step : epilogue) {
    text += fmt::format(" (-> {}){}", step.ToString(), step.optional ? "?" : "");
  }
  return text;
}

std::string PatternMatch::OpsText(const ir::GraphFunction& function) const {
  std::vector<std::string> ops;
  for (ir::ValueId id : nodes) ops.push_back(function.node(id).op);
  return fmt::format("{}", fmt::join(ops, "+"));
}

std::vector<PatternMatch> FindMatches(const ir::GraphFunction& function, const Pattern& pattern,
                                      const std::string& backend) {
  std::vector<int> uses = ir::UseCounts(function);
  // The single user of each value (when it has exactly one and it is not the function output).
  std::vector<ir::ValueId> only_user(function.nodes.size(), -1);
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    for (ir::ValueId input : function.nodes[i].inputs) {
      if (uses[static_cast<size_t>(input)] == 1 && input != function.output) {
        only_user[static_cast<size_t>(input)] = static_cast<ir::ValueId>(i);
      }
    }
  }
  std::vector<PatternMatch> matches;
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    const ir::Node& node = function.nodes[i];
    if (pattern.anchor.Refuse(function, node)) continue;
    PatternMatch match{backend, pattern.name, {static_cast<ir::ValueId>(i)}};
    matches.push_back(match);
    size_t step = 0;
    while (step < pattern.epilogue.size()) {
      ir::ValueId next = only_user[static_cast<size_t>(match.nodes.back())];
      if (next < 0) break;
      const ir::Node& user = function.node(next);
      // The epilogue must take the previous result as an operand and nothing else matched.
      size_t taken = 0;
      for (ir::ValueId input : user.inputs) taken += input == match.nodes.back();
      bool matched = taken == 1 && !pattern.epilogue[step].Refuse(function, user);
      if (matched) {
        match.nodes.push_back(next);
        matches.push_back(match);
        ++step;
      } else if (pattern.epilogue[step].optional) {
        ++step;
      } else {
        break;
      }
    }
  }
  return matches;
}

}  // namespace tandem::backends
