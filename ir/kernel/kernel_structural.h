// Structural equality and stable hash of kernel functions.
//
// Two kernel functions are structurally equal when they have the same name, parameters (dtype,
// shape, scope; buffer names ignored) and number of outputs, and bodies that match statement by
// statement with variables and allocated buffers matched by where they are defined (loop
// variables, block iterators, allocations) rather than by name. Float constants compare by bit
// pattern. The hash is XXH64 over the same canonical serialization, so it is stable across
// processes and machines (it keys kernel workloads in the tuning database).
#pragma once

#include <cstdint>
#include <string>

#include "ir/kernel/stmt.h"

namespace tandem::ir {

bool StructuralEqual(const KernelFunction& a, const KernelFunction& b);
uint64_t StructuralHash(const KernelFunction& function);
// The canonical serialization equality and hash are computed over (one token per line); handy
// to show the first difference in a test failure.
std::string CanonicalForm(const KernelFunction& function);
// "" when equal; otherwise the first differing line of the canonical forms.
std::string StructuralDiff(const KernelFunction& a, const KernelFunction& b);

}  // namespace tandem::ir
