// The reference interpreter: runs a graph function op by op with each op's reference semantics
// (plain loops, double accumulation). It is slow and obviously correct, and it is the oracle
// that every compiled program in Tandem is checked against.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::backends {

// Runs `function` on `inputs` (one per parameter, in order) and returns its outputs flattened
// (one tensor per tensor of the result type). Input shapes and dtypes are checked; a mismatch is
// an Error naming the parameter.
std::vector<ir::Tensor> RunReference(const ir::GraphFunction& function,
                                     const std::vector<ir::Tensor>& inputs);
// Runs the module's function `function_name` (default "main"); call_kernel nodes run their
// kernel function on the kernel interpreter.
std::vector<ir::Tensor> RunReference(const ir::IRModule& module,
                                     const std::vector<ir::Tensor>& inputs,
                                     const std::string& function_name = "main");

// Random inputs for every parameter of `function`, deterministic in `seed` (uniform in [-1, 1)
// for floats).
std::vector<ir::Tensor> RandomInputs(const ir::GraphFunction& function, uint64_t seed);

}  // namespace tandem::backends
