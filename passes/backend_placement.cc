#include "passes/backend_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "ir/error.h"
#include "ir/structural.h"
#include "passes/graph_utils.h"

namespace tandem::passes {

namespace {

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string SafeName(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

std::string PlacementText(const std::vector<Placement>& placements) {
  std::vector<std::string> entries;
  for (const Placement& p : placements) {
    entries.push_back(fmt::format("{}/{}:{}", p.backend, p.pattern, fmt::join(p.nodes, ",")));
  }
  return fmt::format("{}", fmt::join(entries, ";"));
}

std::vector<Placement> ParsePlacementText(const std::string& text) {
  std::vector<Placement> placements;
  if (text.empty()) return placements;
  for (const std::string& entry : Split(text, ';')) {
    size_t slash = entry.find('/');
    size_t colon = entry.find(':');
    if (slash == std::string::npos || colon == std::string::npos || slash > colon || slash == 0 ||
        colon == slash + 1 || colon + 1 == entry.size()) {
      throw ir::Error(
          fmt::format("placement entry \"{}\" must read backend/pattern:node,node,...", entry));
    }
    Placement p{entry.substr(0, slash), entry.substr(slash + 1, colon - slash - 1),
                Split(entry.substr(colon + 1), ',')};
    for (const std::string& node : p.nodes) {
      if (node.empty())
        throw ir::Error(fmt::format("placement entry \"{}\" has an empty node name", entry));
    }
    placements.push_back(std::move(p));
  }
  return placements;
}

Placement ToPlacement(const ir::GraphFunction& function, const backends::PatternMatch& match) {
  Placement p{match.backend, match.pattern, {}};
  for (ir::ValueId id : match.nodes) p.nodes.push_back(function.node(id).name);
  return p;
}

ir::GraphFunction ExtractSubgraph(const ir::GraphFunction& function,
                                  const std::vector<ir::ValueId>& nodes, const std::string& name) {
  std::set<ir::ValueId> members(nodes.begin(), nodes.end());
  std::vector<int> uses = UseCounts(function);
  for (size_t k = 0; k + 1 < nodes.size(); ++k) {
    int inside = 0;
    for (ir::ValueId id : nodes) {
      for (ir::ValueId input : function.node(id).inputs) inside += input == nodes[k];
    }
    if (inside != uses[static_cast<size_t>(nodes[k])]) {
      throw ir::Error(fmt::format("the subgraph ending at %{} needs %{}, which is used outside it",
                                  function.node(nodes.back()).name, function.node(nodes[k]).name));
    }
  }
  ir::GraphFunction out;
  out.name = name;
  std::map<ir::ValueId, ir::ValueId> map;
  auto outside = [&](ir::ValueId id) {
    auto found = map.find(id);
    if (found != map.end()) return found->second;
    ir::Node node = function.node(id);
    if (node.kind != ir::NodeKind::kConstant) {
      ir::Node param;
      param.kind = ir::NodeKind::kInput;
      param.name = node.name;
      param.type = node.type;
      node = std::move(param);
    }
    node.inputs.clear();
    node.annotations = ir::Attrs{};
    ir::ValueId added = static_cast<ir::ValueId>(out.nodes.size());
    if (node.kind == ir::NodeKind::kInput) out.params.push_back(added);
    out.nodes.push_back(std::move(node));
    return map[id] = added;
  };
  for (ir::ValueId id : nodes) {
    ir::Node node = function.node(id);
    for (ir::ValueId& input : node.inputs)
      input = members.count(input) ? map.at(input) : outside(input);
    node.annotations.Erase("group");
    map[id] = static_cast<ir::ValueId>(out.nodes.size());
    out.nodes.push_back(std::move(node));
  }
  out.output = map.at(nodes.back());
  return out;
}

ir::IRModule ApplyPlacements(const ir::IRModule& module, const std::string& function_name,
                             const std::vector<Placement>& placements) {
  if (placements.empty()) return module;
  const ir::GraphFunction& function = module.Get(function_name);
  ir::IRModule out = module;
  std::map<ir::ValueId, size_t> placement_of;  // result node -> placement
  std::set<ir::ValueId> placed;
  std::set<int64_t> broken_groups;
  std::vector<std::vector<ir::ValueId>> ids(placements.size());
  std::vector<std::string> callees(placements.size());
  for (size_t p = 0; p < placements.size(); ++p) {
    const Placement& placement = placements[p];
    if (placement.nodes.empty()) throw ir::Error("a placement without nodes");
    for (const std::string& name : placement.nodes) {
      ir::ValueId id = function.Find(name);
      if (id < 0) {
        throw ir::Error(fmt::format("placement on {}: @{} has no node %{}", placement.backend,
                                    function_name, name));
      }
      if (!placed.insert(id).second) {
        throw ir::Error(fmt::format("placements overlap at %{}", name));
      }
      const ir::Node& node = function.node(id);
      if (node.annotations.Has("group")) broken_groups.insert(node.annotations.GetInt("group"));
      ids[p].push_back(id);
    }
    if (!std::is_sorted(ids[p].begin(), ids[p].end())) {
      throw ir::Error(fmt::format("placement {}: nodes must be listed in dataflow order",
                                  PlacementText({placement})));
    }
    std::string callee = SafeName(placement.backend + "_" + placement.nodes.back());
    for (int i = 1; out.Has(callee); ++i)
      callee = fmt::format("{}_{}", SafeName(placement.backend + "_" + placement.nodes.back()), i);
    ir::GraphFunction subgraph = ExtractSubgraph(function, ids[p], callee);
    subgraph.attrs.Set(ir::kExternBackendAttr, placement.backend);
    subgraph.attrs.Set("pattern", placement.pattern);
    out.Add(std::move(subgraph));
    callees[p] = callee;
    placement_of[ids[p].back()] = p;
  }
  ir::GraphFunction rewritten = RewriteNodes(function, [&](ir::ValueId id,
                                                           ir::GraphFunction& rebuilt,
                                                           const std::vector<ir::ValueId>& map) {
    auto found = placement_of.find(id);
    if (found == placement_of.end()) return ir::ValueId{-1};
    size_t p = found->second;
    const ir::GraphFunction& subgraph = out.Get(callees[p]);
    ir::Node call;
    call.kind = ir::NodeKind::kCallExtern;
    call.callee = callees[p];
    call.name = function.node(id).name;
    call.type = function.node(id).type;
    std::vector<std::string> ops;
    for (ir::ValueId member : ids[p]) ops.push_back(function.node(member).op);
    call.op = fmt::format("{}", fmt::join(ops, "+"));
    for (ir::ValueId param : subgraph.params) {
      call.inputs.push_back(map.at(static_cast<size_t>(function.Find(subgraph.node(param).name))));
    }
    call.annotations.Set("backend", placements[p].backend);
    call.annotations.Set("pattern", placements[p].pattern);
    return AppendNode(rebuilt, std::move(call));
  });
  if (!broken_groups.empty()) {
    for (ir::Node& node : rewritten.nodes) {
      if (node.annotations.Has("group") && broken_groups.count(node.annotations.GetInt("group"))) {
        node.annotations.Erase("group");
      }
    }
  }
  out.Add(std::move(rewritten));
  return out;
}

uint64_t WeightFreeHash(ir::GraphFunction subgraph) {
  for (ir::Node& node : subgraph.nodes) {
    if (node.kind == ir::NodeKind::kConstant && node.value.num_elements() >= 16) {
      node.value = ir::Tensor();
    }
  }
  return ir::StructuralHash(subgraph);
}

namespace {

// Whether a backend compiles a subgraph, by WeightFreeHash: nothing when it does, else why not.
class CompileVerdicts {
 public:
  static CompileVerdicts& Global() {
    static CompileVerdicts verdicts;
    return verdicts;
  }
  std::optional<std::optional<std::string>> Find(uint64_t hash) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = verdicts_.find(hash);
    if (found == verdicts_.end()) return std::nullopt;
    return found->second;
  }
  void Remember(uint64_t hash, std::optional<std::string> refusal) {
    std::lock_guard<std::mutex> lock(mutex_);
    verdicts_.emplace(hash, std::move(refusal));
  }

 private:
  std::mutex mutex_;
  std::map<uint64_t, std::optional<std::string>> verdicts_;
};

}  // namespace

PlacementMatcher::PlacementMatcher(std::vector<const backends::ExternalBackend*> backends)
    : backends_(std::move(backends)) {}

std::vector<backends::PatternMatch> PlacementMatcher::Matches(const ir::GraphFunction& function) {
  std::vector<backends::PatternMatch> compilable;
  for (const backends::ExternalBackend* backend : backends_) {
    for (backends::PatternMatch& match : backends::FindMatches(function, *backend)) {
      ir::GraphFunction subgraph;
      try {
        subgraph = ExtractSubgraph(function, match.nodes, "subgraph");
      } catch (const ir::Error&) {
        continue;
      }
      subgraph.attrs.Set(ir::kExternBackendAttr, backend->name());
      uint64_t hash = WeightFreeHash(subgraph);
      std::optional<std::optional<std::string>> verdict = CompileVerdicts::Global().Find(hash);
      if (!verdict) {
        std::optional<std::string> refusal;
        try {
          backend->Compile(subgraph);
        } catch (const ir::Error& e) {
          refusal = e.message();
        }
        CompileVerdicts::Global().Remember(hash, refusal);
        verdict = refusal;
      }
      if (*verdict) {
        refusals_[match.OpsText(function)] = **verdict;
      } else {
        compilable.push_back(std::move(match));
      }
    }
  }
  return compilable;
}

std::vector<Placement> GreedyPlacements(const ir::GraphFunction& function,
                                        const std::vector<backends::PatternMatch>& matches) {
  std::map<ir::ValueId, const backends::PatternMatch*> longest;  // by anchor
  for (const backends::PatternMatch& match : matches) {
    const backends::PatternMatch*& best = longest[match.nodes.front()];
    if (best == nullptr || match.nodes.size() > best->nodes.size()) best = &match;
  }
  std::set<ir::ValueId> taken;
  std::vector<Placement> placements;
  for (const auto& [anchor, match] : longest) {
    bool free = std::none_of(match->nodes.begin(), match->nodes.end(),
                             [&](ir::ValueId id) { return taken.count(id) != 0; });
    if (!free) continue;
    taken.insert(match->nodes.begin(), match->nodes.end());
    placements.push_back(ToPlacement(function, *match));
  }
  return placements;
}

std::vector<const backends::ExternalBackend*> SelectBackends(const std::string& names) {
  const auto& registry = backends::ExternalBackendRegistry::Global();
  std::vector<const backends::ExternalBackend*> selected;
  if (names.empty()) return registry.AvailableBackends();
  for (const std::string& raw : Split(names, ',')) {
    std::string name = raw;
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    const backends::ExternalBackend& backend = registry.Get(name);
    if (backend.Available()) selected.push_back(&backend);
  }
  return selected;
}

}  // namespace tandem::passes
