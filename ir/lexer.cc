#include "ir/lexer.h"

#include <fmt/format.h>
#include <array>

#include <algorithm>
#include <charconv>
#include <limits>

#include "ir/attrs.h"
#include "ir/error.h"

namespace tandem::ir::text {
namespace {

// ASCII classification that does not depend on the C locale or on the signedness of char.
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsNameChar(char c) {
  return IsLetter(c) || IsDigit(c) || c == '_' || c == '.';
}
bool IsWordStart(char c) {
  return IsLetter(c) || c == '_';
}

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string CharText(char c) {
  auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x21 && byte < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", byte);
}

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& source_name)
      : text_(text), source_name_(source_name) {}

  std::vector<Token> Run() {
    std::vector<Token> tokens;
    while (true) {
      SkipSpaceAndComments();
      Token token;
      token.line = line_;
      token.column = column_;
      if (AtEnd()) {
        token.kind = TokenKind::kEnd;
        tokens.push_back(std::move(token));
        return tokens;
      }
      LexOne(token);
      tokens.push_back(std::move(token));
    }
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char At(size_t offset = 0) const {
    return pos_ + offset < text_.size() ? text_[pos_ + offset] : '\0';
  }
  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  [[noreturn]] void Fail(const std::string& message, int line, int column) const {
    throw Error(message, ErrorLocation{.file = source_name_, .line = line, .column = column});
  }

  void SkipSpaceAndComments() {
    while (!AtEnd()) {
      char c = At();
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        Advance();
      } else if (c == '/' && At(1) == '/') {
        while (!AtEnd() && At() != '\n') Advance();
      } else {
        return;
      }
    }
  }

  void LexOne(Token& token) {
    char c = At();
    if (IsWordStart(c)) {
      token.kind = TokenKind::kWord;
      while (!AtEnd() && IsNameChar(At())) {
        token.text += At();
        Advance();
      }
    } else if (c == '%' || (c == '@' && At(1) != '{')) {
      token.kind = c == '%' ? TokenKind::kValueName : TokenKind::kGlobalName;
      Advance();
      LexName(token, c);
    } else if (c == '@') {
      token.kind = TokenKind::kAnnotationOpen;
      token.text = "@{";
      Advance();
      Advance();
    } else if (c == '"') {
      token.kind = TokenKind::kString;
      token.text = LexString();
    } else if (c == '-' && At(1) == '>') {
      token.kind = TokenKind::kPunct;
      token.text = "->";
      Advance();
      Advance();
    } else if (IsDigit(c) || (c == '-' && (IsDigit(At(1)) || At(1) == '.' || IsLetter(At(1)))) ||
               (c == '.' && IsDigit(At(1)))) {
      LexNumber(token);
    } else if (std::string_view("()[]{},:.+-*/").find(c) != std::string_view::npos) {
      token.kind = TokenKind::kPunct;
      token.text = std::string(1, c);
      Advance();
    } else if (std::string_view("=<>!").find(c) != std::string_view::npos) {
      // = == < <= > >= ! !=
      token.kind = TokenKind::kPunct;
      token.text = std::string(1, c);
      Advance();
      if (At() == '=') {
        token.text += '=';
        Advance();
      }
    } else if ((c == '&' || c == '|') && At(1) == c) {
      token.kind = TokenKind::kPunct;
      token.text = std::string(2, c);
      Advance();
      Advance();
    } else {
      Fail(fmt::format("unexpected character {}", CharText(c)), line_, column_);
    }
  }

  void LexName(Token& token, char sigil) {
    if (At() == '"') {
      token.text = LexString();
      if (token.text.empty()) {
        Fail(fmt::format("a name after '{}' must not be empty", sigil), token.line, token.column);
      }
      return;
    }
    while (!AtEnd() && IsNameChar(At())) {
      token.text += At();
      Advance();
    }
    if (token.text.empty()) {
      std::string found = AtEnd() ? "end of input" : CharText(At());
      Fail(fmt::format("expected a name after '{}' but found {}", sigil, found), token.line,
           token.column);
    }
  }

  std::string LexString() {
    int line = line_, column = column_;
    Advance();  // opening quote
    std::string out;
    while (true) {
      if (AtEnd() || At() == '\n') Fail("unterminated string", line, column);
      char c = At();
      if (c == '"') {
        Advance();
        return out;
      }
      if (c != '\\') {
        out += c;
        Advance();
        continue;
      }
      int escape_line = line_, escape_column = column_;
      Advance();
      char e = At();
      if (AtEnd()) Fail("unterminated string", line, column);
      Advance();
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'x': {
          int high = HexValue(At());
          int low = high < 0 ? -1 : HexValue(At(1));
          if (low < 0) Fail("expected two hex digits after '\\x'", escape_line, escape_column);
          out += static_cast<char>(high * 16 + low);
          Advance();
          Advance();
          break;
        }
        default:
          Fail(fmt::format("unknown escape '\\' followed by {} in string", CharText(e)),
               escape_line, escape_column);
      }
    }
  }

  void LexNumber(Token& token) {
    size_t start = pos_;
    if (At() == '-') Advance();
    bool is_float = false;
    if (IsLetter(At())) {  // -inf, -nan
      std::string word;
      while (!AtEnd() && IsNameChar(At())) {
        word += At();
        Advance();
      }
      if (word != "inf" && word != "nan") {
        Fail(fmt::format("malformed number '-{}'", word), token.line, token.column);
      }
      is_float = true;
    } else {
      size_t digits = 0;
      while (IsDigit(At())) Advance(), ++digits;
      if (At() == '.') {
        is_float = true;
        Advance();
        while (IsDigit(At())) Advance(), ++digits;
      }
      if (digits == 0) {
        Fail("malformed number: expected a digit", token.line, token.column);
      }
      if ((At() == 'e' || At() == 'E') &&
          (IsDigit(At(1)) || ((At(1) == '+' || At(1) == '-') && IsDigit(At(2))))) {
        is_float = true;
        Advance();
        if (At() == '+' || At() == '-') Advance();
        while (IsDigit(At())) Advance();
      }
    }
    if (!AtEnd() && IsNameChar(At())) {
      std::string text = text_.substr(start, pos_ - start);
      while (!AtEnd() && IsNameChar(At())) {
        text += At();
        Advance();
      }
      Fail(fmt::format("malformed number '{}'", text), token.line, token.column);
    }
    token.kind = is_float ? TokenKind::kFloat : TokenKind::kInt;
    token.text = text_.substr(start, pos_ - start);
  }

  const std::string& text_;
  const std::string& source_name_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

std::vector<Token> Tokenize(const std::string& text, const std::string& source_name) {
  return Lexer(text, source_name).Run();
}

std::string Describe(const Token& token) {
  auto shorten = [](const std::string& s) { return s.size() > 24 ? s.substr(0, 24) + "..." : s; };
  switch (token.kind) {
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kString:
      return "string " + shorten(Quote(token.text));
    case TokenKind::kValueName:
      return fmt::format("'%{}'",
                         shorten(IsPlainName(token.text) ? token.text : Quote(token.text)));
    case TokenKind::kGlobalName:
      return fmt::format("'@{}'",
                         shorten(IsPlainName(token.text) ? token.text : Quote(token.text)));
    default:
      return fmt::format("'{}'", shorten(token.text));
  }
}

bool IsPlainName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

bool IsBareWord(const std::string& word) {
  return !word.empty() && IsWordStart(word[0]) && IsPlainName(word);
}

std::string Quote(const std::string& text) {
  return ToString(AttrValue{text});
}

namespace {
constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (IsDigit(c)) return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
}  // namespace

std::string EncodeBase64(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = static_cast<uint32_t>(bytes[i]) << 16;
    if (n > 1) group |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (n > 2) group |= bytes[i + 2];
    out += kBase64Alphabet[(group >> 18) & 63];
    out += kBase64Alphabet[(group >> 12) & 63];
    out += n > 1 ? kBase64Alphabet[(group >> 6) & 63] : '=';
    out += n > 2 ? kBase64Alphabet[group & 63] : '=';
  }
  return out;
}

std::optional<std::vector<uint8_t>> DecodeBase64(const std::string& text) {
  // 1. A table of the 64 digits (-1 elsewhere).
  static const std::array<int8_t, 256> kValues = [] {
    std::array<int8_t, 256> values{};
    values.fill(-1);
    for (int c = 0; c < 256; ++c)
      values[static_cast<size_t>(c)] = static_cast<int8_t>(Base64Value(static_cast<char>(c)));
    return values;
  }();
  if (text.size() % 4 != 0) return std::nullopt;
  size_t groups = text.size() / 4;
  size_t padding = 0;
  if (groups > 0 && text[text.size() - 1] == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
  std::vector<uint8_t> out(groups * 3 - padding);
  // 2. Every group but the last: four digits, no padding.
  const auto* in = reinterpret_cast<const uint8_t*>(text.data());
  uint8_t* o = out.data();
  for (size_t g = 0; g + 1 < groups; ++g, in += 4, o += 3) {
    int a = kValues[in[0]], b = kValues[in[1]], c = kValues[in[2]], d = kValues[in[3]];
    if ((a | b | c | d) < 0) return std::nullopt;
    uint32_t group = static_cast<uint32_t>(a) << 18 | static_cast<uint32_t>(b) << 12 |
                     static_cast<uint32_t>(c) << 6 | static_cast<uint32_t>(d);
    o[0] = static_cast<uint8_t>(group >> 16);
    o[1] = static_cast<uint8_t>(group >> 8);
    o[2] = static_cast<uint8_t>(group);
  }
  if (groups == 0) return out;
  // 3. The last group, with '=' allowed in its last two digits only.
  uint32_t group = 0;
  for (size_t j = 0; j < 4; ++j) {
    int value = kValues[in[j]];
    if (in[j] == '=' && j >= 4 - padding) {
      value = 0;
    } else if (value < 0) {
      return std::nullopt;
    }
    group = group << 6 | static_cast<uint32_t>(value);
  }
  o[0] = static_cast<uint8_t>(group >> 16);
  if (padding < 2) o[1] = static_cast<uint8_t>(group >> 8);
  if (padding < 1) o[2] = static_cast<uint8_t>(group);
  return out;
}

std::string NameText(char sigil, const std::string& name) {
  return sigil + (IsPlainName(name) ? name : Quote(name));
}

std::string KeyText(const std::string& key) {
  return IsBareWord(key) ? key : Quote(key);
}

std::string AttrDictText(const Attrs& attrs) {
  if (attrs.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attrs.values()) {
    if (!first) out += ", ";
    first = false;
    out += KeyText(key) + "=" + ToString(value);
  }
  return out + "}";
}

// ---- TokenReader ----

bool TokenReader::TryPunct(std::string_view punct) {
  if (!PeekPunct(punct)) return false;
  Next();
  return true;
}

bool TokenReader::TryWord(std::string_view word) {
  if (!PeekWord(word)) return false;
  Next();
  return true;
}

const Token& TokenReader::ExpectPunct(std::string_view punct) {
  if (!PeekPunct(punct)) Expected(fmt::format("'{}'", punct));
  return Next();
}

const Token& TokenReader::ExpectWord(std::string_view word) {
  if (!PeekWord(word)) Expected(fmt::format("'{}'", word));
  return Next();
}

const Token& TokenReader::ExpectKind(TokenKind kind, const std::string& what) {
  if (Peek().kind != kind) Expected(what);
  return Next();
}

void TokenReader::Fail(const Token& at, const std::string& message, const std::string& op,
                       const std::string& node) const {
  throw Error(
      message,
      ErrorLocation{
          .op = op, .node = node, .file = source_name_, .line = at.line, .column = at.column});
}

void TokenReader::Expected(const std::string& what) const {
  Fail(Peek(), fmt::format("expected {} but found {}", what, Describe(Peek())));
}

int64_t TokenReader::Int(const Token& token) const {
  int64_t value = 0;
  const char* end = token.text.data() + token.text.size();
  auto [ptr, ec] = std::from_chars(token.text.data(), end, value);
  if (ec != std::errc() || ptr != end) {
    Fail(token, fmt::format("integer {} is out of range for 64 bits", token.text));
  }
  return value;
}

bool TokenReader::IsNumber(const Token& token) {
  return token.kind == TokenKind::kInt || token.kind == TokenKind::kFloat ||
         (token.kind == TokenKind::kWord && (token.text == "inf" || token.text == "nan"));
}

template <typename T>
T TokenReader::Float(const Token& token, const char* dtype) const {
  std::string_view text = token.text;
  bool negative = !text.empty() && text[0] == '-';
  std::string_view magnitude = negative ? text.substr(1) : text;
  if (magnitude == "inf") {
    return negative ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  }
  if (magnitude == "nan") return std::numeric_limits<T>::quiet_NaN();
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    Fail(token, fmt::format("number {} is out of range for {}", token.text, dtype));
  }
  return value;
}

template float TokenReader::Float<float>(const Token&, const char*) const;
template double TokenReader::Float<double>(const Token&, const char*) const;

AttrValue TokenReader::AttrValueLiteral() {
  const Token& token = Peek();
  if (token.kind == TokenKind::kInt) return Int(Next());
  if (IsNumber(token)) return Float<double>(Next(), "a float attribute");
  if (token.kind == TokenKind::kString) return Next().text;
  if (!PeekPunct("[")) Expected("an attribute value (an integer, a float, a string or a list)");
  Next();
  if (TryPunct("]")) return std::vector<int64_t>{};
  if (PeekPunct(".") && PeekPunct("]", 1)) {  // "[.]": the empty float list
    Next();
    Next();
    return std::vector<double>{};
  }
  std::vector<const Token*> items;
  bool all_ints = true;
  do {
    if (!IsNumber(Peek())) Expected("a number");
    items.push_back(&Next());
    all_ints = all_ints && items.back()->kind == TokenKind::kInt;
  } while (TryPunct(","));
  ExpectPunct("]");
  if (all_ints) {
    std::vector<int64_t> ints;
    for (const Token* item : items) ints.push_back(Int(*item));
    return ints;
  }
  std::vector<double> floats;
  for (const Token* item : items) floats.push_back(Float<double>(*item, "a float attribute"));
  return floats;
}

Attrs TokenReader::AttrDict(bool opened) {
  if (!opened) ExpectPunct("{");
  Attrs attrs;
  if (TryPunct("}")) return attrs;
  do {
    const Token& key = Peek();
    if (key.kind != TokenKind::kWord && key.kind != TokenKind::kString) {
      Expected("an attribute name");
    }
    Next();
    if (attrs.Has(key.text)) Fail(key, fmt::format("attribute '{}' is given twice", key.text));
    ExpectPunct("=");
    attrs.Set(key.text, AttrValueLiteral());
  } while (TryPunct(","));
  ExpectPunct("}");
  return attrs;
}

Attrs TokenReader::OptionalAnnotations() {
  if (Peek().kind != TokenKind::kAnnotationOpen) return {};
  Next();
  return AttrDict(/*opened=*/true);
}

}  // namespace tandem::ir::text
