// The accesses of the blocks of a kernel, as the dynamic-axis plan (kernels/dynamic_extent.h)
// reads them: every load and store of a leaf block, each load with the select conditions that
// guard it (kernels/dynamic_padding.h). Shared by PlanDynamicIterators and
// ApplyDynamicIterators, with the linear form of indices they and CompactGuardedLoops read.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/kernel/expr.h"
#include "ir/kernel/stmt.h"

// A namespace of its own: kernels/schedule/access.h has another Access.
namespace tandem::kernels::dynamic_access {

// One load or store of a block.
struct Access {
  ir::Buffer buffer;
  std::vector<ir::Expr> indices;
  bool write = false;
  // A load's guards: the conjuncts of the conditions of the selects whose true value holds it.
  std::vector<ir::Expr> guards;
};

// The loads and stores of one block (its init and body; a leaf block holds no other block).
std::vector<Access> AccessesOf(const ir::BlockNode& block);
// Whether `block` holds no other block.
bool IsLeaf(const ir::BlockNode& block);
// The leaf blocks of `body` in program order.
std::vector<const ir::BlockRealizeNode*> LeafBlocks(const ir::Stmt& body);

// Adds `e` times `scale` to `terms` (coefficient, atom) and `constant`, where the atoms are
// whatever is not +, -, a constant or a product with a constant (repeated atoms stay separate
// terms). Always succeeds and returns true.
bool LinearTerms(const ir::Expr& e, int64_t scale, std::vector<std::pair<int64_t, ir::Expr>>& terms,
                 int64_t& constant);

}  // namespace tandem::kernels::dynamic_access
