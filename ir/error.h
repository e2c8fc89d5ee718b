// The one error type of Tandem.
//
// Every failure that can be caused by user input (bad IR text, a malformed ONNX file, a shape
// mismatch, an illegal schedule, an unknown pass) is reported as a tandem::ir::Error carrying
// what failed and where: the pass, the op, the node and the source line/column, whichever are
// known. Code that catches an Error may add context on the way out (WithPass, WithNode) so the
// final message names the whole path to the failure.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace tandem::ir {

// Where a failure happened. Fields that are unknown stay empty.
struct ErrorLocation {
  std::string pass;  // pass that was running
  std::string op;    // operator involved (e.g. "conv2d")
  std::string node;  // SSA value or ONNX node name
  std::string file;  // source file or model path
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorLocation where = {});

  // The message without location context.
  const std::string& message() const { return message_; }
  const ErrorLocation& where() const { return where_; }

  // Copies with more context; an already-set field is kept (innermost context wins).
  Error WithPass(const std::string& pass) const;
  Error WithOp(const std::string& op) const;
  Error WithNode(const std::string& node) const;
  Error WithFile(const std::string& file) const;

 private:
  static std::string Format(const std::string& message, const ErrorLocation& where);
  std::string message_;
  ErrorLocation where_;
};

// Throws Error(message, where) when condition is false.
inline void Check(bool condition, const std::string& message, const ErrorLocation& where = {}) {
  if (!condition) throw Error(message, where);
}

}  // namespace tandem::ir

namespace tandem {
using ir::Error;
using ir::ErrorLocation;
}  // namespace tandem
