// oneDNN's instruction set follows the target: code placed on oneDNN for an AVX2 target runs
// AVX2 kernels even on an AVX-512 machine, so that what oneDNN accepts (placement verdicts), the
// code it runs and where that code can run are the target's, not the machine's.
//
// oneDNN fixes its instruction set once per process (the first time it dispatches). So the
// first target that reaches oneDNN in a process fixes it; a later target that needs another one
// is an Error naming both (run it in a process of its own), except that a target whose
// instruction set is a superset of the fixed one is accepted (its oneDNN code is the fixed
// subset: correct, possibly slower).
#pragma once

#include <string>

#include "backends/onednn/onednn_isa_pinning.h"
#include "ir/target.h"

namespace tandem::backends {

// The oneDNN instruction set for `target` ("avx2", "avx512_core", ... as oneDNN names them).
std::string OnednnIsaFor(const ir::Target& target);

// Fixes oneDNN's instruction set for `target` in this process (see the file comment). Safe to
// call any number of times and from any thread.
void PinOnednnIsa(const ir::Target& target);

// EnsureOnednnIsaFixed and PinnedOnednnIsa: onednn_isa_pinning.h.

}  // namespace tandem::backends
