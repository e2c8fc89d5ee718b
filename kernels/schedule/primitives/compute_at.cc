// compute_at / reverse_compute_at: move a producer (consumer) block under a loop of its consumer
// (producer), regenerating its loops over just the region needed (produced) per iteration.
#include <fmt/format.h>

#include <set>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/region.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Error;
using ir::Expr;
using ir::Stmt;

namespace {

// The statement that holds `block` and nothing else: its realize, or the outermost of the loops
// that wrap only it.
const ir::StmtNode* ExclusiveNest(const StmtPath& path) {
  const ir::StmtNode* top = path.target.get();
  for (auto it = path.ancestors.rbegin(); it != path.ancestors.rend(); ++it) {
    const auto* loop = ir::As<ir::ForNode>(*it);
    if (!loop || loop->body.get() != top) break;
    top = loop;
  }
  return top;
}

bool Contains(const Stmt& root, const ir::StmtNode* node) {
  bool found = false;
  ir::VisitStmtTree(root, [&](const Stmt& s) { found = found || s.get() == node; });
  return found;
}

// Pre-order position of every block realize, to compare execution order.
std::map<const ir::StmtNode*, int> BlockOrder(const ir::KernelFunction& fn) {
  std::map<const ir::StmtNode*, int> order;
  int next = 0;
  ir::VisitStmtTree(fn.body, [&](const Stmt& s) {
    if (s->kind == ir::StmtKind::kBlockRealize) order[s.get()] = next++;
  });
  return order;
}

// The written buffer of a block whose store indices are its spatial iterators, one per axis
// (the form compute definitions and cache blocks have); `spatial_iters[d]` is the iterator of
// axis d, or -1 for an axis of length 1 written at the constant 0.
ir::Buffer IdentityWrittenBuffer(const ir::Block& block, std::vector<int>* spatial_iters) {
  std::vector<Access> stores = CollectStores(block->body);
  if (block->init) {
    auto more = CollectStores(block->init);
    stores.insert(stores.end(), more.begin(), more.end());
  }
  if (stores.empty()) return nullptr;
  ir::Buffer buffer = stores[0].buffer;
  std::vector<int> iters;
  for (size_t d = 0; d < stores[0].indices.size(); ++d) {
    const Expr& index = stores[0].indices[d];
    int found = -1;
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (index.same_as(block->iter_vars[k].var) &&
          block->iter_vars[k].kind == ir::IterKind::kSpatial) {
        found = static_cast<int>(k);
      }
    }
    if (found < 0 && !(buffer->shape[d] == 1 && index->is_const_int(0))) return nullptr;
    iters.push_back(found);
  }
  for (const Access& s : stores) {
    if (s.buffer != buffer) return nullptr;
    for (size_t d = 0; d < s.indices.size(); ++d) {
      const Expr& first = stores[0].indices[d];
      bool same = s.indices[d].same_as(first) ||
                  (first->is_const_int() && s.indices[d]->is_const_int(first->int_value));
      if (!same) return nullptr;
    }
  }
  *spatial_iters = iters;
  return buffer;
}

// Inserts `stmt` at the start (or end) of `loop`'s body.
ir::KernelFunction InsertIntoLoop(const ir::KernelFunction& fn, const ir::Var& loop_var, Stmt stmt,
                                  bool at_end) {
  StmtPath path = GetLoopPath(fn, loop_var);
  const auto* loop = ir::As<ir::ForNode>(path.target);
  Stmt body = at_end ? ir::MakeSeq({loop->body, stmt}) : ir::MakeSeq({stmt, loop->body});
  Stmt replaced =
      ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind, body, loop->annotations);
  return WithBody(fn, ReplaceStmt(fn.body, path.target.get(), replaced));
}

void CheckBuffersBetween(const ir::KernelFunction& fn, const std::set<const ir::StmtNode*>& between,
                         const ir::Block& moved, bool moved_reads_written, const char* primitive) {
  // A block executed between the old and new position must not write what the moved block
  // reads, nor read what it writes.
  std::vector<Access> moved_loads = CollectLoads(ir::MakeSeq({moved->init, moved->body}));
  std::vector<Access> moved_stores = CollectStores(ir::MakeSeq({moved->init, moved->body}));
  for (const auto* b : AllBlocks(fn)) {
    if (!between.count(b)) continue;
    for (const Access& s : CollectStores(b->block->body)) {
      for (const Access& l : moved_loads) {
        if (s.buffer == l.buffer) {
          throw ScheduleError(
              fmt::format("{} of block '{}': block '{}' in between writes '{}', which it "
                          "reads",
                          primitive, moved->name, b->block->name, s.buffer->name));
        }
      }
    }
    for (const Access& l : CollectLoads(b->block->body)) {
      for (const Access& s : moved_stores) {
        if (s.buffer == l.buffer) {
          throw ScheduleError(
              fmt::format("{} of block '{}': block '{}' in between reads '{}', which it "
                          "writes",
                          primitive, moved->name, b->block->name, s.buffer->name));
        }
      }
    }
  }
  (void)moved_reads_written;
}

ir::KernelFunction MoveBlock(const ir::KernelFunction& fn, const std::string& block_name,
                             const ir::Var& loop_var, bool reverse) {
  const char* primitive = reverse ? "reverse_compute_at" : "compute_at";
  StmtPath block_path = GetBlockPath(fn, block_name);
  StmtPath loop_path = GetLoopPath(fn, loop_var);
  const auto* realize = ir::As<ir::BlockRealizeNode>(block_path.target);
  const ir::Block& block = realize->block;
  auto fail = [&](const std::string& why) {
    return ScheduleError(fmt::format("{} of block '{}' at loop '{}': {}", primitive, block_name,
                                     loop_var->name, why));
  };
  const ir::StmtNode* nest = ExclusiveNest(block_path);
  if (Contains(Stmt(loop_path.target), block_path.target.get())) {
    throw fail("the block is already under that loop");
  }
  for (const Stmt& a : loop_path.ancestors) {
    if (a.get() == nest) throw fail("the loop is one of the block's own loops");
  }
  const ir::BlockRealizeNode* loop_scope = EnclosingBlock(loop_path);
  if (loop_scope != EnclosingBlock(block_path)) {
    throw fail("the block and the loop are in different block scopes");
  }
  // A condition around the block but not the loop would be lost at the new place; one around
  // the loop but not the block would skip part of the block's work.
  if (EnclosingConditions(block_path) != EnclosingConditions(loop_path)) {
    throw fail("the block and the loop are under different conditions (if)");
  }

  std::map<const ir::StmtNode*, int> order = BlockOrder(fn);
  std::set<const ir::StmtNode*> under_loop;
  ir::VisitStmtTree(loop_path.target, [&](const Stmt& s) {
    if (s->kind == ir::StmtKind::kBlockRealize) under_loop.insert(s.get());
  });
  int block_pos = order.at(block_path.target.get());
  int loop_first = INT32_MAX, loop_last = -1;
  for (const auto* b : under_loop) {
    loop_first = std::min(loop_first, order.at(b));
    loop_last = std::max(loop_last, order.at(b));
  }
  if (under_loop.empty()) throw fail("no block is under the loop");

  std::vector<int> spatial_iters;
  ir::Buffer moved_buffer;
  ir::Buffer region_buffer;
  if (!reverse) {
    // Producer: every reader of what it writes must be under the loop, after its old place.
    if (block->iter_vars.empty()) throw fail("the block has no iterators");
    moved_buffer = IdentityWrittenBuffer(block, &spatial_iters);
    if (!moved_buffer) {
      throw fail("the block must write one buffer indexed by its spatial iterators");
    }
    if (IsParam(fn, moved_buffer)) {
      // Only the part its consumers read would be computed.
      throw fail(fmt::format("it writes '{}', an output of the kernel", moved_buffer->name));
    }
    if (BlocksWriting(fn, moved_buffer).size() != 1) {
      throw fail(fmt::format("'{}' has several writers", moved_buffer->name));
    }
    for (const auto* reader : BlocksReading(fn, moved_buffer)) {
      if (reader == realize) continue;
      if (!under_loop.count(reader)) {
        throw fail(fmt::format("block '{}' reads '{}' outside the loop", reader->block->name,
                               moved_buffer->name));
      }
    }
    if (block_pos > loop_first) throw fail("the block runs after the loop; use reverse_compute_at");
    region_buffer = moved_buffer;
  } else {
    // Consumer: reads a buffer produced under the loop pointwise at its spatial iterators.
    for (const ir::IterVar& iv : block->iter_vars) {
      if (iv.kind != ir::IterKind::kSpatial)
        throw fail("the block must have only spatial iterators");
    }
    if (block_pos < loop_last) throw fail("the block runs before the loop; use compute_at");
    for (const Access& a : CollectLoads(block->body)) {
      bool produced_under = false;
      for (const auto* w : BlocksWriting(fn, a.buffer))
        produced_under = produced_under || under_loop.count(w);
      if (!produced_under) continue;
      for (const auto* w : BlocksWriting(fn, a.buffer)) {
        if (!under_loop.count(w)) {
          throw fail(fmt::format("'{}' is also written outside the loop", a.buffer->name));
        }
        // The producer's reduction must complete inside the loop.
        for (const Stmt& anc : loop_path.ancestors) (void)anc;
        for (size_t k = 0; k < w->iter_values.size(); ++k) {
          if (w->block->iter_vars[k].kind != ir::IterKind::kReduction) continue;
          bool outer_bound = ir::UsesVar(w->iter_values[k], loop_var);
          for (const Stmt& anc : loop_path.ancestors) {
            if (const auto* l = ir::As<ir::ForNode>(anc)) {
              outer_bound = outer_bound || ir::UsesVar(w->iter_values[k], l->loop_var);
            }
          }
          if (outer_bound) {
            throw fail(
                fmt::format("the loop (or an outer one) is a reduction loop of '{}'; the "
                            "consumer would see partial results",
                            w->block->name));
          }
        }
      }
      if (region_buffer && region_buffer != a.buffer) {
        throw fail("the block reads more than one buffer produced under the loop");
      }
      region_buffer = a.buffer;
      if (a.indices.size() != block->iter_vars.size()) {
        throw fail(fmt::format("the block must read '{}' at its iterators", a.buffer->name));
      }
      spatial_iters.clear();
      for (size_t d = 0; d < a.indices.size(); ++d) {
        if (!IsIteratorIndex(a.indices[d], block->iter_vars[d])) {
          throw fail(fmt::format("the block must read '{}' at its iterators", a.buffer->name));
        }
        spatial_iters.push_back(a.indices[d].same_as(block->iter_vars[d].var) ? static_cast<int>(d)
                                                                              : -1);
      }
    }
    if (!region_buffer) throw fail("the block reads nothing produced under the loop");
  }

  // Blocks executed between the old position and the new one.
  std::set<const ir::StmtNode*> between;
  for (const auto& [b, pos] : order) {
    if (under_loop.count(b)) continue;
    bool is_between =
        !reverse ? (pos > block_pos && pos < loop_first) : (pos > loop_last && pos < block_pos);
    if (is_between) between.insert(b);
  }
  CheckBuffersBetween(fn, between, block, false, primitive);

  std::vector<AxisRegion> region =
      RegionUnderLoop(loop_path, region_buffer, /*reads=*/!reverse,
                      fmt::format("{} of block '{}'", primitive, block_name));
  ir::VarRanges outer = LoopRangesAt(loop_path);
  Expr iterator_predicate = PredicateOverIterators(realize, outer);
  if (!iterator_predicate.defined()) {
    throw fail("the block's predicate cannot be expressed in its iterators");
  }
  Stmt new_nest = RegenerateNest(block, spatial_iters, region, iterator_predicate, outer);

  ir::KernelFunction removed = WithBody(fn, ReplaceStmt(fn.body, nest, nullptr));
  return InsertIntoLoop(removed, loop_var, new_nest, /*at_end=*/reverse);
}

}  // namespace

ir::KernelFunction ComputeAt(const ir::KernelFunction& fn, const std::string& block,
                             const ir::Var& loop) {
  return MoveBlock(fn, block, loop, false);
}

ir::KernelFunction ReverseComputeAt(const ir::KernelFunction& fn, const std::string& block,
                                    const ir::Var& loop) {
  return MoveBlock(fn, block, loop, true);
}

std::vector<ir::Var> ComputeAtLocations(const ir::KernelFunction& fn, const std::string& block) {
  StmtPath path = GetBlockPath(fn, block);
  std::vector<int> iters;
  ir::Buffer buffer =
      IdentityWrittenBuffer(ir::As<ir::BlockRealizeNode>(path.target)->block, &iters);
  if (!buffer) return {};
  auto readers = BlocksReading(fn, buffer);
  std::vector<ir::Var> out;
  for (const auto* reader : readers) {
    if (reader->block->name == block) continue;
    StmtPath reader_path = GetBlockPath(fn, reader->block->name);
    for (const ir::ForNode* loop : EnclosingLoops(reader_path)) {
      try {
        ComputeAt(fn, block, loop->loop_var);
        out.push_back(loop->loop_var);
      } catch (const ScheduleError&) {
      }
    }
    break;  // locations are loops of the first consumer
  }
  return out;
}

}  // namespace tandem::kernels::primitive
