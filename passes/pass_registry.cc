#include "passes/pass_registry.h"

#include <fmt/format.h>

#include <mutex>

#include "ir/error.h"
#include "ir/suggest.h"

namespace tandem::passes {

using ir::Error;

PassRegistry& PassRegistry::Global() {
  static PassRegistry* registry = [] {
    auto* r = new PassRegistry();
    RegisterAllPasses(*r);
    return r;
  }();
  return *registry;
}

void PassRegistry::Register(PassDef def) {
  if (def.name.empty() || !def.create) throw Error("a pass needs a name and a factory");
  if (passes_.count(def.name)) throw Error(fmt::format("pass '{}' is registered twice", def.name));
  std::string name = def.name;
  passes_.emplace(std::move(name), std::move(def));
}

const PassDef* PassRegistry::Find(const std::string& name) const {
  auto it = passes_.find(name);
  return it == passes_.end() ? nullptr : &it->second;
}


const PassDef& PassRegistry::Get(const std::string& name) const {
  if (const PassDef* def = Find(name)) return *def;
  std::vector<std::string> close = ir::CloseNames(name, Names(), 3);
  throw Error(fmt::format("unknown pass '{}'{}", name,
                          close.empty() ? fmt::format(" (known passes: {})", fmt::join(Names(), ", "))
                                        : fmt::format("; did you mean {}?", fmt::join(close, ", "))),
              ir::ErrorLocation{.pass = name});
}

std::vector<std::string> PassRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : passes_) names.push_back(name);
  return names;
}

PassPtr PassRegistry::Create(const std::string& name, PassArguments arguments,
                             std::vector<PassPtr> eval) const {
  const PassDef& def = Get(name);
  ir::ErrorLocation where{.pass = name};
  if (!eval.empty() && !def.takes_eval_passes) {
    throw Error(fmt::format("pass '{}' takes no eval passes", name), where);
  }
  for (auto& [key, value] : arguments) {
    const ir::AttrSpec* spec = nullptr;
    for (const ir::AttrSpec& s : def.arguments) {
      if (s.name == key) spec = &s;
    }
    if (!spec) {
      std::vector<std::string> known;
      for (const ir::AttrSpec& s : def.arguments) known.push_back(s.name);
      if (def.takes_eval_passes) known.push_back("eval");
      throw Error(fmt::format("pass '{}' has no argument '{}' (its arguments: {})", name, key,
                              known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))),
                  where);
    }
    ir::AttrKind kind = ir::KindOf(value);
    if (kind == spec->kind) continue;
    if (spec->kind == ir::AttrKind::kFloat && kind == ir::AttrKind::kInt) {
      value = static_cast<double>(std::get<int64_t>(value));
      continue;
    }
    throw Error(fmt::format("pass '{}': argument '{}' must be {} but is {}", name, key,
                            ir::ToString(spec->kind), ir::ToString(value)),
                where);
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (arguments[i].first == arguments[j].first) {
        throw Error(fmt::format("pass '{}': argument '{}' is given twice", name, arguments[i].first), where);
      }
    }
  }
  return def.create(std::move(arguments), std::move(eval));
}

}  // namespace tandem::passes
