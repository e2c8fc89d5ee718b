// cache_read / cache_write: stage a buffer through a copy in another storage scope.
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/region.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Expr;
using ir::Stmt;

namespace {

void CheckScope(const std::string& primitive, const std::string& scope) {
  if (scope != "global" && scope != "local" && scope != "shared") {
    throw ScheduleError(fmt::format(
        "{}: unknown storage scope '{}' (expected global, shared or local)", primitive, scope));
  }
}

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
    if (loads_ && v->kind == ir::ExprKind::kLoad && v->buffer == from_)
      return ir::Load(to_, v->operands);
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

// The loop whose body holds the exclusive nest of the block at `path`, within the block's scope;
// null when the nest sits directly in its scope block.
const ir::ForNode* ParentLoop(const StmtPath& path, const ir::StmtNode* nest) {
  size_t position = path.ancestors.size();
  for (size_t i = 0; i < path.ancestors.size(); ++i) {
    if (path.ancestors[i].get() == nest) position = i;
  }
  for (size_t i = position; i-- > 0;) {
    if (path.ancestors[i]->kind == ir::StmtKind::kBlockRealize) return nullptr;
    if (const auto* loop = ir::As<ir::ForNode>(path.ancestors[i])) return loop;
  }
  return nullptr;
}

// Replaces the exclusive nest of `block_name` by that nest with the block renamed to read
// (`cache_read`) or write its copy, and adds the copy stage from `from` to `to` before (or after)
// it. At the top of a block scope the stage copies the whole buffer; inside a loop it copies
// the region the block touches in one iteration of that loop.
Stmt AddCopyStage(const ir::KernelFunction& fn, const std::string& block_name,
                  const std::string& copy_name, const ir::Buffer& from, const ir::Buffer& to,
                  bool cache_read, const std::string& primitive) {
  StmtPath path = GetBlockPath(fn, block_name);
  const ir::Buffer& original = cache_read ? from : to;
  const ir::Buffer& copy = cache_read ? to : from;
  BufferRenamer renamer(original, copy, true, !cache_read);
  Stmt renamed_block = renamer.VisitStmt(path.target);
  Stmt nest = ExclusiveNestOf(path);
  Stmt renamed_nest = ReplaceStmt(nest, path.target.get(), renamed_block);
  Stmt body = ReplaceStmt(fn.body, nest.get(), renamed_nest);
  Stmt stage = CopyNest(copy_name, from, to);
  if (const ir::ForNode* parent = ParentLoop(path, nest.get())) {
    StmtPath loop_path = GetLoopPath(WithBody(fn, body), parent->loop_var);
    std::vector<AxisRegion> region =
        RegionUnderLoop(loop_path, copy, cache_read,
                        fmt::format("{} of block '{}'", primitive, block_name), block_name);
    const ir::BlockRealizeNode* copy_realize = nullptr;
    ir::VisitStmtTree(stage, [&](const Stmt& s) {
      if (const auto* r = ir::As<ir::BlockRealizeNode>(s)) copy_realize = r;
    });
    std::vector<int> axes;
    for (size_t d = 0; d < region.size(); ++d) axes.push_back(static_cast<int>(d));
    stage = RegenerateNest(copy_realize->block, axes, region, ir::IntImm(1, ir::DataType::kBool),
                           LoopRangesAt(loop_path));
  }
  Stmt pair = cache_read ? ir::MakeSeq({stage, renamed_nest}) : ir::MakeSeq({renamed_nest, stage});
  return ReplaceStmt(body, renamed_nest.get(), pair);
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
    throw ScheduleError(
        fmt::format("cache_read of block '{}': read index {} is out of range (the block "
                    "reads {} buffers)",
                    block_name, read_index, block->reads.size()));
  }
  CheckScope("cache_read", scope);
  const ir::Buffer& source = block->reads[static_cast<size_t>(read_index)].buffer;
  for (const ir::BufferRegion& written : block->writes) {
    if (written.buffer == source) {
      // The block updates what it reads (a reduction without init): a copy taken before it
      // would go stale after its first update.
      throw ScheduleError(
          fmt::format("cache_read of block '{}': it also writes '{}' (use cache_write)", block_name,
                      source->name));
    }
  }
  ir::Buffer copy = ir::MakeBuffer(fmt::format("{}_{}", source->name, scope), source->dtype,
                                   source->shape, scope);
  std::string name = FreshBlockName(fn, fmt::format("{}_{}", source->name, scope));
  Stmt body = AddCopyStage(fn, block_name, name, source, copy, true, "cache_read");
  body = AddAllocation(body, copy, BlockOfScope(path));
  if (new_block) *new_block = name;
  return WithBody(fn, body);
}

namespace {

// Replaces a buffer in allocations too.
class AllocationRenamer : public BufferRenamer {
 public:
  AllocationRenamer(const ir::Buffer& from, const ir::Buffer& to)
      : BufferRenamer(from, to, true, true), from_(from), to_(to) {}

 protected:
  ir::Block VisitBlock(const ir::Block& block) override {
    ir::Block v = BufferRenamer::VisitBlock(block);
    auto it = std::find(v->alloc_buffers.begin(), v->alloc_buffers.end(), from_);
    if (it == v->alloc_buffers.end()) return v;
    auto node = std::make_shared<ir::BlockNode>(*v);
    node->alloc_buffers[static_cast<size_t>(it - v->alloc_buffers.begin())] = to_;
    return node;
  }

 private:
  ir::Buffer from_, to_;
};

}  // namespace

ir::KernelFunction SetScope(const ir::KernelFunction& fn, const std::string& block_name,
                            int write_index, const std::string& scope) {
  StmtPath path = GetBlockPath(fn, block_name);
  const ir::Block& block = ir::As<ir::BlockRealizeNode>(path.target)->block;
  if (write_index < 0 || write_index >= static_cast<int>(block->writes.size())) {
    throw ScheduleError(
        fmt::format("set_scope of block '{}': write index {} is out of range (the block "
                    "writes {} buffers)",
                    block_name, write_index, block->writes.size()));
  }
  CheckScope("set_scope", scope);
  const ir::Buffer& buffer = block->writes[static_cast<size_t>(write_index)].buffer;
  if (std::find(fn.params.begin(), fn.params.end(), buffer) != fn.params.end()) {
    throw ScheduleError(fmt::format("set_scope of block '{}': '{}' is a parameter of the kernel",
                                    block_name, buffer->name));
  }
  ir::Buffer moved = ir::MakeBuffer(buffer->name, buffer->dtype, buffer->shape, scope);
  return WithBody(fn, AllocationRenamer(buffer, moved).VisitStmt(fn.body));
}

ir::KernelFunction CacheWrite(const ir::KernelFunction& fn, const std::string& block_name,
                              int write_index, const std::string& scope, std::string* new_block) {
  StmtPath path = GetBlockPath(fn, block_name);
  const ir::Block& block = ir::As<ir::BlockRealizeNode>(path.target)->block;
  if (write_index < 0 || write_index >= static_cast<int>(block->writes.size())) {
    throw ScheduleError(
        fmt::format("cache_write of block '{}': write index {} is out of range (the block "
                    "writes {} buffers)",
                    block_name, write_index, block->writes.size()));
  }
  CheckScope("cache_write", scope);
  const ir::Buffer& target = block->writes[static_cast<size_t>(write_index)].buffer;
  if (BlocksWriting(fn, target).size() != 1) {
    throw ScheduleError(
        fmt::format("cache_write of block '{}': '{}' has other writers", block_name, target->name));
  }
  ir::Buffer staged = ir::MakeBuffer(fmt::format("{}_{}", target->name, scope), target->dtype,
                                     target->shape, scope);
  std::string name = FreshBlockName(fn, fmt::format("{}_{}", target->name, scope));
  Stmt body = AddCopyStage(fn, block_name, name, staged, target, false, "cache_write");
  body = AddAllocation(body, staged, BlockOfScope(path));
  if (new_block) *new_block = name;
  return WithBody(fn, body);
}

}  // namespace tandem::kernels::primitive
