#include "passes/tuning/hopeless_sides.h"

#include <algorithm>

namespace tandem::passes {

std::string PieceKind(const ir::GraphFunction& function, const std::vector<ir::ValueId>& nodes) {
  std::string kind;
  for (ir::ValueId id : nodes) {
    const ir::Node& node = function.node(id);
    kind += node.op + "(";
    for (const auto& [name, value] : node.attrs.values()) {
      if (name == "groups") {
        bool one = std::holds_alternative<int64_t>(value) && std::get<int64_t>(value) == 1;
        kind += one ? "groups=1;" : "grouped;";
      } else {
        kind += name + "=" + ir::ToString(value) + ";";
      }
    }
    kind += ")";
  }
  return kind;
}

void HopelessSides::Add(const std::string& kind, double own_seconds, double backend_seconds) {
  if (own_seconds > 0 && backend_seconds > 0) {
    own_over_backend_[kind].push_back(own_seconds / backend_seconds);
  }
}

bool HopelessSides::IsHopeless(const std::string& kind, bool own) const {
  auto found = own_over_backend_.find(kind);
  if (found == own_over_backend_.end()) return false;
  const std::vector<double>& ratios = found->second;
  if (static_cast<int>(ratios.size()) < anchors_) return false;
  return std::all_of(ratios.begin(), ratios.end(),
                     [&](double ratio) { return own ? ratio > factor_ : ratio * factor_ < 1; });
}

}  // namespace tandem::passes
