// Buffer-access analysis shared by the block-level schedule primitives.
//
// Block read/write regions are derived from the loads and stores a block actually contains,
// so after a primitive rewrites a block body its regions are recomputed rather than patched.
#pragma once

#include <vector>

#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"
#include "ir/kernel/stmt.h"

namespace tandem::kernels {

// One access of a buffer: its index expressions.
struct Access {
  ir::Buffer buffer;
  std::vector<ir::Expr> indices;
};

// True when `index` addresses the iterator `iter` directly: it is the iterator's variable, or
// the constant 0 for an iterator of extent 1 (the simplifier folds those, e.g. a batch axis).
bool IsIteratorIndex(const ir::Expr& index, const ir::IterVar& iter);

// Loads in `stmt` (including inside nested blocks' bodies), in pre-order.
std::vector<Access> CollectLoads(const ir::Stmt& stmt);
// Stores in `stmt`, in pre-order.
std::vector<Access> CollectStores(const ir::Stmt& stmt);

// The block with reads/writes recomputed from its init and body: one region per buffer, the
// covering box of its accesses (a point for a single access). Buffers allocated inside the
// block are not listed. Only leaf blocks (whose body holds no other block) get their regions
// recomputed; a scope block such as the root is returned unchanged, so the root's regions never
// mention the loops or iterators inside it.
ir::Block WithRecomputedRegions(const ir::Block& block);

// Replaces every load of `buffer` in `stmt` with fn(indices).
ir::Stmt RewriteLoads(const ir::Stmt& stmt, const ir::Buffer& buffer,
                      const std::function<ir::Expr(const std::vector<ir::Expr>&)>& fn);
ir::Expr RewriteLoads(const ir::Expr& expr, const ir::Buffer& buffer,
                      const std::function<ir::Expr(const std::vector<ir::Expr>&)>& fn);

// Removes `buffer` from the alloc_buffers of every block (after the last use is gone).
ir::Stmt RemoveAllocation(const ir::Stmt& stmt, const ir::Buffer& buffer);
// Adds `buffer` to the alloc_buffers of the block named `block_name` (the root by default).
ir::Stmt AddAllocation(const ir::Stmt& stmt, const ir::Buffer& buffer,
                       const std::string& block_name = "root");

// Inclusive bounds of `index` when the variables in `ranges` vary; [min, max] as expressions in
// the remaining variables (exact for affine expressions with constant coefficients; for other
// expressions the constant bounds from ConstIntBound when the expression only uses ranged
// variables). Returns false when no bound can be found.
bool SymbolicBounds(const ir::Expr& index, const ir::VarRanges& ranges, ir::Expr* min,
                    ir::Expr* max);

}  // namespace tandem::kernels
