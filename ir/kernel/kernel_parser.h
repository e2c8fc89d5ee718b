// Parser of the kernel IR text form (grammar in docs/text_form.md, section "Kernel functions";
// ir/kernel/kernel_printer.h writes it).
//
// The parser rebuilds the exact structure the printer wrote. Variables bind by scope: every loop
// variable and block iterator is a new Var, and a use refers to the innermost enclosing
// definition of its name; a name used where nothing binds it is an error unless the kernel lists
// it in its `free(...)` clause. Buffers are declared before use, as parameters or in a block's
// `alloc`, and a name stands for one Buffer within the kernel.
// Expressions are type-checked like their builders in ir/kernel/expr.h (operands of a binary
// operator have one dtype, select branches match, a load or store gives one index per buffer
// axis, a stored value has the buffer's dtype). Any malformed input ends in an Error with the
// source name, line and column and what was expected; the parser never crashes or hangs.
#pragma once

#include <string>
#include <string_view>

#include "ir/kernel/stmt.h"
#include "ir/lexer.h"

namespace tandem::ir {

// Parses text holding exactly one `kernel @name(...) -> (...) { ... }`.
KernelFunction ParseKernel(const std::string& text, const std::string& source_name = "<text>");

// Reads one kernel definition starting at the reader's current token (`kernel`); this is how
// ParseModule (ir/parser.h) reads the kernel functions of a module.
KernelFunction ParseKernelFunction(text::TokenReader& reader);

// True when `word` has a meaning of its own in kernel expressions (a literal, a built-in such
// as `select` or `min`, a data type), so that an intrinsic call of that name is written quoted:
// `"min"(%a, %b)`.
bool IsKernelExpressionKeyword(std::string_view word);

}  // namespace tandem::ir
