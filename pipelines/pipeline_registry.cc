#include "pipelines/pipeline_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/file_read.h"
#include "passes/pipeline_text.h"

namespace tandem::pipelines {

using ir::Error;

PipelineRegistry& PipelineRegistry::Global() {
  static PipelineRegistry* registry = [] {
    auto* r = new PipelineRegistry();
    RegisterBuiltinPipelines(*r);
    return r;
  }();
  return *registry;
}

void PipelineRegistry::Register(PipelineDef def) {
  if (def.name.empty()) throw Error("a pipeline needs a name");
  auto key = std::make_pair(def.name, def.target_kind);
  if (pipelines_.count(key)) {
    throw Error(fmt::format("pipeline '{}'{} is registered twice", def.name,
                            def.target_kind.empty() ? "" : " for target " + def.target_kind));
  }
  try {
    passes::ParsePipeline(def.text);
  } catch (const Error& e) {
    throw Error(fmt::format("pipeline '{}': {}", def.name, e.what()));
  }
  pipelines_.emplace(key, std::move(def));
}

const PipelineDef& PipelineRegistry::Get(const std::string& name, const ir::Target& target) const {
  auto it = pipelines_.find({name, target.kind});
  if (it != pipelines_.end()) return it->second;
  it = pipelines_.find({name, ""});
  if (it != pipelines_.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [key, def] : pipelines_) {
    if (key.second.empty() || key.second == target.kind) names.push_back(key.first);
  }
  throw Error(fmt::format("unknown pipeline '{}' for target {} (known: {})", name, target.kind,
                          fmt::join(names, ", ")));
}

passes::PassPtr PipelineRegistry::Create(const std::string& name, const ir::Target& target) const {
  return passes::ParsePipeline(Get(name, target).text);
}

std::vector<PipelineDef> PipelineRegistry::List() const {
  std::vector<PipelineDef> out;
  for (const auto& [key, def] : pipelines_) out.push_back(def);
  return out;
}

void PipelineRegistry::LoadFile(const std::string& path) {
  LoadText(ir::ReadRegularFile(path, "pipeline file"), path);
}

void PipelineRegistry::LoadText(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  int line_number = 0;
  std::optional<PipelineDef> current;
  int section_line = 0;
  int passes_line = 0, passes_column = 0;  // where the section's pipeline text starts
  auto flush = [&] {
    if (!current) return;
    if (current->text.empty()) {
      throw Error(fmt::format("pipeline '{}' has no 'passes = ...' line", current->name),
                  ir::ErrorLocation{.file = source, .line = section_line, .column = 1});
    }
    try {
      passes::ParsePipeline(current->text);
    } catch (const Error& e) {
      // The pipeline text's own column, placed in the file.
      throw Error(fmt::format("pipeline '{}': {}", current->name, e.message()),
                  ir::ErrorLocation{.pass = e.where().pass,
                                    .file = source,
                                    .line = passes_line,
                                    .column = passes_column + std::max(e.where().column, 1) - 1});
    }
    try {
      Register(*current);
    } catch (const Error& e) {
      throw Error(e.message(),
                  ir::ErrorLocation{.file = source, .line = section_line, .column = 1});
    }
    current.reset();
  };
  auto trim = [](std::string s) {
    size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  while (std::getline(in, line)) {
    ++line_number;
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    ir::ErrorLocation where{.file = source, .line = line_number, .column = 1};
    if (t.front() == '[') {
      if (t.back() != ']') throw Error("expected ']' at the end of a section header", where);
      flush();
      std::string header = trim(t.substr(1, t.size() - 2));
      current = PipelineDef{};
      auto at = header.find('@');
      current->name = trim(header.substr(0, at));
      if (at != std::string::npos) current->target_kind = trim(header.substr(at + 1));
      if (current->name.empty()) throw Error("a pipeline section needs a name: [name]", where);
      section_line = line_number;
      continue;
    }
    auto eq = t.find('=');
    if (eq == std::string::npos) throw Error("expected 'key = value' or '[name]'", where);
    if (!current) throw Error("a 'key = value' line must follow a [name] section header", where);
    std::string key = trim(t.substr(0, eq)), value = trim(t.substr(eq + 1));
    if (key == "description") {
      current->description = value;
    } else if (key == "passes") {
      current->text = value;
      passes_line = line_number;
      passes_column = static_cast<int>(line.find(value, line.find('=') + 1)) + 1;
    } else {
      throw Error(fmt::format("unknown key '{}' (expected description or passes)", key), where);
    }
  }
  flush();
}

std::pair<std::string, std::string> SplitLastPass(const std::string& text) {
  // The last comma outside parentheses, brackets and quotes splits off the last pass.
  int depth = 0;
  bool quoted = false;
  size_t split = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) quoted = !quoted;
    if (quoted) continue;
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) split = i;
  }
  auto trim = [](std::string s) {
    size_t first = s.find_first_not_of(" \t\n");
    size_t last = s.find_last_not_of(" \t\n");
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  };
  if (split == std::string::npos) return {"", trim(text)};
  return {trim(text.substr(0, split)), trim(text.substr(split + 1))};
}

bool IsPass(const std::string& pass_text, const std::string& name) {
  return pass_text == name || pass_text.rfind(name + "(", 0) == 0;
}

std::string WithoutFinalLegalize(const std::string& text) {
  auto [head, last] = SplitLastPass(text);
  if (head.empty() || !IsPass(last, "Legalize")) {
    throw ir::Error(fmt::format(
        "a dynamic build needs a pipeline that ends with Legalize (the graph-level passes, then "
        "lowering with default schedules, as default_heuristic); this one ends with '{}'",
        last));
  }
  return head;
}

}  // namespace tandem::pipelines
