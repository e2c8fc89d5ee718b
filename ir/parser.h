// Parser of the graph IR text form (grammar in docs/text_form.md; ir/printer.h writes it).
//
// The parser builds functions through the same checks as GraphBuilder: every op call is
// type-checked with InferCallType (its attributes normalized, defaults filled in), and a
// printed result type must equal the inferred one. Any malformed input, however garbled, ends in
// an Error carrying the source name and the 1-based line and column, with a message saying what
// was expected and what was found; the parser never crashes or loops.
#pragma once

#include <string>

#include "ir/graph.h"

namespace tandem::ir {

// Parses a module: `module [attributes {...}] { graph ... kernel ... }`, or just a sequence of
// `graph` blocks (as PrintFunction writes them, possibly followed by `kernel` functions) forming a
// module without attributes. Kernel functions are read by ParseKernelFunction
// (ir/kernel/kernel_parser.h); a kernel name defined twice is an error.
IRModule ParseModule(const std::string& text, const std::string& source_name = "<text>");
// Parses text holding exactly one graph function (with or without the module around it).
GraphFunction ParseFunction(const std::string& text, const std::string& source_name = "<text>");

}  // namespace tandem::ir
