// The kernel reference interpreter: executes a kernel function statement by statement.
//
// It gives kernel IR a meaning independent of code generation: compute definitions are checked
// against the graph reference interpreter with it, and every schedule transformation can be
// checked for preserving the result before any machine code exists. Every buffer access is
// bounds-checked (an out-of-bounds access is an Error naming the buffer and the index), so a
// wrong schedule shows up as an error rather than as memory corruption. Parallel and vectorized
// loops run serially (their semantics are those of a serial loop).
//
// A kernel with loops bound to GPU thread indices is run as a simulation of its launches: each
// statement of the root block is one launch (launches run in order), each combination of the
// values of the bound loops around an access is one thread, and an element of a parameter or
// root-allocated buffer that one thread of a launch writes while another thread of the same
// launch reads or writes it is a race, reported as an Error naming both accesses' buffer and the
// thread. (A GPU orders nothing between the threads of a launch.) A "shared" buffer (one thread
// block's staging memory) is the exception: the code generator separates sibling loops over a
// block's threads by barriers where they share such data, so its accesses are checked only
// within one such loop.
//
// The intrinsic checked_index(index, extent) (i64; what gathers of run-time indices compute
// their position with) is index, or index + extent for a negative index; an index outside
// [-extent, extent) is an Error "index I is out of range [-E, E)". Compiled CPU code reports the
// same message through tandem_index_error (backends/runtime/thread_pool.h), which the caller of
// the kernel rethrows naming the kernel, and reads position 0 instead of the bad one.
#pragma once

#include <vector>

#include "ir/kernel/stmt.h"
#include "ir/tensor.h"

namespace tandem::backends {

// Runs `function` with one tensor per parameter (inputs then outputs, in parameter order).
// Output tensors are written in place. Shapes and dtypes must match the parameter buffers.
void RunKernelReference(const ir::KernelFunction& function, const std::vector<ir::Tensor>& args);

// Allocates outputs for the trailing `num_outputs` parameters, runs the kernel on `inputs`, and
// returns the outputs.
std::vector<ir::Tensor> RunKernelReference(const ir::KernelFunction& function,
                                           const std::vector<ir::Tensor>& inputs,
                                           bool allocate_outputs);

}  // namespace tandem::backends
