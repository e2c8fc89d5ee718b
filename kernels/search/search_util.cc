#include "kernels/search/search_util.h"

#include <algorithm>
#include <set>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::search {

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
  for (const ir::IterVar& iv : block->iter_vars) {
    if (iv.kind == ir::IterKind::kReduction) return true;
  }
  return false;
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

size_t PostprocessingStart(const ir::Trace& trace) {
  const auto& instructions = trace.instructions();
  for (size_t i = 0; i < instructions.size(); ++i) {
    if (instructions[i].kind == "enter_postproc") return i;
  }
  return instructions.size();
}

ir::Trace DesignPart(const ir::Trace& trace) {
  return trace.Prefix(PostprocessingStart(trace));
}

std::optional<size_t> DefiningInstruction(const ir::Trace& trace, const std::string& name) {
  const auto& instructions = trace.instructions();
  for (size_t i = 0; i < instructions.size(); ++i) {
    const auto& outputs = instructions[i].outputs;
    if (std::find(outputs.begin(), outputs.end(), name) != outputs.end()) return i;
  }
  return std::nullopt;
}

std::vector<size_t> CategoricalsAnnotating(const ir::Trace& trace, const std::string& key) {
  std::vector<size_t> out;
  const auto& instructions = trace.instructions();
  size_t end = PostprocessingStart(trace);
  for (size_t i = 0; i < end; ++i) {
    const ir::Instruction& inst = instructions[i];
    if (inst.kind != "annotate" || inst.inputs.size() < 2) continue;
    if (!inst.attrs.Has("key") || inst.attrs.GetString("key") != key) continue;
    std::optional<size_t> def = DefiningInstruction(trace, inst.inputs[1]);
    if (def && instructions[*def].kind == "sample_categorical" && instructions[*def].decision &&
        std::find(out.begin(), out.end(), *def) == out.end()) {
      out.push_back(*def);
    }
  }
  return out;
}

std::optional<ir::Trace> OtherCategory(const ir::Trace& trace, size_t index, RandomState& random) {
  const ir::Instruction& inst = trace.instructions()[index];
  if (inst.kind != "sample_categorical" || !inst.decision) return std::nullopt;
  const auto* current = std::get_if<int64_t>(&*inst.decision);
  int64_t n = static_cast<int64_t>(inst.attrs.GetInts("candidates").size());
  if (!current || n < 2) return std::nullopt;
  int64_t next = random.Uniform(n - 1);
  if (next >= *current) ++next;
  return trace.WithDecision(index, next);
}

std::optional<ir::Trace> MutateOneCategorical(const ir::Trace& trace,
                                              const std::vector<size_t>& candidates,
                                              RandomState& random) {
  std::vector<size_t> order = candidates;
  while (!order.empty()) {
    size_t pick = static_cast<size_t>(random.Uniform(static_cast<int64_t>(order.size())));
    if (auto mutated = OtherCategory(trace, order[pick], random)) return mutated;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  return std::nullopt;
}

bool GoodVectorExtent(int64_t extent, int64_t max_extent, int vector_lanes) {
  int64_t multiple = std::min<int64_t>(4, std::max(1, vector_lanes));
  return extent >= 2 && extent <= max_extent && extent % multiple == 0;
}

}  // namespace tandem::kernels::search
