// Case splits: spatial blocks whose value is a chain of selects on some of their own
// iterators compared with constants, the arms free of those iterators (a transform whose
// coefficients depend on the output position, such as Winograd's input and output transforms;
// kernels/compute/winograd_compute.cc writes them). Computed as written, every element would
// evaluate the conditions and, in vector code, every arm; the default schedule instead unrolls
// the selecting iterators so that each copy's conditions are constants and only its own arm is
// computed (the code generator folds the rest away).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/kernel/stmt.h"

namespace tandem::kernels {

// The value arms[k] where the iterators `selectors` (extents `extents`) take the k-th
// combination of values (row-major, the last selector fastest): a chain of selects on
// `selector == constant` conditions, the last arm the default. `arms` holds one arm per
// combination and must not read the selectors.
ir::Expr MakeCaseSplit(const std::vector<ir::Expr>& selectors, const std::vector<int64_t>& extents,
                       const std::vector<ir::Expr>& arms);

// The positions (in block->iter_vars) of the iterators `block` case-splits on, in order; empty
// when the block is not a case split: its body is not a store of a select chain whose every
// condition is a conjunction of `iterator == constant`, or an arm reads a selecting iterator.
std::vector<int> CaseSplitAxes(const ir::Block& block);

}  // namespace tandem::kernels
