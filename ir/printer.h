// The text form of the graph IR (grammar and example in docs/text_form.md).
//
// PrintModule writes a module so that ParseModule (ir/parser.h) reads back a structurally equal
// module, and printing that again gives the same text, as long as no constant is elided.
// Nodes print in CanonicalNodeOrder (ir/structural.h): parameters first, then the other nodes in
// their order.
// Kernel functions print in full after the graph functions (PrintKernel,
// ir/kernel/kernel_printer.h).
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace tandem::ir {

struct PrintOptions {
  // Constants with more bytes than this print as `elided` (for IR dumps of real models);
  // -1 prints every constant in full so the text round-trips.
  int64_t max_constant_bytes = -1;
  // Renames values %0, %1, ... in canonical node order (for diffs that ignore value names).
  bool canonical_names = false;
};

std::string PrintModule(const IRModule& module, const PrintOptions& options = {});
// One `graph @name(...) -> type { ... }` block; ParseModule and ParseFunction read it back.
std::string PrintFunction(const GraphFunction& function, const PrintOptions& options = {});
// The text of a type: "f32[1,3]", "f32[1,8,56,56,8]{NCHW8c}", "(f32[2], i64[])". Equals
// ToString(Type) except that a layout which is not a bare word is quoted.
std::string PrintType(const Type& type);

}  // namespace tandem::ir
