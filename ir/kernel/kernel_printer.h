// The text form of kernel IR (grammar and example in docs/text_form.md, section "Kernel
// functions"); ir/kernel/kernel_parser.h reads it back.
//
// PrintKernel writes a kernel function so that ParseKernel returns a function that is
// StructuralEqual to it (ir/kernel/kernel_structural.h) and prints to the same text. Variables
// and buffers are printed by their name hints, made unique within the kernel (`%i`, `%i_1`) so
// that each name in the text stands for exactly one Var or Buffer object. Variables used where
// nothing binds them (only in hand-built IR: compute definitions and schedules never make such
// uses, and the root block's regions cover whole buffers) are listed in the kernel's `free(...)`
// clause. What the text cannot express (a Var bound at two places, null expressions, ...) is
// listed in docs/text_form.md.
#pragma once

#include <string>

#include "ir/kernel/stmt.h"

namespace tandem::ir {

// `kernel @name(inputs) -> (outputs) [attributes {...}] { body }`, ending with a newline.
std::string PrintKernel(const KernelFunction& kernel);

// One expression in the syntax of the kernel text, with variables and buffers by their name
// hints (not made unique): for messages and debugging.
std::string PrintExpr(const Expr& expr);

}  // namespace tandem::ir
