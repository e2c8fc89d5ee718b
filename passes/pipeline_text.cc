#include "passes/pipeline_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "ir/error.h"

namespace tandem::passes {

using ir::Error;

namespace {

// The deepest eval=[...] nesting accepted (real pipelines nest two or three tuning passes).
constexpr int kMaxPipelineDepth = 64;

class PipelineParser {
 public:
  PipelineParser(const std::string& text, const PassRegistry& registry)
      : text_(text), registry_(registry) {}

  PassPtr Parse() {
    std::vector<PassPtr> passes = ParseList();
    SkipSpace();
    if (pos_ < text_.size())
      Fail(fmt::format("expected ',' or the end but found '{}'", text_[pos_]));
    return MakeSequential(std::move(passes));
  }

 private:
  [[noreturn]] void Fail(const std::string& message) const {
    throw Error(fmt::format("pipeline text: {}", message),
                ir::ErrorLocation{.line = 1, .column = static_cast<int>(pos_) + 1});
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Accept(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void Expect(char c) {
    if (!Accept(c)) {
      Fail(fmt::format("expected '{}' but found {}", c,
                       pos_ < text_.size() ? fmt::format("'{}'", text_[pos_]) : "the end"));
    }
  }
  std::string Identifier(const char* what) {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
    if (start == pos_) {
      Fail(fmt::format("expected {} but found {}", what,
                       pos_ < text_.size() ? fmt::format("'{}'", text_[pos_]) : "the end"));
    }
    return text_.substr(start, pos_ - start);
  }

  std::vector<PassPtr> ParseList() {
    // eval=[...] nests a pipeline in a pass: bounded, so that hostile text cannot exhaust the
    // stack.
    if (++depth_ > kMaxPipelineDepth) {
      Fail(fmt::format("eval=[...] nested deeper than {} levels", kMaxPipelineDepth));
    }
    std::vector<PassPtr> passes;
    do {
      passes.push_back(ParsePass());
    } while (Accept(','));
    --depth_;
    return passes;
  }

  PassPtr ParsePass() {
    SkipSpace();
    size_t name_pos = pos_;
    std::string name = Identifier("a pass name");
    PassArguments arguments;
    std::vector<PassPtr> eval;
    if (Accept('(')) {
      if (!Accept(')')) {
        do {
          std::string key = Identifier("an argument name");
          Expect('=');
          if (key == "eval") {
            Expect('[');
            eval = ParseList();
            Expect(']');
          } else {
            arguments.emplace_back(key, ParseValue());
          }
        } while (Accept(','));
        Expect(')');
      }
    }
    try {
      return registry_.Create(name, std::move(arguments), std::move(eval));
    } catch (const Error& e) {
      throw Error(
          fmt::format("pipeline text: {}", e.message()),
          ir::ErrorLocation{.pass = name, .line = 1, .column = static_cast<int>(name_pos) + 1});
    }
  }

  // A value; `in_list` for an element of a list, which may not be a list (lists do not nest).
  ir::AttrValue ParseValue(bool in_list = false) {
    SkipSpace();
    if (pos_ >= text_.size()) Fail("expected a value but found the end");
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      std::string s;
      while (pos_ < text_.size() && text_[pos_] != '"') {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
        s += text_[pos_++];
      }
      if (pos_ >= text_.size()) Fail("unterminated string");
      ++pos_;
      return s;
    }
    if (c == '[') {
      if (in_list) Fail("a list may hold integers only");
      ++pos_;
      std::vector<int64_t> ints;
      if (!Accept(']')) {
        do {
          ir::AttrValue v = ParseValue(/*in_list=*/true);
          if (!std::holds_alternative<int64_t>(v)) Fail("a list may hold integers only");
          ints.push_back(std::get<int64_t>(v));
        } while (Accept(','));
        Expect(']');
      }
      return ints;
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      std::string word = Identifier("a value");
      if (word == "true") return int64_t{1};
      if (word == "false") return int64_t{0};
      Fail(fmt::format("'{}' is not a value (quote strings: \"{}\")", word, word));
    }
    size_t start = pos_;
    if (c == '-' || c == '+') ++pos_;
    bool is_float = false;
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E' ||
                                   ((text_[pos_] == '-' || text_[pos_] == '+') &&
                                    (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E')))) {
      is_float = is_float || !std::isdigit(static_cast<unsigned char>(text_[pos_]));
      ++pos_;
    }
    std::string number = text_.substr(start, pos_ - start);
    try {
      size_t used = 0;
      if (is_float) {
        double d = std::stod(number, &used);
        if (used == number.size()) return d;
      } else {
        int64_t i = std::stoll(number, &used);
        if (used == number.size()) return i;
      }
    } catch (const std::exception&) {
    }
    pos_ = start;
    Fail(fmt::format("expected a value but found '{}'",
                     number.empty() ? std::string(1, c) : number));
  }

  const std::string& text_;
  const PassRegistry& registry_;
  size_t pos_ = 0;
  int depth_ = 0;  // pipelines open: 1 at the top, one more per eval=[...]
};

std::string PrintOne(const Pass& pass) {
  if (pass.IsGroup()) {
    std::vector<std::string> items;
    for (const PassPtr& p : pass.nested()) items.push_back(PrintOne(*p));
    return fmt::format("{}", fmt::join(items, ", "));
  }
  std::vector<std::string> parts;
  for (const auto& [key, value] : pass.arguments())
    parts.push_back(key + "=" + ir::ToString(value));
  std::vector<PassPtr> nested = pass.nested();
  if (!nested.empty()) {
    std::vector<std::string> items;
    for (const PassPtr& p : nested) items.push_back(PrintOne(*p));
    parts.push_back(fmt::format("eval=[{}]", fmt::join(items, ", ")));
  }
  if (parts.empty()) return pass.name();
  return fmt::format("{}({})", pass.name(), fmt::join(parts, ", "));
}

void PrintTree(const Pass& pass, int indent, std::string& out) {
  if (pass.IsGroup()) {
    for (const PassPtr& p : pass.nested()) PrintTree(*p, indent, out);
    return;
  }
  std::vector<std::pair<std::string, PassPtr>> sides = pass.side_pipelines();
  std::vector<std::string> parts;
  for (const auto& [key, value] : pass.arguments()) {
    bool side =
        std::any_of(sides.begin(), sides.end(), [&](const auto& s) { return s.first == key; });
    // A side pipeline's text is shown as its structure below.
    parts.push_back(key + "=" + (side ? std::string("[...]") : ir::ToString(value)));
  }
  out += std::string(static_cast<size_t>(indent) * 2, ' ') + pass.name();
  if (!parts.empty()) out += fmt::format("({})", fmt::join(parts, ", "));
  if (pass.info().is_tuning) out += "  [tuning]";
  out += "\n";
  std::vector<PassPtr> nested = pass.nested();
  if (!nested.empty()) {
    out += std::string(static_cast<size_t>(indent + 1) * 2, ' ') + "eval:\n";
    for (const PassPtr& p : nested) PrintTree(*p, indent + 2, out);
  }
  for (const auto& [key, pipeline] : sides) {
    out += std::string(static_cast<size_t>(indent + 1) * 2, ' ') + key + ":\n";
    PrintTree(*pipeline, indent + 2, out);
  }
}

}  // namespace

PassPtr ParsePipeline(const std::string& text, const PassRegistry& registry) {
  return PipelineParser(text, registry).Parse();
}

std::string PrintPipeline(const Pass& pass) {
  return PrintOne(pass);
}

std::string PrintPipelineTree(const Pass& pass) {
  std::string out;
  PrintTree(pass, 0, out);
  return out;
}

}  // namespace tandem::passes
