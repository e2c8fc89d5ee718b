#include "kernels/schedule/block_analysis.h"

#include <algorithm>
#include <set>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels {

const ir::BlockRealizeNode* FindRealize(const ir::KernelFunction& function,
                                        const std::string& name) {
  auto path = FindBlock(function, name);
  return path ? ir::As<ir::BlockRealizeNode>(path->target) : nullptr;
}

bool BlockExists(const Schedule& schedule, const BlockRV& block) {
  try {
    return FindRealize(schedule.function(), schedule.BlockName(block)) != nullptr;
  } catch (const ir::Error&) {
    return false;
  }
}

bool IsReduction(const ir::Block& block) {
  return CountIterators(block, ir::IterKind::kReduction) > 0;
}

size_t CountIterators(const ir::Block& block, ir::IterKind kind) {
  size_t n = 0;
  for (const ir::IterVar& iv : block->iter_vars) n += iv.kind == kind ? 1 : 0;
  return n;
}

namespace {

int64_t ExtentOf(const ir::Block& block, ir::IterKind kind) {
  int64_t n = 1;
  for (const ir::IterVar& iv : block->iter_vars) {
    if (iv.kind == kind) n *= iv.extent;
  }
  return n;
}

}  // namespace

int64_t SpatialExtent(const ir::Block& block) {
  return ExtentOf(block, ir::IterKind::kSpatial);
}
int64_t ReductionExtent(const ir::Block& block) {
  return ExtentOf(block, ir::IterKind::kReduction);
}

bool IsPristineNest(const ir::KernelFunction& function, const std::string& name) {
  auto path = FindBlock(function, name);
  if (!path) return false;
  const auto* realize = ir::As<ir::BlockRealizeNode>(path->target);
  const ir::Block& block = realize->block;
  if (!EnclosingConditions(*path).empty()) return false;
  // Directly under the root: the only enclosing block is the root.
  const ir::BlockRealizeNode* scope = EnclosingBlock(*path);
  if (!scope || scope->block->name != "root") return false;
  std::vector<const ir::ForNode*> loops = EnclosingLoops(*path);
  if (loops.size() != block->iter_vars.size() ||
      realize->iter_values.size() != block->iter_vars.size()) {
    return false;
  }
  for (size_t k = 0; k < loops.size(); ++k) {
    if (!realize->iter_values[k].same_as(loops[k]->loop_var)) return false;
    if (loops[k]->extent != block->iter_vars[k].extent) return false;
    const ir::StmtNode* inner =
        k + 1 < loops.size() ? static_cast<const ir::StmtNode*>(loops[k + 1]) : realize;
    if (loops[k]->body.get() != inner) return false;
  }
  int64_t always = 0;
  return !realize->predicate.defined() ||
         (ir::AsConstInt(realize->predicate, &always) && always != 0);
}

bool WritesOutput(const ir::KernelFunction& function, const ir::Block& block) {
  for (const ir::BufferRegion& w : block->writes) {
    if (IsParam(function, w.buffer)) return true;
  }
  return false;
}

std::vector<std::string> ConsumersOf(const ir::KernelFunction& function, const ir::Block& block) {
  std::vector<std::string> out;
  for (const ir::BufferRegion& w : block->writes) {
    for (const auto* reader : BlocksReading(function, w.buffer)) {
      const std::string& name = reader->block->name;
      if (name != block->name && std::find(out.begin(), out.end(), name) == out.end()) {
        out.push_back(name);
      }
    }
  }
  return out;
}

bool ReadsAnyOf(const ir::Block& reader, const ir::Block& writer) {
  for (const ir::BufferRegion& r : reader->reads) {
    for (const ir::BufferRegion& w : writer->writes) {
      if (r.buffer == w.buffer) return true;
    }
  }
  return false;
}

int64_t LoadsOf(const ir::Block& reader, const ir::Block& writer) {
  int64_t count = 0;
  ir::VisitStmtExprs(reader->body, [&](const ir::Expr& top) {
    ir::VisitExprTree(top, [&](const ir::Expr& e) {
      if (e->kind != ir::ExprKind::kLoad) return;
      for (const ir::BufferRegion& w : writer->writes) count += e->buffer == w.buffer;
    });
  });
  return count;
}

bool HasDataReuse(const ir::Block& block) {
  std::set<const ir::BufferNode*> written;
  for (const ir::BufferRegion& w : block->writes) written.insert(w.buffer.get());
  for (const Access& load : CollectLoads(block->body)) {
    if (written.count(load.buffer.get())) continue;
    for (const ir::IterVar& iv : block->iter_vars) {
      if (iv.kind != ir::IterKind::kSpatial || iv.extent <= 1) continue;
      bool used = false;
      for (const ir::Expr& index : load.indices) used = used || ir::UsesVar(index, iv.var);
      if (!used) return true;
    }
  }
  return false;
}

const ir::BlockRealizeNode* PristineReduction(const Schedule& schedule, const BlockRV& block) {
  if (!BlockExists(schedule, block)) return nullptr;
  const std::string& name = schedule.BlockName(block);
  const ir::BlockRealizeNode* realize = FindRealize(schedule.function(), name);
  if (name == "root" || !realize) return nullptr;
  const ir::Block& b = realize->block;
  if (!IsReduction(b) || !b->init || !IsPristineNest(schedule.function(), name)) return nullptr;
  return realize;
}

}  // namespace tandem::kernels
