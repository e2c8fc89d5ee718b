// Lexical rules of the graph IR text form (docs/text_form.md), shared by the printer and the
// parser so that what one writes the other reads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

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
  kPunct,           // ( ) [ ] { } , : = . ->
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

}  // namespace tandem::ir::text
