#include "ir/error.h"

#include <fmt/format.h>

namespace tandem::ir {

Error::Error(std::string message, ErrorLocation where)
    : std::runtime_error(Format(message, where)),
      message_(std::move(message)),
      where_(std::move(where)) {}

std::string Error::Format(const std::string& message, const ErrorLocation& where) {
  std::string prefix;
  if (!where.file.empty()) {
    prefix += where.file;
    if (where.line > 0) prefix += fmt::format(":{}:{}", where.line, where.column);
    prefix += ": ";
  } else if (where.line > 0) {
    prefix += fmt::format("line {}, column {}: ", where.line, where.column);
  }
  std::string context;
  auto add = [&](const char* label, const std::string& value) {
    if (value.empty()) return;
    context += context.empty() ? " (" : ", ";
    context += fmt::format("{} '{}'", label, value);
  };
  add("pass", where.pass);
  add("op", where.op);
  add("node", where.node);
  if (!context.empty()) context += ")";
  return prefix + message + context;
}

Error Error::WithPass(const std::string& pass) const {
  ErrorLocation w = where_;
  if (w.pass.empty()) w.pass = pass;
  return Error(message_, w);
}
Error Error::WithOp(const std::string& op) const {
  ErrorLocation w = where_;
  if (w.op.empty()) w.op = op;
  return Error(message_, w);
}
Error Error::WithNode(const std::string& node) const {
  ErrorLocation w = where_;
  if (w.node.empty()) w.node = node;
  return Error(message_, w);
}
Error Error::WithFile(const std::string& file) const {
  ErrorLocation w = where_;
  if (w.file.empty()) w.file = file;
  return Error(message_, w);
}

}  // namespace tandem::ir
