// compute_inline / reverse_compute_inline: remove an elementwise stage by substituting it into
// its neighbour.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Expr;
using ir::Stmt;

namespace {

// The single store of a block whose body is `buffer[v0, ..., vn] = value` with the block's
// iterators as indices in order (what inlining needs), or nullptr.
const ir::StoreNode* PointwiseStore(const ir::Block& block) {
  const auto* store = ir::As<ir::StoreNode>(block->body);
  if (!store || block->init) return nullptr;
  if (store->indices.size() != block->iter_vars.size()) return nullptr;
  for (size_t k = 0; k < store->indices.size(); ++k) {
    if (!IsIteratorIndex(store->indices[k], block->iter_vars[k])) return nullptr;
    if (block->iter_vars[k].kind != ir::IterKind::kSpatial) return nullptr;
  }
  return store;
}

ScheduleError Fail(const std::string& primitive, const std::string& block, const std::string& why) {
  return ScheduleError(fmt::format("{} of block '{}': {}", primitive, block, why));
}

// Inlining evaluates a block's value wherever it is used, dropping the statements around the
// block: throws when it is under a condition (an IfThenElse within its scope), which might
// guard the evaluation. (A predicate only splits the points among loop iterations or leaves
// out points that no consumer reads, so it may go.)
void CheckNoCondition(const StmtPath& path, const std::string& primitive, const std::string& block,
                      const std::string& which = "the block") {
  if (!EnclosingConditions(path).empty()) {
    throw Fail(primitive, block, which + " is under a condition (if)");
  }
}

}  // namespace

ir::KernelFunction ComputeInline(const ir::KernelFunction& fn, const std::string& block_name) {
  StmtPath path = GetBlockPath(fn, block_name);
  const auto* realize = ir::As<ir::BlockRealizeNode>(path.target);
  const ir::Block& block = realize->block;
  const ir::StoreNode* store = PointwiseStore(block);
  if (!store) {
    throw Fail("compute_inline", block_name,
               "the block must be a single store `out[i, j, ...] = value` indexed by its spatial "
               "iterators, without init");
  }
  const ir::Buffer& buffer = store->buffer;
  CheckNoCondition(path, "compute_inline", block_name);
  if (IsParam(fn, buffer)) {
    throw Fail("compute_inline", block_name,
               fmt::format("it writes '{}', a parameter of the kernel", buffer->name));
  }
  if (BlocksWriting(fn, buffer).size() != 1) {
    throw Fail("compute_inline", block_name, fmt::format("'{}' has several writers", buffer->name));
  }
  // A self-dependent value (reads its own output) cannot be inlined.
  bool reads_itself = false;
  ir::VisitExprTree(store->value, [&](const Expr& e) {
    reads_itself = reads_itself || (e->kind == ir::ExprKind::kLoad && e->buffer == buffer);
  });
  if (reads_itself) throw Fail("compute_inline", block_name, "the block reads its own output");

  Stmt body = ReplaceStmt(fn.body, path.target.get(), nullptr);
  body = RewriteLoads(body, buffer, [&](const std::vector<Expr>& indices) {
    ir::VarMap map;
    for (size_t k = 0; k < indices.size(); ++k) map[block->iter_vars[k].var.get()] = indices[k];
    return ir::Substitute(store->value, map);
  });
  body = RemoveAllocation(body, buffer);
  return WithBody(fn, body);
}

ir::KernelFunction ReverseComputeInline(const ir::KernelFunction& fn,
                                        const std::string& block_name) {
  StmtPath path = GetBlockPath(fn, block_name);
  const ir::Block& consumer = ir::As<ir::BlockRealizeNode>(path.target)->block;
  const auto* store = ir::As<ir::StoreNode>(consumer->body);
  if (!store || consumer->init) {
    throw Fail("reverse_compute_inline", block_name,
               "the block must be a single store without init");
  }
  // The consumer must read exactly one buffer written by another block, at its own iterators.
  std::vector<Access> loads = CollectLoads(consumer->body);
  ir::Buffer produced;
  for (const Access& a : loads) {
    if (IsParam(fn, a.buffer) && BlocksWriting(fn, a.buffer).empty()) continue;
    if (BlocksWriting(fn, a.buffer).empty()) continue;
    if (produced && produced != a.buffer) {
      throw Fail("reverse_compute_inline", block_name, "it reads more than one produced buffer");
    }
    produced = a.buffer;
    if (a.indices.size() != consumer->iter_vars.size()) {
      throw Fail("reverse_compute_inline", block_name,
                 fmt::format("it must read '{}' at its own iterators", a.buffer->name));
    }
    for (size_t k = 0; k < a.indices.size(); ++k) {
      if (!IsIteratorIndex(a.indices[k], consumer->iter_vars[k])) {
        throw Fail("reverse_compute_inline", block_name,
                   fmt::format("it must read '{}' at its own iterators", a.buffer->name));
      }
    }
  }
  if (!produced) throw Fail("reverse_compute_inline", block_name, "it reads no produced buffer");
  if (IsParam(fn, produced)) {
    throw Fail("reverse_compute_inline", block_name,
               fmt::format("its input '{}' is a kernel parameter", produced->name));
  }
  auto producers = BlocksWriting(fn, produced);
  if (producers.size() != 1) {
    throw Fail("reverse_compute_inline", block_name,
               fmt::format("'{}' has {} writers", produced->name, producers.size()));
  }
  if (BlocksReading(fn, produced).size() != 1) {
    throw Fail("reverse_compute_inline", block_name,
               fmt::format("'{}' has other readers", produced->name));
  }
  const ir::BlockRealizeNode* producer_realize = producers[0];
  CheckNoCondition(path, "reverse_compute_inline", block_name);
  CheckNoCondition(GetBlockPath(fn, producer_realize->block->name), "reverse_compute_inline",
                   block_name, fmt::format("its producer '{}'", producer_realize->block->name));
  const ir::Block& producer = producer_realize->block;
  const ir::StoreNode* producer_store = PointwiseStore(producer);
  if (!producer_store || producer_store->indices.size() != consumer->iter_vars.size()) {
    throw Fail("reverse_compute_inline", block_name,
               fmt::format("its producer '{}' must be a single pointwise store of the same rank "
                           "without init (a reduction needs cache_write + reverse_compute_at)",
                           producer->name));
  }
  for (size_t k = 0; k < consumer->iter_vars.size(); ++k) {
    if (producer->iter_vars[k].extent != consumer->iter_vars[k].extent) {
      throw Fail("reverse_compute_inline", block_name, "the producer covers a different domain");
    }
  }
  // consumer: out2[c] = f(produced[c]);  producer: produced[p] = e(p)  ->  out2[p'] = f(e(p))
  // where the consumer's store indices are expressed with the producer's iterators.
  ir::VarMap to_producer;
  for (size_t k = 0; k < consumer->iter_vars.size(); ++k) {
    to_producer[consumer->iter_vars[k].var.get()] = producer->iter_vars[k].var;
  }
  Expr value = RewriteLoads(ir::Substitute(store->value, to_producer), produced,
                            [&](const std::vector<Expr>&) { return producer_store->value; });
  std::vector<Expr> indices;
  for (const Expr& i : store->indices) indices.push_back(ir::Substitute(i, to_producer));
  auto fused = std::make_shared<ir::BlockNode>(*producer);
  fused->body = ir::MakeStore(store->buffer, indices, value);
  Stmt fused_realize = ir::MakeBlockRealize(
      producer_realize->iter_values, producer_realize->predicate, WithRecomputedRegions(fused));
  Stmt body = ReplaceStmt(fn.body, path.target.get(), nullptr);
  StmtPath producer_path = GetBlockPath(WithBody(fn, body), producer->name);
  body = ReplaceStmt(body, producer_path.target.get(), fused_realize);
  body = RemoveAllocation(body, produced);
  return WithBody(fn, body);
}

}  // namespace tandem::kernels::primitive
