// verify_ptxas: the GPU search space's postprocessor that asks the CUDA toolkit's assembler.
//
// Kept out of the kernels library (which does not depend on code generation or the toolkit):
// RegisterVerifyPtxas adds it to the postprocessor registry (kernels/search/search_space.h), after
// which a search space names it like a built-in one.
#pragma once

#include <string>

#include "backends/cuda/ptxas.h"
#include "backends/llvm/nvptx_codegen.h"
#include "kernels/search/search_space.h"

namespace tandem::backends::cuda {

// Why `report`, ptxas's account of `program`, breaks the limits of `target`: rejected PTX, spills,
// more registers per thread than allowed or than the launch's threads share in a block, or more
// static shared memory than a block has. Empty when it breaks none.
std::string PtxasLimitViolation(const PtxasReport& report, const GpuProgram& program,
                                const kernels::SearchTarget& target);

// Registers "verify_ptxas": a postprocessor that compiles the sampled program to PTX for the
// target's architecture (sm_80 when it names none), assembles it with ptxas and rejects it when
// PtxasLimitViolation finds a violation or code generation fails. Where this build has no ptxas
// it accepts every program (it has nothing to ask). Registering again replaces the entry.
void RegisterVerifyPtxas();

}  // namespace tandem::backends::cuda
