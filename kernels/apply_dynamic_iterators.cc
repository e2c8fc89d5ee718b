// ApplyDynamicIterators (kernels/dynamic_extent.h): the plan of a kernel put on its schedule,
// as guards on blocks and trip counts of loops, and padding bounded by the valid length.
#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

#include "ir/error.h"
#include "ir/kernel/bound.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/simplify.h"
#include "kernels/dynamic_access.h"
#include "kernels/dynamic_extent.h"
#include "kernels/dynamic_means.h"
#include "kernels/dynamic_padding.h"

namespace tandem::kernels {

namespace {

using dynamic_access::Access;
using dynamic_access::AccessesOf;
using dynamic_access::IsLeaf;
using dynamic_access::LinearTerms;
using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

Expr CeilDiv(const Expr& a, int64_t b) {
  return ir::FloorDiv(a + Expr(b - 1), Expr(b));
}

// The sum of `terms` and `constant` but the term `skip`.
Expr SumWithout(const std::vector<std::pair<int64_t, Expr>>& terms, int64_t constant, size_t skip) {
  Expr sum = Expr(constant);
  for (size_t t = 0; t < terms.size(); ++t) {
    if (t != skip) sum = sum + Expr(terms[t].first) * terms[t].second;
  }
  return sum;
}

// A value T such that `index` >= `limit` whenever `loop_var` >= T (with every loop variable in
// `ranges`), when one is found: index = s * loop_var + rest or c * floordiv(s * loop_var +
// rest', d) + rest with positive s, c, d and non-negative rests.
std::optional<Expr> Threshold(const Expr& index, const Expr& loop_var, const Expr& limit,
                              const ir::VarRanges& ranges) {
  std::vector<std::pair<int64_t, Expr>> terms;
  int64_t constant = 0;
  LinearTerms(index, 1, terms, constant);
  auto nonnegative = [&](const Expr& e) { return ir::ConstIntBound(e, ranges).min >= 0; };
  for (size_t t = 0; t < terms.size(); ++t) {
    const auto& [coefficient, atom] = terms[t];
    if (coefficient <= 0 || !nonnegative(SumWithout(terms, constant, t))) continue;
    if (atom.same_as(loop_var) || (atom->kind == ExprKind::kVar && atom.get() == loop_var.get())) {
      return CeilDiv(limit, coefficient);
    }
    int64_t divisor = 0;
    if (atom->kind == ExprKind::kFloorDiv && ir::AsConstInt(atom->operands[1], &divisor) &&
        divisor > 0) {
      std::vector<std::pair<int64_t, Expr>> inner;
      int64_t inner_constant = 0;
      LinearTerms(atom->operands[0], 1, inner, inner_constant);
      for (size_t u = 0; u < inner.size(); ++u) {
        if (inner[u].first <= 0 || inner[u].second.get() != loop_var.get()) continue;
        if (!nonnegative(SumWithout(inner, inner_constant, u))) continue;
        return CeilDiv(CeilDiv(limit, coefficient) * Expr(divisor), inner[u].first);
      }
    }
  }
  return std::nullopt;
}

// One guard of a scheduled block: its iterations where `value` (in loop variables) reaches
// `extent`'s valid length are skipped.
struct Guard {
  Expr value;
  AxisExtent extent;
  // Whether the block must not run past it: a reduction's (junk would enter the sum), or any in
  // a block with a data-dependent load (a gather's bounds check would fail on junk). Otherwise
  // the guard only bounds loops (GuardLoops): a partial tile computes junk positions, which is
  // cheaper than a predicate on every element.
  bool required = false;
};

// Whether the block has a load at a loaded index (a gather).
bool HasDataDependentLoad(const ir::BlockNode& block) {
  for (const Access& a : AccessesOf(block)) {
    for (const Expr& index : a.indices) {
      if (ir::HasLoad(index)) return true;
    }
  }
  return false;
}

// Puts the guards on the blocks of a scheduled kernel:
//   - a planned block whose iterators the schedule kept: one guard per dynamic iterator;
//   - any other block (one the schedule added: a cache copy, an rfactor block; or a planned
//     block rfactor rewrote): one guard per read of a kernel parameter's dynamic axis, so that
//     it skips what reads junk. Such a block reducing over the dynamic axis is an Error unless
//     its reduction reads the parameter directly (an rfactor block does; the rewritten block
//     then reduces partial results, which the skipped iterations left at their initial value).
class ApplyPlan : public ir::StmtMutator {
 public:
  ApplyPlan(const DynamicPlan& plan, const ir::Buffer& sizes,
            std::map<const ir::BufferNode*, TensorExtents> params, MeanOfBuffer means)
      : plan_(plan), sizes_(sizes), params_(std::move(params)), means_(std::move(means)) {}

  std::set<std::string> seen;
  std::map<std::string, int> mean_divisions;         // rewritten, by the mean's sum block
  std::map<std::string, std::vector<Guard>> guards;  // by block name
  std::set<std::string> kept;                        // planned blocks with their iterators

  Stmt VisitBlockRealize(const ir::BlockRealizeNode* op, const Stmt& s) override {
    Stmt visited = StmtMutator::VisitBlockRealize(op, s);
    const auto* realize = ir::As<ir::BlockRealizeNode>(visited);
    const ir::BlockNode& block = *realize->block;
    if (!IsLeaf(block)) return visited;  // the root block, or one holding others
    seen.insert(block.name);
    std::vector<Guard> block_guards;
    if (plan_.blocks.count(block.name) && KeptIterators(block)) {
      kept.insert(block.name);
      for (const DynamicIterator& it : plan_.iterators) {
        if (it.block == block.name) {
          block_guards.push_back({realize->iter_values[it.iterator], it.extent, it.reduction});
        }
      }
    } else {
      block_guards = AccessGuards(*realize);
      // A planned block rfactor rewrote keeps its spatial iterators: they still bound loops.
      for (const DynamicIterator& it : plan_.iterators) {
        if (it.block == block.name && !it.reduction && it.iterator < block.iter_vars.size() &&
            block.iter_vars[it.iterator].extent == it.domain &&
            block.iter_vars[it.iterator].kind == ir::IterKind::kSpatial) {
          block_guards.push_back({realize->iter_values[it.iterator], it.extent, false});
        }
      }
    }
    if (block_guards.empty()) return visited;
    guards[block.name] = block_guards;
    bool gathers = HasDataDependentLoad(block);
    Expr predicate = realize->predicate;
    bool changed = false;
    for (const Guard& guard : block_guards) {
      if (!guard.required && !gathers) continue;
      changed = true;
      Expr condition = guard.value < Limit(guard.extent);
      int64_t always = 0;
      bool trivial = !predicate.defined() || (ir::AsConstInt(predicate, &always) && always != 0);
      predicate = trivial ? condition : predicate && condition;
    }
    if (!changed) return visited;
    return ir::MakeBlockRealize(realize->iter_values, predicate, realize->block);
  }

  // The means' divisions by their count at run time (kernels/dynamic_means.h); with the plan's
  // padded reads, the selects that pad a dynamic axis bound it by its valid length
  // (kernels/dynamic_padding.h).
  Expr VisitExpr(const Expr& original) override {
    auto limit = [&](const AxisExtent& extent) { return Limit(extent); };
    Expr e = DivideMeansByValidCount(original, means_, limit, mean_divisions);
    if (!plan_.padded_reads) return e;
    return BoundPaddingByValidLength(
        e,
        [&](const ir::BufferNode* buffer) -> const TensorExtents* {
          if (auto it = params_.find(buffer); it != params_.end()) return &it->second;
          auto named = plan_.intermediates.find(buffer->name);
          return named == plan_.intermediates.end() ? nullptr : &named->second;
        },
        limit);
  }

  // The valid length of `extent`: its scale times its symbol's size, loaded from the extent
  // parameter, plus its offset, divided (rounding down) by its divisor.
  Expr Limit(const AxisExtent& extent) const {
    Expr n = ir::Load(sizes_, {Expr(static_cast<int64_t>(extent.symbol))});
    Expr length = Expr(extent.scale) * n + Expr(extent.offset);
    if (extent.divisor != 1) length = ir::FloorDiv(length, Expr(extent.divisor));
    return ir::Simplify(length);
  }

 private:
  bool KeptIterators(const ir::BlockNode& block) const {
    for (const DynamicIterator& it : plan_.iterators) {
      if (it.block != block.name) continue;
      if (it.iterator >= block.iter_vars.size() ||
          block.iter_vars[it.iterator].extent != it.domain ||
          (block.iter_vars[it.iterator].kind == ir::IterKind::kReduction) != it.reduction) {
        return false;
      }
    }
    return true;
  }

  std::vector<Guard> AccessGuards(const ir::BlockRealizeNode& realize) const {
    const ir::BlockNode& block = *realize.block;
    ir::VarMap bindings;
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      bindings[block.iter_vars[k].var.get()] = realize.iter_values[k];
    }
    std::vector<Guard> out;
    bool guarded_reduction = false;
    for (const Access& a : AccessesOf(block)) {
      if (a.write) continue;
      const TensorExtents* extents = nullptr;
      if (auto it = params_.find(a.buffer.get()); it != params_.end()) {
        extents = &it->second;
      } else if (auto named = plan_.intermediates.find(a.buffer->name);
                 named != plan_.intermediates.end()) {
        extents = &named->second;
      }
      if (extents == nullptr || extents->size() != a.indices.size()) continue;
      for (size_t axis = 0; axis < a.indices.size(); ++axis) {
        if (!(*extents)[axis].dynamic() || ir::HasLoad(a.indices[axis])) continue;
        bool reduction = false;
        for (const ir::IterVar& iv : block.iter_vars) {
          if (iv.kind == ir::IterKind::kReduction && ir::UsesVar(a.indices[axis], iv.var)) {
            reduction = true;
          }
        }
        guarded_reduction = guarded_reduction || reduction;
        out.push_back(
            {ir::Simplify(ir::Substitute(a.indices[axis], bindings)), (*extents)[axis], reduction});
      }
    }
    bool reduces = false;
    for (const ir::IterVar& iv : block.iter_vars) {
      reduces = reduces || iv.kind == ir::IterKind::kReduction;
    }
    if (reduces && !guarded_reduction && !FromStaticReduction(block.name)) {
      // A planned block rfactor rewrote follows its rfactor block.
      bool rewritten_by_rfactor = false;
      if (plan_.blocks.count(block.name)) {
        for (const std::string& name : seen) {
          rewritten_by_rfactor = rewritten_by_rfactor || name.rfind(block.name + "_rf", 0) == 0;
        }
      }
      if (!rewritten_by_rfactor) {
        throw ir::Error(fmt::format(
            "dynamic axis: the schedule added the reduction block '{}', whose reduction the "
            "analysis of the unscheduled kernel does not cover",
            block.name));
      }
    }
    return out;
  }

  // Whether `block` is an rfactor block of a planned block that does not reduce over the
  // dynamic axis (it reduces over static axes only).
  bool FromStaticReduction(const std::string& block) const {
    for (const std::string& base : plan_.blocks) {
      if (block.rfind(base + "_rf", 0) != 0) continue;
      bool dynamic = false;
      for (const DynamicIterator& it : plan_.iterators) {
        dynamic = dynamic || (it.block == base && it.reduction);
      }
      if (!dynamic) return true;
    }
    return false;
  }

  const DynamicPlan& plan_;
  ir::Buffer sizes_;
  std::map<const ir::BufferNode*, TensorExtents> params_;
  MeanOfBuffer means_;
};

// Puts `if (loop_var < T)` around the body of every serial or parallel loop whose iterations
// from T on reach only skipped iterations (see the file comment).
class GuardLoops : public ir::StmtMutator {
 public:
  GuardLoops(const ApplyPlan& apply, ir::VarRanges ranges)
      : apply_(apply), ranges_(std::move(ranges)) {}

  Stmt VisitFor(const ir::ForNode* op, const Stmt& s) override {
    Stmt visited = StmtMutator::VisitFor(op, s);
    const auto* loop = ir::As<ir::ForNode>(visited);
    if (loop->for_kind != ir::ForKind::kSerial && loop->for_kind != ir::ForKind::kParallel) {
      return visited;
    }
    std::optional<Expr> threshold = LoopThreshold(op);
    // Guards the threshold does not cover (a second dynamic axis fused into the loop, as the
    // columns under the rows of an image) end an iteration with only skipped work at once.
    std::optional<Expr> body_guard = BodyGuard(op, /*without_threshold=*/threshold.has_value());
    if (!threshold && !body_guard) return visited;
    Stmt body = body_guard ? ir::MakeIfThenElse(*body_guard, loop->body) : loop->body;
    if (threshold) body = ir::MakeIfThenElse(loop->loop_var < *threshold, body);
    return ir::MakeFor(loop->loop_var, loop->extent, loop->for_kind, body, loop->annotations);
  }

 private:
  // When the threshold cannot be had (the dynamic iterator is not a prefix of the loop, as the
  // rows of a loop fusing heads and rows): a condition that holds in the iterations where some
  // guarded block under the loop runs, made of guards that no loop inside depends on, so that
  // an iteration with only skipped work ends at once. None under the same conditions as
  // LoopThreshold. `without_threshold`: only from the guards that give the loop no threshold
  // (the loop has one from the others); none when every guarded block has such a guard.
  std::optional<Expr> BodyGuard(const ir::ForNode* loop, bool without_threshold) const {
    std::set<const ir::ExprNode*> inner;
    ir::VisitStmtTree(loop->body, [&](const Stmt& s) {
      if (const auto* nested = ir::As<ir::ForNode>(s)) inner.insert(nested->loop_var.get());
    });
    auto uses_inner = [&](const Expr& e) {
      bool uses = false;
      ir::VisitExprTree(e, [&](const Expr& x) {
        uses = uses || (x->kind == ExprKind::kVar && inner.count(x.get()));
      });
      return uses;
    };
    // The guard's value with the loops inside at 0, when it grows with each of them (their
    // terms are c * var with c > 0): its smallest value over the loop's body.
    auto lowest = [&](const Expr& value) -> std::optional<Expr> {
      std::vector<std::pair<int64_t, Expr>> terms;
      int64_t constant = 0;
      LinearTerms(value, 1, terms, constant);
      Expr sum = Expr(constant);
      for (const auto& [coefficient, atom] : terms) {
        if (!uses_inner(atom)) {
          sum = sum + Expr(coefficient) * atom;
        } else if (atom->kind != ExprKind::kVar || coefficient <= 0) {
          return std::nullopt;
        }
      }
      return ir::Simplify(sum);
    };
    // Blocks that decide: the planned blocks under the loop, or, without any, every guarded one.
    bool any_kept = false;
    ir::VisitStmtTree(loop->body, [&](const Stmt& s) {
      const auto* realize = ir::As<ir::BlockRealizeNode>(s);
      any_kept = any_kept || (realize && apply_.kept.count(realize->block->name));
    });
    std::vector<Expr> conditions;
    std::set<std::string> seen_conditions;
    bool blocked = false;
    ir::VisitStmtTree(loop->body, [&](const Stmt& s) {
      const auto* realize = ir::As<ir::BlockRealizeNode>(s);
      if (blocked || !realize) return;
      bool kept = apply_.kept.count(realize->block->name) > 0;
      if (any_kept && !kept) return;
      auto it = apply_.guards.find(realize->block->name);
      if (it == apply_.guards.end()) {
        blocked = kept;
        return;
      }
      std::optional<Expr> block_condition;
      for (const Guard& guard : it->second) {
        if (without_threshold &&
            Threshold(guard.value, loop->loop_var, apply_.Limit(guard.extent), ranges_)) {
          continue;
        }
        std::optional<Expr> low = lowest(guard.value);
        if (!low || !ir::UsesVar(*low, loop->loop_var)) continue;
        Expr condition = *low < apply_.Limit(guard.extent);
        block_condition = block_condition ? *block_condition && condition : condition;
      }
      if (!block_condition) {
        blocked = true;
        return;
      }
      if (seen_conditions.insert(ir::PrintExpr(*block_condition)).second) {
        conditions.push_back(*block_condition);
      }
    });
    if (blocked || conditions.empty()) return std::nullopt;
    Expr any = conditions[0];
    for (size_t k = 1; k < conditions.size(); ++k) any = any || conditions[k];
    return any;
  }

  // The largest of the thresholds of the guarded blocks under the loop; none when a planned
  // block whose iterators the schedule kept has no guard bound to the loop (a block the schedule
  // added without a guard is assumed to serve the guarded blocks of the same iteration).
  std::optional<Expr> LoopThreshold(const ir::ForNode* loop) const {
    std::optional<Expr> result;
    bool blocked = false;
    ir::VisitStmtTree(loop->body, [&](const Stmt& s) {
      const auto* realize = ir::As<ir::BlockRealizeNode>(s);
      if (blocked || !realize) return;
      auto it = apply_.guards.find(realize->block->name);
      if (it == apply_.guards.end()) {
        blocked = apply_.kept.count(realize->block->name) > 0;
        return;
      }
      std::optional<Expr> block_threshold;
      for (const Guard& guard : it->second) {
        std::optional<Expr> t =
            Threshold(guard.value, loop->loop_var, apply_.Limit(guard.extent), ranges_);
        if (t) block_threshold = block_threshold ? ir::Min(*block_threshold, *t) : *t;
      }
      if (!block_threshold) {
        blocked = true;
        return;
      }
      result = result ? ir::Max(*result, *block_threshold) : *block_threshold;
    });
    if (blocked || !result) return std::nullopt;
    return ir::Simplify(*result);
  }

  const ApplyPlan& apply_;
  ir::VarRanges ranges_;
};

}  // namespace

ir::KernelFunction ApplyDynamicIterators(const ir::KernelFunction& scheduled,
                                         const DynamicPlan& plan) {
  if (plan.params.size() != scheduled.params.size()) {
    throw ir::Error(fmt::format("kernel '{}': the plan is for {} parameters, the kernel has {}",
                                scheduled.name, plan.params.size(), scheduled.params.size()));
  }
  std::map<const ir::BufferNode*, TensorExtents> params;
  for (size_t p = 0; p < scheduled.params.size(); ++p) {
    params[scheduled.params[p].get()] = plan.params[p];
  }
  ir::KernelFunction out = scheduled;
  ir::Buffer extent = ir::MakeBuffer(kDynamicExtentParam, ir::DataType::kInt64,
                                     {static_cast<int64_t>(plan.symbols)});
  ApplyPlan apply(plan, extent, std::move(params), MeansByBuffer(plan.means, scheduled.body));
  out.body = apply.VisitStmt(scheduled.body);
  for (const DynamicIterator& it : plan.iterators) {
    if (it.reduction && !apply.seen.count(it.block)) {
      throw ir::Error(fmt::format(
          "dynamic axis: the schedule of kernel '{}' removed block '{}', which reduces over the "
          "dynamic axis",
          scheduled.name, it.block));
    }
  }
  for (const MeanCount& mean : plan.means) {
    if (apply.mean_divisions[mean.block] == 0) {
      throw ir::Error(fmt::format(
          "dynamic axis: in the schedule of kernel '{}', the division of the mean summed by block "
          "'{}' by its count ({}) is not a division of a load of '{}' by that constant",
          scheduled.name, mean.block, mean.count_at_bound, mean.buffer));
    }
  }
  ir::VarRanges ranges;
  ir::VisitStmtTree(out.body, [&](const Stmt& s) {
    if (const auto* loop = ir::As<ir::ForNode>(s)) {
      ranges[loop->loop_var.get()] = {0, loop->extent - 1};
    }
  });
  out.body = GuardLoops(apply, ranges).VisitStmt(out.body);
  auto position = out.params.end() - out.num_outputs;
  out.params.insert(position, extent);
  return out;
}

}  // namespace tandem::kernels
