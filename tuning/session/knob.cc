#include "tuning/session/knob.h"

#include <fmt/format.h>

#include <set>

#include "ir/error.h"
#include "ir/suggest.h"

namespace tandem::tuning {

Knob::Knob(std::string name, std::vector<Choice> choices)
    : name_(std::move(name)), choices_(std::move(choices)) {
  std::set<std::string> seen;
  for (const Choice& choice : choices_) {
    if (choice.name.empty()) throw ir::Error(fmt::format("knob {}: a choice has no name", name_));
    if (!seen.insert(choice.name).second) {
      throw ir::Error(fmt::format("knob {}: choice '{}' is declared twice", name_, choice.name));
    }
    if (!choice.apply) {
      throw ir::Error(
          fmt::format("knob {}: choice '{}' has no transformation", name_, choice.name));
    }
  }
}

const Choice* Knob::Find(const std::string& choice) const {
  for (const Choice& c : choices_) {
    if (c.name == choice) return &c;
  }
  return nullptr;
}

std::vector<std::string> Knob::ApplicableChoices(const ir::IRModule& module) const {
  std::vector<std::string> names;
  for (const Choice& c : choices_) {
    if (c.AppliesTo(module)) names.push_back(c.name);
  }
  return names;
}

ir::IRModule Knob::Apply(const ir::IRModule& module, const std::string& choice) const {
  const Choice* c = Find(choice);
  if (c == nullptr) {
    std::vector<std::string> known;
    for (const Choice& k : choices_) known.push_back(k.name);
    throw ir::Error(fmt::format("knob {} has no choice '{}' (choices: {})", name_, choice,
                                fmt::join(known, ", ")));
  }
  if (!c->AppliesTo(module)) {
    throw ir::Error(
        fmt::format("knob {}: choice '{}' does not apply to this module", name_, choice));
  }
  return c->apply(module);
}

std::string Knob::ToString() const {
  std::vector<std::string> names;
  for (const Choice& c : choices_) names.push_back(c.name);
  return fmt::format("{}: {}", name_, fmt::join(names, " | "));
}

SearchStrategy::Kind SearchStrategy::ParseKind(const std::string& text) {
  if (text == "exhaustive") return Kind::kExhaustive;
  if (text == "random") return Kind::kRandom;
  throw ir::Error(
      fmt::format("unknown search strategy '{}' (expected exhaustive or random)", text));
}

std::vector<std::string> SearchStrategy::Select(const std::vector<std::string>& applicable,
                                                kernels::RandomState& random) const {
  std::vector<std::string> selected = applicable;
  if (kind == Kind::kRandom) {
    // Partial Fisher-Yates: the first `take` entries become a uniform sample.
    size_t take = sample > 0 ? std::min<size_t>(static_cast<size_t>(sample), selected.size())
                             : selected.size();
    for (size_t i = 0; i < take; ++i) {
      size_t j = i + static_cast<size_t>(random.Uniform(static_cast<int64_t>(selected.size() - i)));
      std::swap(selected[i], selected[j]);
    }
    selected.resize(take);
  }
  if (max_candidates > 0 && selected.size() > static_cast<size_t>(max_candidates)) {
    selected.resize(static_cast<size_t>(max_candidates));
  }
  return selected;
}

}  // namespace tandem::tuning
