#include "passes/pass_docs.h"

#include <fmt/format.h>

namespace tandem::passes {

namespace {

// "tuning pass; takes eval passes (eval=[...])", "heuristic pass".
std::string KindLine(const PassDef& def) {
  std::string kind = def.is_tuning ? "tuning pass" : "heuristic pass";
  if (def.takes_eval_passes) kind += "; takes eval passes (`eval=[...]`)";
  return kind;
}

std::string Requires(const PassDef& def) {
  return def.required.empty() ? "nothing" : fmt::format("{}", fmt::join(def.required, ", "));
}

std::string DefaultText(const ir::AttrSpec& spec) {
  return spec.default_value ? ir::ToString(*spec.default_value) : "(required)";
}

// Prose for Markdown: '<' would open an HTML tag (NCHW<x>c), '|' end a table cell.
std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '<') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string PassRegistryText(const PassRegistry& registry) {
  std::string out;
  for (const std::string& name : registry.Names()) {
    const PassDef& def = registry.Get(name);
    out +=
        fmt::format("{}  [{}; requires {}]\n  {}\n", name, KindLine(def), Requires(def), def.doc);
    for (const ir::AttrSpec& spec : def.arguments) {
      out += fmt::format("    {}={} ({}): {}\n", spec.name, DefaultText(spec),
                         ir::ToString(spec.kind), spec.doc);
    }
  }
  return out;
}

std::string PassRegistryMarkdown(const PassRegistry& registry) {
  std::string out =
      "# Passes\n\n"
      "<!-- Generated from the pass declarations; do not edit. Regenerate with:\n"
      "     build/tools/tandem pipelines --passes-markdown > docs/passes.md -->\n\n"
      "Every registered pass, by its stable name, with the arguments it takes in pipeline text "
      "(syntax: `passes/pipeline_text.h`). A boolean argument is an integer: 1 or "
      "`true`, 0 or `false`. How to add a pass: `docs/extending.md`.\n";
  for (const std::string& name : registry.Names()) {
    const PassDef& def = registry.Get(name);
    out += fmt::format("\n## {}\n\n{}\n\n{}; requires {}.\n", name, Escape(def.doc), KindLine(def),
                       Requires(def));
    if (def.arguments.empty()) continue;
    out += "\n| argument | kind | default | meaning |\n| --- | --- | --- | --- |\n";
    for (const ir::AttrSpec& spec : def.arguments) {
      out += fmt::format("| `{}` | {} | `{}` | {} |\n", spec.name, ir::ToString(spec.kind),
                         DefaultText(spec), Escape(spec.doc));
    }
  }
  return out;
}

}  // namespace tandem::passes
