#include "kernels/search/search_util.h"

#include <algorithm>
#include <set>

#include "ir/kernel/functor.h"

namespace tandem::kernels::search {

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

std::vector<ir::Stmt> TopLevelStatements(const ir::KernelFunction& function) {
  const auto* root = ir::As<ir::BlockRealizeNode>(function.body);
  if (!root || !root->block->body) return {};
  if (const auto* seq = ir::As<ir::SeqNode>(root->block->body)) return seq->stmts;
  return {root->block->body};
}

std::vector<std::string> BlocksUnder(const ir::Stmt& stmt) {
  std::vector<std::string> names;
  ir::VisitStmtTree(stmt, [&](const ir::Stmt& s) {
    if (const auto* r = ir::As<ir::BlockRealizeNode>(s)) names.push_back(r->block->name);
  });
  return names;
}

bool HasThreadBinding(const ir::Stmt& stmt) {
  bool bound = false;
  ir::VisitStmtTree(stmt, [&](const ir::Stmt& s) {
    const auto* loop = ir::As<ir::ForNode>(s);
    if (loop && ir::IsThreadBinding(loop->for_kind)) bound = true;
  });
  return bound;
}

std::vector<int64_t> ThreadCountCandidates(int64_t extent, int64_t warp_size, int64_t max_threads,
                                           bool divisors_only) {
  std::vector<int64_t> counts;
  for (int64_t count = std::max<int64_t>(1, warp_size); count <= max_threads && count <= extent;
       count *= 2) {
    if (!divisors_only || extent % count == 0) counts.push_back(count);
  }
  if (counts.empty() && extent >= 1 && extent < warp_size && extent <= max_threads) {
    counts.push_back(extent);
  }
  return counts;
}

std::set<const ir::BufferNode*> WrittenBuffers(const ir::KernelFunction& fn) {
  std::set<const ir::BufferNode*> written;
  ir::VisitStmtTree(fn.body, [&](const ir::Stmt& st) {
    if (const auto* store = ir::As<ir::StoreNode>(st)) written.insert(store->buffer.get());
  });
  return written;
}

std::vector<bool> MovesVectorOperands(const ir::KernelFunction& fn, const ir::Block& block) {
  std::vector<bool> moves(block->iter_vars.size(), false);
  size_t vector_axis = moves.size();
  for (size_t k = 0; k < moves.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (iv.kind == ir::IterKind::kSpatial && iv.extent > 1) vector_axis = k;
  }
  if (vector_axis == moves.size()) return moves;
  std::set<const ir::BufferNode*> written = WrittenBuffers(fn);
  ir::VisitStmtExprs(block->body, [&](const ir::Expr& top) {
    ir::VisitExprTree(top, [&](const ir::Expr& e) {
      if (e->kind != ir::ExprKind::kLoad || written.count(e->buffer.get())) return;
      bool parameter = std::any_of(fn.params.begin(), fn.params.end(),
                                   [&](const ir::Buffer& p) { return p.get() == e->buffer.get(); });
      auto uses = [&](size_t k) {
        return std::any_of(e->operands.begin(), e->operands.end(), [&](const ir::Expr& index) {
          return ir::UsesVar(index, block->iter_vars[k].var);
        });
      };
      if (!parameter || !uses(vector_axis)) return;
      for (size_t k = 0; k < moves.size(); ++k) moves[k] = moves[k] || uses(k);
    });
  });
  return moves;
}

}  // namespace tandem::kernels::search
