// A memo of constant folding: the reference evaluation of an op on constant operands, kept for
// the next module that folds the same op on the same constants. Tuning passes fold the same
// weights once per candidate (a layout transform of every convolution's weights for each
// candidate of a layout, placement or algorithm choice), which on ResNet-18 took most of a
// fixture replay's time.
//
// Operands are recognised by their storage (and type), not their values: constants of the IR
// are immutable once made (modules share them between copies), so the same storage holds the
// same values. A remembered entry keeps its operands alive, so their storage cannot be reused
// for other values while it is remembered. The memo holds at most kCapacityBytes of results,
// forgetting the least recently used first; it is safe to use from several threads.
#pragma once

#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tandem::passes {

// ir::EvaluateReference(op, operands, attrs, type), answered from the memo when the same op,
// attributes and result type were evaluated on the same operands before.
std::vector<ir::Tensor> FoldWithMemo(const std::string& op, const std::vector<ir::Tensor>& operands,
                                     const ir::Attrs& attrs, const ir::Type& type);

// What the memo did since the process started (for tests and diagnostics).
struct ConstantFoldMemoStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t bytes = 0;  // results held now
};
ConstantFoldMemoStats ConstantFoldMemoStatistics();

}  // namespace tandem::passes
