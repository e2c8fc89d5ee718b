// Locating and replacing statements in a kernel function's tree.
//
// Kernel IR is immutable, so a schedule primitive finds the statement it transforms together
// with its ancestors, builds the replacement, and rebuilds the path from the root. Loops are
// identified by their loop variable (Var identity survives rebuilding), blocks by their unique
// name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"

namespace tandem::kernels {

struct StmtPath {
  std::vector<ir::Stmt> ancestors;  // root first, parent last
  ir::Stmt target;
};

// The loop with variable `loop_var`, or nullopt.
std::optional<StmtPath> FindLoop(const ir::KernelFunction& function, const ir::Var& loop_var);
// The BlockRealize of block `name`, or nullopt.
std::optional<StmtPath> FindBlock(const ir::KernelFunction& function, const std::string& name);
// Like the two above but throw an Error naming the loop/block when it does not exist.
StmtPath GetLoopPath(const ir::KernelFunction& function, const ir::Var& loop_var);
StmtPath GetBlockPath(const ir::KernelFunction& function, const std::string& name);

// The loops among `path.ancestors`, outermost first, stopping at the nearest enclosing block
// (loops outside that block belong to another block's scope).
std::vector<const ir::ForNode*> EnclosingLoops(const StmtPath& path);
// The IfThenElse statements among `path.ancestors` below the nearest enclosing block, outermost
// first: the conditions under which the target runs within its block scope.
std::vector<const ir::IfThenElseNode*> EnclosingConditions(const StmtPath& path);
// The nearest enclosing BlockRealize of a path (the root block for top-level statements).
const ir::BlockRealizeNode* EnclosingBlock(const StmtPath& path);

// Returns `root` with the statement `old_stmt` (by identity) replaced by `replacement` (null
// removes it from its Seq). Throws Error when `old_stmt` is not in the tree.
ir::Stmt ReplaceStmt(const ir::Stmt& root, const ir::StmtNode* old_stmt, ir::Stmt replacement);
ir::KernelFunction WithBody(const ir::KernelFunction& function, ir::Stmt body);

// Every block in the function, in pre-order (the root block first).
std::vector<const ir::BlockRealizeNode*> AllBlocks(const ir::KernelFunction& function);
// A block name not yet used in the function, starting from `base`.
std::string FreshBlockName(const ir::KernelFunction& function, const std::string& base);
// True when `function` has a parameter buffer that is identical to `buffer`.
bool IsParam(const ir::KernelFunction& function, const ir::Buffer& buffer);

// Blocks (other than `exclude`) that read / write `buffer`, in pre-order.
std::vector<const ir::BlockRealizeNode*> BlocksReading(const ir::KernelFunction& function,
                                                       const ir::Buffer& buffer);
std::vector<const ir::BlockRealizeNode*> BlocksWriting(const ir::KernelFunction& function,
                                                       const ir::Buffer& buffer);

}  // namespace tandem::kernels
