// Which outputs of a kernel may share memory with one of its inputs.
//
// An executable can then give such an output the bytes of an input that no later call reads (a
// residual added in a convolution's epilogue, an elementwise op's operand), which saves the
// memory traffic of a second buffer: the output's cache lines are the ones the kernel just read.
#pragma once

#include <vector>

#include "ir/kernel/stmt.h"

namespace tandem::ir {

// Parameter indices (into KernelFunction::params) of an input and an output that may alias.
struct InPlacePair {
  int input = -1;
  int output = -1;
  bool operator==(const InPlacePair&) const = default;
};

// The pairs of `kernel` for which running with the output in the input's memory computes what
// running with separate memory does. A pair qualifies when:
//   1. the input and the output have the same dtype and shape;
//   2. the output is written by exactly one store, in a block whose iterators are all spatial
//      and which has no init (each element is written once), and the kernel never reads it;
//   3. every read of the input is inside the value of that store, at the store's own indices
//      (each input element is read only where the same output element is written, and the
//      store's value depends on the read, so the read comes first).
// Each input and each output is in at most one pair (the first qualifying one, in parameter
// order). Conservative: a kernel whose structure it cannot see through gets no pair.
std::vector<InPlacePair> InPlacePairs(const KernelFunction& kernel);

}  // namespace tandem::ir
