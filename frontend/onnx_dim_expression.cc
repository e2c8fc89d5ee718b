#include "frontend/onnx_dim_expression.h"

#include <cctype>

namespace tandem::frontend {

namespace {

// Recursive descent over one dimension name:
//   sum     := product (('+' | '-') product)*
//   product := factor ('*' factor)*
//   factor  := integer | name | '(' sum ')' | '-' factor
// With `sizes`, evaluates (nullopt for an unbound name or an overflow); without, collects the
// names. `ok` turns false at a syntax error.
class DimExpressionParser {
 public:
  DimExpressionParser(const std::string& text, const std::map<std::string, int64_t>* sizes)
      : text_(text), sizes_(sizes) {}

  // The value of the whole text (0 when only collecting); nullopt when it does not parse or
  // cannot be evaluated.
  std::optional<int64_t> Parse() {
    std::optional<int64_t> value = Sum();
    SkipSpaces();
    if (position_ != text_.size()) ok_ = false;
    if (!ok_) return std::nullopt;
    return value;
  }
  bool ok() const { return ok_; }
  bool has_operator() const { return has_operator_; }
  const std::set<std::string>& names() const { return names_; }

 private:
  void SkipSpaces() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) {
      ++position_;
    }
  }
  bool Accept(char c) {
    SkipSpaces();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      has_operator_ = true;
      return true;
    }
    return false;
  }
  static std::optional<int64_t> Combine(char op, std::optional<int64_t> a,
                                        std::optional<int64_t> b) {
    if (!a || !b) return std::nullopt;
    int64_t result = 0;
    bool overflow = op == '+'   ? __builtin_add_overflow(*a, *b, &result)
                    : op == '-' ? __builtin_sub_overflow(*a, *b, &result)
                                : __builtin_mul_overflow(*a, *b, &result);
    if (overflow) return std::nullopt;
    return result;
  }

  std::optional<int64_t> Sum() {
    std::optional<int64_t> value = Product();
    while (ok_) {
      if (Accept('+')) {
        value = Combine('+', value, Product());
      } else if (Accept('-')) {
        value = Combine('-', value, Product());
      } else {
        break;
      }
    }
    return value;
  }
  std::optional<int64_t> Product() {
    std::optional<int64_t> value = Factor();
    while (ok_ && Accept('*')) value = Combine('*', value, Factor());
    return value;
  }
  std::optional<int64_t> Factor() {
    SkipSpaces();
    if (position_ >= text_.size()) {
      ok_ = false;
      return std::nullopt;
    }
    if (Accept('(')) {
      std::optional<int64_t> value = Sum();
      if (!Accept(')')) ok_ = false;
      return value;
    }
    if (Accept('-')) return Combine('-', 0, Factor());
    unsigned char first = static_cast<unsigned char>(text_[position_]);
    size_t start = position_;
    if (std::isdigit(first)) {
      while (position_ < text_.size() &&
             std::isdigit(static_cast<unsigned char>(text_[position_]))) {
        ++position_;
      }
      try {
        return std::stoll(text_.substr(start, position_ - start));
      } catch (const std::exception&) {
        return std::nullopt;  // out of range
      }
    }
    if (!std::isalpha(first) && first != '_') {
      ok_ = false;
      return std::nullopt;
    }
    while (position_ < text_.size()) {
      unsigned char c = static_cast<unsigned char>(text_[position_]);
      if (!std::isalnum(c) && c != '_' && c != '.') break;
      ++position_;
    }
    std::string name = text_.substr(start, position_ - start);
    names_.insert(name);
    if (sizes_ == nullptr) return 0;
    auto it = sizes_->find(name);
    if (it == sizes_->end()) return std::nullopt;
    return it->second;
  }

  const std::string& text_;
  const std::map<std::string, int64_t>* sizes_;
  size_t position_ = 0;
  bool ok_ = true;
  bool has_operator_ = false;
  std::set<std::string> names_;
};

}  // namespace

std::set<std::string> DimParamSymbols(const std::string& dim_param) {
  DimExpressionParser parser(dim_param, nullptr);
  parser.Parse();
  if (!parser.ok() || !parser.has_operator()) return {dim_param};
  return parser.names();
}

std::optional<int64_t> DimParamExtent(const std::string& dim_param,
                                      const std::map<std::string, int64_t>& sizes) {
  if (auto exact = sizes.find(dim_param); exact != sizes.end()) return exact->second;
  DimExpressionParser parser(dim_param, &sizes);
  std::optional<int64_t> value = parser.Parse();
  if (!parser.ok() || !parser.has_operator()) return std::nullopt;
  return value;
}

}  // namespace tandem::frontend
