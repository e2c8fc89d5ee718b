// cache_read / cache_write: stage a buffer through a copy in another storage scope.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Error;
using ir::Expr;
using ir::Stmt;

namespace {

// A loop nest with a block copying `from` into `to` element by element (same shape).
Stmt CopyNest(const std::string& block_name, const ir::Buffer& from, const ir::Buffer& to) {
  std::vector<ir::IterVar> iters;
  std::vector<Expr> indices;
  std::vector<ir::Var> loops;
  for (size_t d = 0; d < from->shape.size(); ++d) {
    ir::Var v = ir::MakeVar(fmt::format("v{}", d));
    iters.push_back(ir::IterVar{v, from->shape[d], ir::IterKind::kSpatial});
    indices.push_back(v);
    loops.push_back(ir::MakeVar(fmt::format("ax{}", d)));
  }
  auto block = std::make_shared<ir::BlockNode>();
  block->name = block_name;
  block->iter_vars = iters;
  block->body = ir::MakeStore(to, indices, ir::Load(from, indices));
  std::vector<Expr> values(loops.begin(), loops.end());
  Stmt nest = ir::MakeBlockRealize(values, Expr(), WithRecomputedRegions(block));
  for (size_t d = loops.size(); d-- > 0;) {
    nest = ir::MakeFor(loops[d], from->shape[d], ir::ForKind::kSerial, nest);
  }
  return nest;
}

// Replaces buffer `from` by `to` in every load and store of `stmt`.
class BufferRenamer : public ir::StmtMutator {
 public:
  BufferRenamer(ir::Buffer from, ir::Buffer to, bool loads, bool stores)
      : from_(std::move(from)), to_(std::move(to)), loads_(loads), stores_(stores) {}
  Expr VisitExpr(const Expr& e) override {
    Expr v = VisitChildren(e);
    if (loads_ && v->kind == ir::ExprKind::kLoad && v->buffer == from_) return ir::Load(to_, v->operands);
    return v;
  }

 protected:
  Stmt VisitStore(const ir::StoreNode* op, const Stmt& s) override {
    Stmt v = StmtMutator::VisitStore(op, s);
    const auto* store = ir::As<ir::StoreNode>(v);
    if (stores_ && store->buffer == from_) return ir::MakeStore(to_, store->indices, store->value);
    return v;
  }
  ir::Block VisitBlock(const ir::Block& block) override {
    ir::Block v = StmtMutator::VisitBlock(block);
    return v == block ? block : WithRecomputedRegions(v);
  }

 private:
  ir::Buffer from_, to_;
  bool loads_, stores_;
};

// Statement `stmt` placed right before (or after) `anchor` in its parent sequence.
Stmt InsertBeside(const Stmt& root, const ir::StmtNode* anchor, const Stmt& stmt, bool after,
                  const Stmt& anchor_stmt) {
  Stmt pair = after ? ir::MakeSeq({anchor_stmt, stmt}) : ir::MakeSeq({stmt, anchor_stmt});
  return ReplaceStmt(root, anchor, pair);
}

// The outermost loop wrapping only the block (or the block realize itself).
Stmt ExclusiveNestOf(const StmtPath& path) {
  Stmt top = path.target;
  for (auto it = path.ancestors.rbegin(); it != path.ancestors.rend(); ++it) {
    const auto* loop = ir::As<ir::ForNode>(*it);
    if (!loop || loop->body != top) break;
    top = *it;
  }
  return top;
}

std::string BlockOfScope(const StmtPath& path) {
  const ir::BlockRealizeNode* scope = EnclosingBlock(path);
  return scope ? scope->block->name : "root";
}

}  // namespace

ir::KernelFunction CacheRead(const ir::KernelFunction& fn, const std::string& block_name,
                             int read_index, const std::string& scope, std::string* new_block) {
  StmtPath path = GetBlockPath(fn, block_name);
  const ir::Block& block = ir::As<ir::BlockRealizeNode>(path.target)->block;
  if (read_index < 0 || read_index >= static_cast<int>(block->reads.size())) {
    throw Error(fmt::format("cache_read of block '{}': read index {} is out of range (the block "
                            "reads {} buffers)",
                            block_name, read_index, block->reads.size()));
  }
  if (scope != "global" && scope != "local") {
    throw Error(fmt::format("cache_read: unknown storage scope '{}' (expected global or local)", scope));
  }
  const ir::Buffer& source = block->reads[static_cast<size_t>(read_index)].buffer;
  ir::Buffer copy = ir::MakeBuffer(fmt::format("{}_{}", source->name, scope), source->dtype,
                                   source->shape, scope);
  std::string name = FreshBlockName(fn, fmt::format("{}_{}", source->name, scope));
  Stmt copy_nest = CopyNest(name, source, copy);

  BufferRenamer renamer(source, copy, true, false);
  Stmt renamed_block = renamer.VisitStmt(path.target);
  Stmt nest = ExclusiveNestOf(path);
  Stmt new_nest = ReplaceStmt(nest, path.target.get(), renamed_block);
  Stmt body = InsertBeside(fn.body, nest.get(), copy_nest, false, new_nest);
  body = AddAllocation(body, copy, BlockOfScope(path));
  if (new_block) *new_block = name;
  return WithBody(fn, body);
}

ir::KernelFunction CacheWrite(const ir::KernelFunction& fn, const std::string& block_name,
                              int write_index, const std::string& scope, std::string* new_block) {
  StmtPath path = GetBlockPath(fn, block_name);
  const ir::Block& block = ir::As<ir::BlockRealizeNode>(path.target)->block;
  if (write_index < 0 || write_index >= static_cast<int>(block->writes.size())) {
    throw Error(fmt::format("cache_write of block '{}': write index {} is out of range (the block "
                            "writes {} buffers)",
                            block_name, write_index, block->writes.size()));
  }
  if (scope != "global" && scope != "local") {
    throw Error(fmt::format("cache_write: unknown storage scope '{}' (expected global or local)", scope));
  }
  const ir::Buffer& target = block->writes[static_cast<size_t>(write_index)].buffer;
  if (BlocksWriting(fn, target).size() != 1) {
    throw Error(fmt::format("cache_write of block '{}': '{}' has other writers", block_name,
                            target->name));
  }
  ir::Buffer staged = ir::MakeBuffer(fmt::format("{}_{}", target->name, scope), target->dtype,
                                     target->shape, scope);
  std::string name = FreshBlockName(fn, fmt::format("{}_{}", target->name, scope));
  Stmt copy_nest = CopyNest(name, staged, target);

  BufferRenamer renamer(target, staged, true, true);
  Stmt renamed_block = renamer.VisitStmt(path.target);
  Stmt nest = ExclusiveNestOf(path);
  Stmt new_nest = ReplaceStmt(nest, path.target.get(), renamed_block);
  Stmt body = InsertBeside(fn.body, nest.get(), copy_nest, true, new_nest);
  body = AddAllocation(body, staged, BlockOfScope(path));
  if (new_block) *new_block = name;
  return WithBody(fn, body);
}

}  // namespace tandem::kernels::primitive
