// Lexical rules of the IR text form (docs/text_form.md), shared by the printers and parsers of
// graph and kernel IR so that what one writes the other reads, and a TokenReader with the
// checks and error messages every parser of the text form uses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"

namespace tandem::ir::text {

enum class TokenKind {
  kEnd,             // end of input
  kWord,            // bare word: [A-Za-z_][A-Za-z0-9_.]* (keywords, op names, dtypes, keys)
  kValueName,       // %name or %"quoted name"; text is the decoded name
  kGlobalName,      // @name or @"quoted name"; text is the decoded name
  kAnnotationOpen,  // "@{"
  kString,          // "..." with escapes; text is the decoded string
  kInt,             // -?[0-9]+
  kFloat,           // a number with '.', or an exponent; also -inf and -nan
  kPunct,           // ( ) [ ] { } , : = . -> and the operators of kernel expressions:
                    // + - * / < <= > >= == != ! && ||
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

// Splits `text` into tokens ending with one kEnd token. Skips whitespace and `//` comments.
// Throws Error (with file `source_name`, line and column) at a character that starts no token,
// an unterminated string, a bad escape or a malformed number.
std::vector<Token> Tokenize(const std::string& text, const std::string& source_name);

// How a token is named in messages: 'foo', '%x', string "ab", end of input.
std::string Describe(const Token& token);

// True when `name` can follow '%' or '@' unquoted: [A-Za-z0-9_.]+.
bool IsPlainName(const std::string& name);
// True when `word` lexes as one kWord token: [A-Za-z_][A-Za-z0-9_.]*.
bool IsBareWord(const std::string& word);
// The string as a quoted literal with escapes (the form ToString(AttrValue) prints).
std::string Quote(const std::string& text);

// Standard base64 (RFC 4648 alphabet, '=' padding), used for the bytes of large constants.
std::string EncodeBase64(std::span<const uint8_t> bytes);
// Decodes strict base64 (length a multiple of 4, padding only at the end); nullopt when malformed.
std::optional<std::vector<uint8_t>> DecodeBase64(const std::string& text);

// `sigil` followed by the name, quoted when it is not a plain name: %x, @"fused relu".
std::string NameText(char sigil, const std::string& name);
// An attribute key or other bare-word slot: the word itself, or a quoted string.
std::string KeyText(const std::string& key);
// "{a=1, b=\"x\"}", or "" when `attrs` is empty.
std::string AttrDictText(const Attrs& attrs);

// A cursor over the tokens of one text. Every failure is an Error carrying the source name and
// the 1-based line and column of the offending token; `Expected` words it as
// "expected <what> but found <token>". Reading past the end keeps returning the kEnd token.
class TokenReader {
 public:
  TokenReader(const std::string& text, const std::string& source_name)
      : tokens_(Tokenize(text, source_name)), source_name_(source_name) {}

  const std::string& source_name() const { return source_name_; }

  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& Next() {
    const Token& token = Peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
  }
  bool AtEnd() const { return Peek().kind == TokenKind::kEnd; }
  bool PeekPunct(std::string_view punct, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kPunct && Peek(ahead).text == punct;
  }
  bool PeekWord(std::string_view word, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kWord && Peek(ahead).text == word;
  }
  bool TryPunct(std::string_view punct);
  bool TryWord(std::string_view word);
  const Token& ExpectPunct(std::string_view punct);
  const Token& ExpectWord(std::string_view word);
  const Token& ExpectKind(TokenKind kind, const std::string& what);

  [[noreturn]] void Fail(const Token& at, const std::string& message, const std::string& op = "",
                         const std::string& node = "") const;
  [[noreturn]] void Expected(const std::string& what) const;

  // The value of an integer token; an Error when it does not fit 64 bits.
  int64_t Int(const Token& token) const;
  // True for int and float tokens and the words `inf` and `nan`.
  static bool IsNumber(const Token& token);
  // A float of type T (float or double) from a number token (see IsNumber); `dtype` names the
  // target in the out-of-range message. `nan` and `-nan` give the quiet NaN.
  template <typename T>
  T Float(const Token& token, const char* dtype) const;

  // An attribute value: INT | FLOAT | STRING | list (docs/text_form.md).
  AttrValue AttrValueLiteral();
  // `{key=value, ...}`, or the rest of `@{...}` when the opening was already consumed.
  Attrs AttrDict(bool opened = false);
  // `@{...}` when present, else no attributes.
  Attrs OptionalAnnotations();

 private:
  std::vector<Token> tokens_;
  std::string source_name_;
  size_t pos_ = 0;
};

}  // namespace tandem::ir::text
