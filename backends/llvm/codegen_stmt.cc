// Statements of the kernel code generator: loops, blocks, buffers, parallel outlining.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <set>

#include "backends/llvm/codegen_internal.h"
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/simplify.h"
#include "kernels/default_schedule.h"

namespace tandem::backends::codegen {

using ir::DataType;
using ir::Error;
using ir::Expr;
using ir::Stmt;
using ir::StmtKind;

namespace {

using VarScope = ScopedEntry<std::unordered_map<const ir::ExprNode*, CgValue>>;
using BufferScope = ScopedEntry<std::unordered_map<const ir::BufferNode*, llvm::Value*>>;

// Variables and buffers that `s` refers to, in order of first use.
struct Uses {
  std::vector<const ir::ExprNode*> vars;
  std::vector<ir::Buffer> buffers;
};

Uses CollectUses(const Stmt& s) {
  Uses uses;
  std::unordered_set<const ir::ExprNode*> seen_vars;
  std::unordered_set<const ir::BufferNode*> seen_buffers;
  auto add_buffer = [&](const ir::Buffer& b) {
    if (b && seen_buffers.insert(b.get()).second) uses.buffers.push_back(b);
  };
  ir::VisitStmtExprs(s, [&](const Expr& top) {
    ir::VisitExprTree(top, [&](const Expr& e) {
      if (e->kind == ir::ExprKind::kVar && seen_vars.insert(e.get()).second) {
        uses.vars.push_back(e.get());
      }
      if (e->kind == ir::ExprKind::kLoad) add_buffer(e->buffer);
    });
  });
  ir::VisitStmtTree(s, [&](const Stmt& stmt) {
    if (const auto* store = ir::As<ir::StoreNode>(stmt)) add_buffer(store->buffer);
  });
  return uses;
}

int64_t ExprNodes(const Expr& e) {
  int64_t count = 0;
  ir::VisitExprTree(e, [&](const Expr&) { ++count; });
  return count;
}

bool HasSelect(const Stmt& s) {
  bool found = false;
  ir::VisitStmtExprs(s, [&](const Expr& top) {
    ir::VisitExprTree(top, [&](const Expr& e) { found |= e->kind == ir::ExprKind::kSelect; });
  });
  return found;
}

// Estimates code size (EstimateWork). With variables bound to constants (inside copies of an
// unrolled loop that selects among arms), a select whose condition becomes a constant counts
// only its taken arm, as the code generator emits only that one, and a load repeated in
// another copy counts once (the copies sit side by side, so LLVM reuses the value).
class WorkEstimator {
 public:
  int64_t Work(const Stmt& s, const ir::VarMap& constants) {
    if (!s) return 0;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto* loop = ir::As<ir::ForNode>(s);
        if (loop->for_kind == ir::ForKind::kUnrolled && HasSelect(loop->body)) {
          int64_t total = 0;
          for (int64_t v = 0; v < loop->extent; ++v) {
            ir::VarMap bound = constants;
            bound[loop->loop_var.get()] = ir::IntImm(v, loop->loop_var->dtype);
            total += Work(loop->body, bound);
          }
          return total;
        }
        // LLVM fully unrolls short loops: count up to 16 iterations; vector code is emitted
        // once.
        int64_t copies = loop->for_kind == ir::ForKind::kUnrolled ? loop->extent
                         : loop->for_kind == ir::ForKind::kVectorized
                             ? 1
                             : std::min<int64_t>(loop->extent, 16);
        return copies * Work(loop->body, constants);
      }
      case StmtKind::kSeq: {
        int64_t total = 0;
        for (const Stmt& child : ir::As<ir::SeqNode>(s)->stmts) total += Work(child, constants);
        return total;
      }
      case StmtKind::kStore: {
        const auto* store = ir::As<ir::StoreNode>(s);
        int64_t total = 1 + Nodes(store->value, constants);
        for (const Expr& index : store->indices) total += Nodes(index, constants);
        return total;
      }
      case StmtKind::kIfThenElse: {
        const auto* branch = ir::As<ir::IfThenElseNode>(s);
        return Nodes(branch->condition, constants) + Work(branch->then_case, constants) +
               Work(branch->else_case, constants);
      }
      case StmtKind::kBlockRealize: {
        const auto* realize = ir::As<ir::BlockRealizeNode>(s);
        int64_t total = Nodes(realize->predicate, constants);
        if (!realize->block) return total;
        // Block iterators bound to constants by the loops around are constants inside.
        ir::VarMap inner = constants;
        for (size_t k = 0; k < realize->iter_values.size(); ++k) {
          total += Nodes(realize->iter_values[k], constants);
          if (constants.empty() || k >= realize->block->iter_vars.size()) continue;
          Expr value = ir::Simplify(ir::Substitute(realize->iter_values[k], constants));
          if (value->is_const_int()) inner[realize->block->iter_vars[k].var.get()] = value;
        }
        return total + Work(realize->block->init, inner) + Work(realize->block->body, inner);
      }
    }
    return 0;
  }

 private:
  int64_t Nodes(const Expr& e, const ir::VarMap& constants) {
    if (!e.defined()) return 0;
    if (constants.empty()) return ExprNodes(e);
    return BoundNodes(ir::Simplify(ir::Substitute(e, constants)));
  }

  int64_t BoundNodes(const Expr& e) {
    if (e->kind == ir::ExprKind::kLoad && !seen_loads_.insert(ir::PrintExpr(e)).second) return 1;
    int64_t count = 1;
    for (const Expr& operand : e->operands) count += BoundNodes(operand);
    return count;
  }

  std::unordered_set<std::string> seen_loads_;
};

// What one iteration of a parallel loop's body does, counted in the stores it executes (every
// iteration of the loops inside, vector lanes included) and in those of them that write a
// buffer other than a "local" one (results, not accumulators).
struct IterationWork {
  int64_t stores = 0;
  int64_t results = 0;
};

IterationWork WorkOfIteration(const Stmt& s) {
  IterationWork work;
  if (!s) return work;
  switch (s->kind) {
    case StmtKind::kFor: {
      const auto* loop = ir::As<ir::ForNode>(s);
      IterationWork body = WorkOfIteration(loop->body);
      return {body.stores * loop->extent, body.results * loop->extent};
    }
    case StmtKind::kSeq:
      for (const Stmt& child : ir::As<ir::SeqNode>(s)->stmts) {
        IterationWork part = WorkOfIteration(child);
        work.stores += part.stores;
        work.results += part.results;
      }
      return work;
    case StmtKind::kStore: {
      bool local = ir::As<ir::StoreNode>(s)->buffer->scope == "local";
      return {1, local ? 0 : 1};
    }
    case StmtKind::kIfThenElse: {
      const auto* branch = ir::As<ir::IfThenElseNode>(s);
      for (const Stmt& arm : {branch->then_case, branch->else_case}) {
        IterationWork part = WorkOfIteration(arm);
        work.stores = std::max(work.stores, part.stores);
        work.results = std::max(work.results, part.results);
      }
      return work;
    }
    case StmtKind::kBlockRealize: {
      const ir::Block& block = ir::As<ir::BlockRealizeNode>(s)->block;
      if (!block) return work;
      for (const Stmt& part_stmt : {block->init, block->body}) {
        IterationWork part = WorkOfIteration(part_stmt);
        work.stores += part.stores;
        work.results += part.results;
      }
      return work;
    }
  }
  return work;
}

// A guarded parallel loop (a dynamic kernel's, whose trip count or guarded iterations are known
// only at run time) runs on the calling thread alone when the iterations that pass its guard
// times one iteration's work are below both of the default schedules' thresholds for a static
// kernel (results, and stores as multiply-adds): a matmul of 16 rows built for 128 runs as the
// static build of 16 rows does, without a fork and join that costs more than it saves.
constexpr int64_t kParallelMinResults = kernels::kDefaultParallelMinWork;
constexpr int64_t kParallelMinStores = kernels::kParallelMinMacs;

}  // namespace

int64_t EstimateWork(const Stmt& s, const ir::VarMap& constants) {
  return WorkEstimator().Work(s, constants);
}

std::unordered_map<const ir::BufferNode*, int> CountAccesses(const Stmt& s) {
  std::unordered_map<const ir::BufferNode*, int> counts;
  ir::VisitStmtExprs(s, [&](const Expr& top) {
    ir::VisitExprTree(top, [&](const Expr& e) {
      if (e->kind == ir::ExprKind::kLoad) ++counts[e->buffer.get()];
    });
  });
  ir::VisitStmtTree(s, [&](const Stmt& stmt) {
    if (const auto* store = ir::As<ir::StoreNode>(stmt)) ++counts[store->buffer.get()];
  });
  return counts;
}

llvm::Function* KernelCodegen::CreateFunction(const std::string& name, llvm::FunctionType* type,
                                              bool internal) {
  auto* fn = llvm::Function::Create(
      type, internal ? llvm::Function::InternalLinkage : llvm::Function::ExternalLinkage, name,
      module_);
  if (fn->getName() != name) {
    throw Error(fmt::format("function name '{}' is already used in this module", name));
  }
  fn->addFnAttr("target-cpu", attributes_.cpu);
  if (!attributes_.features.empty()) fn->addFnAttr("target-features", attributes_.features);
  // "min-legal-vector-width" is set once the function is emitted (SetVectorWidthAttributes).
  if (attributes_.prefer_vector_width > 0) {
    fn->addFnAttr("prefer-vector-width", std::to_string(attributes_.prefer_vector_width));
  }
  fn->addFnAttr("no-trapping-math", "true");
  fn->setDoesNotThrow();
  functions_.push_back(fn);
  return fn;
}

void KernelCodegen::SetVectorWidthAttributes() {
  // As clang does for explicit vector types: the vectors a schedule asked for keep their width
  // (up to the preferred width when one is given; 512 bits at most) even where the target
  // prefers narrower ones for the vectors LLVM makes itself (256 bits on Intel server cores).
  int64_t cap = attributes_.prefer_vector_width > 0 ? attributes_.prefer_vector_width : 512;
  int64_t bits = std::min(max_vector_bits_, cap);
  for (llvm::Function* fn : functions_) {
    fn->addFnAttr("min-legal-vector-width", std::to_string(bits));
  }
}

llvm::AllocaInst* KernelCodegen::EntryAlloca(llvm::Type* type, const std::string& name) {
  llvm::IRBuilder<> entry(entry_block_, entry_block_->begin());
  llvm::AllocaInst* slot = entry.CreateAlloca(type, nullptr, name);
  slot->setAlignment(llvm::Align(64));
  return slot;
}

CgValue KernelCodegen::LoopVarValue(const ir::Var& var, const CgValue& counter) {
  return var->dtype == DataType::kInt64 ? counter : Cast(counter, var->dtype);
}

void KernelCodegen::Emit(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::kFor:
      EmitFor(s);
      return;
    case StmtKind::kSeq:
      if (gpu_ && thread_loop_depth_ == 0) {
        EmitBlockLevelSequence(ir::As<ir::SeqNode>(s)->stmts);
        return;
      }
      for (const Stmt& child : ir::As<ir::SeqNode>(s)->stmts) Emit(child);
      return;
    case StmtKind::kStore:
      EmitStore(ir::As<ir::StoreNode>(s));
      return;
    case StmtKind::kIfThenElse: {
      const auto* branch = ir::As<ir::IfThenElseNode>(s);
      if (!branch->condition.defined()) throw Error("if statement without a condition");
      CgValue condition = ToBool(Eval(branch->condition));
      std::function<void()> else_case;
      if (branch->else_case) else_case = [&] { Emit(branch->else_case); };
      EmitConditional(
          condition, [&] { Emit(branch->then_case); }, else_case);
      return;
    }
    case StmtKind::kBlockRealize:
      EmitBlock(ir::As<ir::BlockRealizeNode>(s));
      return;
  }
}

void KernelCodegen::EmitFor(const Stmt& s) {
  const auto* loop = ir::As<ir::ForNode>(s);
  if (!loop->loop_var.defined() || loop->loop_var->kind != ir::ExprKind::kVar) {
    throw Error("loop without a loop variable");
  }
  if (ir::IsFloat(loop->loop_var->dtype)) {
    throw Error(fmt::format("loop variable '{}' has the float type {}", loop->loop_var->name,
                            ir::ToString(loop->loop_var->dtype)));
  }
  if (loop->extent <= 0) return;
  // A prefetch distance applies to the code inside the loop (popped however the loop ends).
  struct PopOnExit {
    std::vector<PrefetchLoop>* loops = nullptr;
    ~PopOnExit() {
      if (loops) loops->pop_back();
    }
  } pop;
  if (!gpu_ && loop->annotations.Has(ir::kPrefetchDistanceKey)) {
    int64_t distance = loop->annotations.GetInt(ir::kPrefetchDistanceKey);
    if (distance <= 0 || distance >= loop->extent) {
      throw Error(fmt::format("loop '{}' of {} iterations has prefetch distance {}",
                              loop->loop_var->name, loop->extent, distance));
    }
    prefetch_loops_.push_back({loop, distance});
    pop.loops = &prefetch_loops_;
  }
  EmitForKind(s);
}

void KernelCodegen::EmitForKind(const Stmt& s) {
  const auto* loop = ir::As<ir::ForNode>(s);
  switch (loop->for_kind) {
    case ir::ForKind::kSerial:
      EmitSerialFor(loop);
      return;
    case ir::ForKind::kUnrolled: {
      // Replicate while the product of enclosing replicated extents stays small; beyond that the
      // loop is left to LLVM's unroller (nested unrolled loops would multiply code size).
      if (unroll_product_ * loop->extent > kMaxUnrollProduct ||
          unroll_product_ * EstimateWork(s, unrolled_values_) > kMaxUnrolledWork) {
        EmitSerialFor(loop);
        return;
      }
      int64_t saved_product = unroll_product_;
      unroll_product_ *= loop->extent;
      for (int64_t v = 0; v < loop->extent; ++v) {
        CgValue counter = Uniform(builder_.getInt64(v), DataType::kInt64);
        VarScope bind(vars_, loop->loop_var.get(), LoopVarValue(loop->loop_var, counter));
        unrolled_values_[loop->loop_var.get()] = ir::IntImm(v, loop->loop_var->dtype);
        Emit(loop->body);
      }
      unrolled_values_.erase(loop->loop_var.get());
      unroll_product_ = saved_product;
      return;
    }
    case ir::ForKind::kVectorized:
      if (!gpu_ && width_ == 0 && loop->extent > 1 && CanVectorize(loop)) {
        EmitVectorized(loop);
      } else {
        EmitSerialFor(loop);
      }
      return;
    case ir::ForKind::kParallel:
      if (!gpu_ && !in_parallel_ && width_ == 0 && loop->extent > 1) {
        EmitParallel(loop);
      } else {
        EmitSerialFor(loop);
      }
      return;
    case ir::ForKind::kBlockIdxX:
    case ir::ForKind::kBlockIdxY:
    case ir::ForKind::kBlockIdxZ:
    case ir::ForKind::kThreadIdxX:
    case ir::ForKind::kThreadIdxY:
    case ir::ForKind::kThreadIdxZ:
      EmitThreadBound(loop);
      return;
  }
}

void KernelCodegen::EmitSerialFor(const ir::ForNode* loop) {
  // A loop every thread of a GPU block runs whose iterations reuse shared memory ends each
  // iteration at a barrier, so that the next one does not overwrite what threads still read.
  bool barrier = gpu_ && thread_loop_depth_ == 0 && SharedAccessesOf(loop->body).SelfConflicts();
  if (!gpu_ && loop->for_kind == ir::ForKind::kSerial) {
    std::optional<kernels::CompactedLoop> compacted = kernels::CompactGuardedLoop(*loop);
    if (llvm::Value* trip = compacted ? CompactedTripCount(loop, *compacted) : nullptr) {
      CompactedDigits digits = StartCompactedDigits(*compacted, builder_.getInt64(0));
      EmitLoop(
          builder_.getInt64(0), trip, compacted->active->name,
          [&](llvm::Value*) { EmitCompactedIteration(loop, *compacted, digits); },
          /*guard_empty=*/true);
      return;
    }
  }
  llvm::Value* trip = GuardedTripCount(loop);
  EmitLoop(
      builder_.getInt64(0), trip ? trip : builder_.getInt64(loop->extent), loop->loop_var->name,
      [&](llvm::Value* counter) {
        VarScope bind(vars_, loop->loop_var.get(),
                      LoopVarValue(loop->loop_var, Uniform(counter, DataType::kInt64)));
        Emit(loop->body);
        if (barrier) EmitBarrier();
      },
      /*guard_empty=*/trip != nullptr);
}

llvm::Value* KernelCodegen::GuardedTripCount(const ir::ForNode* loop) {
  const auto* guard = ir::As<ir::IfThenElseNode>(loop->body);
  if (gpu_ || !guard || guard->else_case || !guard->condition.defined()) return nullptr;
  const ir::Expr& condition = guard->condition;
  if (condition->kind != ir::ExprKind::kLT ||
      condition->operands[0].get() != loop->loop_var.get() ||
      ir::UsesVar(condition->operands[1], loop->loop_var)) {
    return nullptr;
  }
  // The bound is read once, before the loop: it must not load what the loop writes.
  if (ir::LoadsBufferStoredIn(condition->operands[1], loop->body)) return nullptr;
  CgValue bound = Eval(condition->operands[1]);
  if (!bound.uniform() || !bound.value->getType()->isIntegerTy(64)) return nullptr;
  llvm::Value* trip = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, bound.value,
                                                     builder_.getInt64(loop->extent));
  return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, trip, builder_.getInt64(0));
}

llvm::Value* KernelCodegen::CompactedTripCount(const ir::ForNode* loop,
                                               const kernels::CompactedLoop& compacted) {
  CgValue count = Eval(compacted.count);
  if (!count.uniform() || !count.value->getType()->isIntegerTy(64)) return nullptr;
  llvm::Value* trip = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, count.value,
                                                     builder_.getInt64(loop->extent));
  return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, trip, builder_.getInt64(0));
}

KernelCodegen::CompactedDigits KernelCodegen::StartCompactedDigits(
    const kernels::CompactedLoop& compacted, llvm::Value* begin) {
  CompactedDigits state;
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Value* rest = begin;
  for (size_t p = 0; p < compacted.places.size(); ++p) {
    // A uniform i64 (CompactedTripCount checked the count, their product).
    llvm::Value* radix = Eval(compacted.places[p].radix).value;
    // Radices are at least 1 whenever the loop runs; with nothing to run, divide by 1.
    llvm::Value* divisor =
        builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, radix, builder_.getInt64(1));
    state.radices.push_back(radix);
    llvm::AllocaInst* digit = EntryAlloca(i64, compacted.active->name + ".digit");
    bool last = p + 1 == compacted.places.size();
    builder_.CreateStore(last ? rest : builder_.CreateURem(rest, divisor), digit);
    if (!last) rest = builder_.CreateUDiv(rest, divisor);
    state.digits.push_back(digit);
  }
  return state;
}

void KernelCodegen::EmitCompactedIteration(const ir::ForNode* loop,
                                           const kernels::CompactedLoop& compacted,
                                           const CompactedDigits& state) {
  llvm::Type* i64 = builder_.getInt64Ty();
  std::vector<llvm::Value*> digits;
  llvm::Value* original = builder_.getInt64(0);
  for (size_t p = 0; p < state.digits.size(); ++p) {
    digits.push_back(builder_.CreateLoad(i64, state.digits[p]));
    original = builder_.CreateAdd(
        original, builder_.CreateMul(digits.back(), builder_.getInt64(compacted.places[p].stride)));
  }
  {
    VarScope bind(vars_, loop->loop_var.get(),
                  LoopVarValue(loop->loop_var, Uniform(original, DataType::kInt64)));
    Emit(compacted.body);
  }
  // The next active iteration: the lowest digit up by one, carrying into the places above.
  llvm::Value* carry = builder_.getInt64(1);
  for (size_t p = 0; p < digits.size(); ++p) {
    llvm::Value* next = builder_.CreateAdd(digits[p], carry);
    if (p + 1 == digits.size()) {
      builder_.CreateStore(next, state.digits[p]);
      break;
    }
    llvm::Value* wraps = builder_.CreateICmpEQ(next, state.radices[p]);
    builder_.CreateStore(builder_.CreateSelect(wraps, builder_.getInt64(0), next), state.digits[p]);
    carry = builder_.CreateZExt(wraps, i64);
  }
}

llvm::Value* KernelCodegen::GuardedIterationCount(const ir::ForNode* loop) {
  const auto* guard = ir::As<ir::IfThenElseNode>(loop->body);
  if (gpu_ || !guard || guard->else_case || !guard->condition.defined()) return nullptr;
  // Counting costs an evaluation of the condition per iteration: a few hundred nanoseconds at
  // most, below what a fork and join costs.
  constexpr int64_t kMaxCountedIterations = 1024;
  if (loop->extent > kMaxCountedIterations) return nullptr;
  if (!ir::UsesVar(guard->condition, loop->loop_var)) return nullptr;
  if (ir::LoadsBufferStoredIn(guard->condition, loop->body)) return nullptr;
  llvm::Value* count = EntryAlloca(builder_.getInt64Ty(), "guarded.count");
  builder_.CreateStore(builder_.getInt64(0), count);
  bool uniform = true;
  EmitLoop(builder_.getInt64(0), builder_.getInt64(loop->extent), loop->loop_var->name + ".count",
           [&](llvm::Value* counter) {
             VarScope bind(vars_, loop->loop_var.get(),
                           LoopVarValue(loop->loop_var, Uniform(counter, DataType::kInt64)));
             CgValue taken = Eval(guard->condition);
             if (!taken.uniform() || !taken.value->getType()->isIntegerTy(1)) {
               uniform = false;
               return;
             }
             llvm::Value* add = builder_.CreateZExt(taken.value, builder_.getInt64Ty());
             builder_.CreateStore(
                 builder_.CreateAdd(builder_.CreateLoad(builder_.getInt64Ty(), count), add), count);
           });
  if (!uniform) return nullptr;
  return builder_.CreateLoad(builder_.getInt64Ty(), count);
}

void KernelCodegen::EmitLoop(llvm::Value* begin, llvm::Value* end, const std::string& name,
                             const std::function<void(llvm::Value*)>& body, bool guard_empty) {
  llvm::BasicBlock* preheader = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(context_, name + ".loop", function_);
  PendingBlock pending_exit(context_, name + ".exit", function_);
  llvm::BasicBlock* exit = pending_exit.get();
  if (guard_empty) {
    builder_.CreateCondBr(builder_.CreateICmpSLT(begin, end), header, exit);
  } else {
    builder_.CreateBr(header);
  }
  builder_.SetInsertPoint(header);
  llvm::PHINode* counter = builder_.CreatePHI(builder_.getInt64Ty(), 2, name);
  counter->addIncoming(begin, preheader);
  body(counter);
  llvm::Value* next = builder_.CreateAdd(counter, builder_.getInt64(1), name + ".next",
                                         /*HasNUW=*/true, /*HasNSW=*/true);
  llvm::BasicBlock* latch = builder_.GetInsertBlock();
  builder_.CreateCondBr(builder_.CreateICmpSLT(next, end), header, exit);
  counter->addIncoming(next, latch);
  pending_exit.Insert();
  builder_.SetInsertPoint(exit);
}

void KernelCodegen::EmitConditional(const CgValue& condition,
                                    const std::function<void()>& then_case,
                                    const std::function<void()>& else_case) {
  if (condition.uniform()) {
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(condition.value)) {
      if (c->isOne()) {
        then_case();
      } else if (else_case) {
        else_case();
      }
      return;
    }
    auto* then_block = llvm::BasicBlock::Create(context_, "then", function_);
    std::optional<PendingBlock> pending_else;
    if (else_case) pending_else.emplace(context_, "else", function_);
    llvm::BasicBlock* else_block = pending_else ? pending_else->get() : nullptr;
    PendingBlock pending_merge(context_, "endif", function_);
    llvm::BasicBlock* merge = pending_merge.get();
    builder_.CreateCondBr(condition.value, then_block, else_block ? else_block : merge);
    builder_.SetInsertPoint(then_block);
    then_case();
    builder_.CreateBr(merge);
    if (else_block) {
      pending_else->Insert();
      builder_.SetInsertPoint(else_block);
      else_case();
      builder_.CreateBr(merge);
    }
    pending_merge.Insert();
    builder_.SetInsertPoint(merge);
    return;
  }
  // Lanes may disagree: run both sides under masks. Without an else side and outside any mask,
  // the lanes all holding (every full tile of a loop guarded at a tail, as the guards of
  // kernels/dynamic_extent.h) first takes the unmasked code.
  llvm::Value* lanes = Materialize(condition);
  if (!else_case && mask_ == nullptr && !gpu_) {
    auto* full = llvm::BasicBlock::Create(context_, "all_lanes", function_);
    PendingBlock pending_partial(context_, "some_lanes", function_);
    PendingBlock pending_merge(context_, "lanes_end", function_);
    builder_.CreateCondBr(builder_.CreateAndReduce(lanes), full, pending_partial.get());
    builder_.SetInsertPoint(full);
    then_case();
    builder_.CreateBr(pending_merge.get());
    pending_partial.Insert();
    builder_.SetInsertPoint(pending_partial.get());
    mask_ = lanes;
    then_case();
    mask_ = nullptr;
    builder_.CreateBr(pending_merge.get());
    pending_merge.Insert();
    builder_.SetInsertPoint(pending_merge.get());
    return;
  }
  llvm::Value* saved = mask_;
  mask_ = MaskAnd(lanes);
  then_case();
  mask_ = saved;
  if (else_case) {
    mask_ = MaskAnd(builder_.CreateNot(lanes));
    else_case();
    mask_ = saved;
  }
}

void KernelCodegen::EmitStore(const ir::StoreNode* store) {
  if (!store->buffer) throw Error("store to a null buffer");
  if (!store->value.defined()) {
    throw Error(fmt::format("store to buffer '{}' without a value", store->buffer->name));
  }
  for (const Expr& index : store->indices) {
    if (!index.defined()) {
      throw Error(fmt::format("undefined index of buffer '{}'", store->buffer->name));
    }
  }
  CgValue value = Eval(store->value);
  CgValue offset = FlatOffset(store->buffer, store->indices);
  StoreElements(store->buffer, offset, value);
}

bool KernelCodegen::AllocateBuffer(const ir::Buffer& buffer, llvm::Value** pointer) {
  int64_t count = ir::NumElements(buffer->shape);
  int64_t bytes = count * ir::SizeOf(buffer->dtype);
  if (buffer->scope == "shared" && gpu_) {
    *pointer = AllocateShared(buffer, count);
    return false;
  }
  // On a CPU a thread block's "shared" memory is ordinary memory (the kernel's loops are serial).
  if (buffer->scope != "global" && buffer->scope != "local" && buffer->scope != "shared") {
    throw Error(
        fmt::format("buffer '{}' has the unsupported scope '{}'", buffer->name, buffer->scope));
  }
  bool heap = buffer->scope != "local" || bytes > kMaxStackBufferBytes;
  if (heap && gpu_) {
    throw Error(fmt::format(
        "buffer '{}' ({} bytes, scope '{}') is allocated inside a GPU kernel, where only "
        "\"local\" buffers up to {} bytes can be",
        buffer->name, bytes, buffer->scope, kMaxStackBufferBytes));
  }
  if (!heap) {
    *pointer = EntryAlloca(llvm::ArrayType::get(MemoryType(buffer->dtype),
                                                static_cast<uint64_t>(std::max<int64_t>(count, 1))),
                           buffer->name);
  } else {
    llvm::Type* i64 = builder_.getInt64Ty();
    llvm::FunctionCallee aligned_alloc = module_.getOrInsertFunction(
        "aligned_alloc", llvm::PointerType::getUnqual(context_), i64, i64);
    int64_t size = (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
    *pointer = builder_.CreateCall(aligned_alloc, {builder_.getInt64(64), builder_.getInt64(size)},
                                   buffer->name);
  }
  // Block buffers start zero-filled, as in the interpreter.
  if (bytes > 0) {
    builder_.CreateMemSet(*pointer, builder_.getInt8(0), static_cast<uint64_t>(bytes),
                          llvm::MaybeAlign(64));
  }
  return heap;
}

void KernelCodegen::FreeBuffer(llvm::Value* pointer) {
  llvm::FunctionCallee free = module_.getOrInsertFunction("free", builder_.getVoidTy(),
                                                          llvm::PointerType::getUnqual(context_));
  builder_.CreateCall(free, {pointer});
}

void KernelCodegen::EmitBlock(const ir::BlockRealizeNode* realize) {
  const ir::Block& block = realize->block;
  if (!block) throw Error("block realize without a block");
  if (realize->iter_values.size() != block->iter_vars.size()) {
    throw Error(fmt::format("block '{}' has {} iterators but {} values are bound", block->name,
                            block->iter_vars.size(), realize->iter_values.size()));
  }
  std::vector<CgValue> values;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const ir::IterVar& iv = block->iter_vars[k];
    if (!iv.var.defined() || iv.var->kind != ir::ExprKind::kVar) {
      throw Error(fmt::format("block '{}' has an iterator that is not a variable", block->name));
    }
    CgValue value = Eval(realize->iter_values[k]);
    if (ir::IsFloat(value.dtype) != ir::IsFloat(iv.var->dtype)) {
      throw Error(fmt::format("block '{}': iterator '{}' of {} is bound to a {} value", block->name,
                              iv.var->name, ir::ToString(iv.var->dtype),
                              ir::ToString(value.dtype)));
    }
    values.push_back(Cast(value, iv.var->dtype));
  }
  CgValue predicate = realize->predicate.defined() ? ToBool(Eval(realize->predicate))
                                                   : Uniform(builder_.getTrue(), DataType::kBool);
  if (!block->alloc_buffers.empty() && width_ > 0) {
    throw Error(fmt::format("block '{}' allocates buffers inside vector code", block->name));
  }
  EmitConditional(
      predicate,
      [&] {
        std::vector<std::unique_ptr<VarScope>> bindings;
        std::vector<std::unique_ptr<ScopedEntry<ir::VarMap>>> symbolic;
        for (size_t k = 0; k < values.size(); ++k) {
          const ir::Var& var = block->iter_vars[k].var;
          bindings.push_back(std::make_unique<VarScope>(vars_, var.get(), values[k]));
          if (var->dtype == DataType::kInt64 &&
              realize->iter_values[k]->dtype == DataType::kInt64) {
            symbolic.push_back(std::make_unique<ScopedEntry<ir::VarMap>>(
                iterator_bindings_, var.get(), realize->iter_values[k]));
          }
        }
        std::vector<std::unique_ptr<BufferScope>> allocations;
        std::vector<llvm::Value*> heap;
        for (const ir::Buffer& buffer : block->alloc_buffers) {
          if (!buffer) throw Error(fmt::format("block '{}' allocates a null buffer", block->name));
          llvm::Value* pointer = nullptr;
          if (AllocateBuffer(buffer, &pointer)) heap.push_back(pointer);
          allocations.push_back(std::make_unique<BufferScope>(buffers_, buffer.get(), pointer));
        }
        if (block->init) {
          // Init runs when every reduction iterator is 0.
          CgValue first = Uniform(builder_.getTrue(), DataType::kBool);
          for (size_t k = 0; k < values.size(); ++k) {
            if (block->iter_vars[k].kind != ir::IterKind::kReduction) continue;
            CgValue zero = Cast(Uniform(builder_.getInt64(0), DataType::kInt64), values[k].dtype);
            first = Binary(ir::ExprKind::kAnd, first, Binary(ir::ExprKind::kEQ, values[k], zero));
          }
          EmitConditional(
              first, [&] { Emit(block->init); }, nullptr);
        }
        EmitPrefetches(block);
        Emit(block->body);
        for (llvm::Value* pointer : heap) FreeBuffer(pointer);
      },
      nullptr);
}

void KernelCodegen::EmitParallel(const ir::ForNode* loop) {
  std::optional<kernels::CompactedLoop> compacted = kernels::CompactGuardedLoop(*loop);
  llvm::Value* trip = compacted ? CompactedTripCount(loop, *compacted) : nullptr;
  if (!trip) {
    compacted.reset();
    trip = GuardedTripCount(loop);
  }
  // Capture what the body uses from the enclosing scope. A "local" buffer used only inside the
  // loop becomes private to each thread instead.
  // A compacted loop's body function also evaluates the radices (in its count).
  Uses uses = CollectUses(
      compacted ? ir::MakeIfThenElse(compacted->count > ir::Expr(int64_t{0}), compacted->body)
                : loop->body);
  std::unordered_map<const ir::BufferNode*, int> inside = CountAccesses(loop->body);
  std::vector<std::pair<const ir::ExprNode*, CgValue>> captured_vars;
  for (const ir::ExprNode* var : uses.vars) {
    auto it = vars_.find(var);
    if (it != vars_.end()) captured_vars.emplace_back(var, it->second);
  }
  std::vector<std::pair<ir::Buffer, llvm::Value*>> captured_buffers;
  std::vector<ir::Buffer> private_buffers;
  for (const ir::Buffer& buffer : uses.buffers) {
    auto it = buffers_.find(buffer.get());
    if (it == buffers_.end()) continue;
    if (buffer->scope == "local" && inside[buffer.get()] == access_counts_[buffer.get()]) {
      private_buffers.push_back(buffer);
    } else {
      captured_buffers.emplace_back(buffer, it->second);
    }
  }

  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::PointerType* ptr = llvm::PointerType::getUnqual(context_);
  std::vector<llvm::Type*> fields;
  for (const auto& [var, value] : captured_vars) fields.push_back(value.value->getType());
  for (size_t k = 0; k < captured_buffers.size(); ++k) fields.push_back(ptr);
  auto* closure_type = llvm::StructType::get(context_, fields);
  llvm::Value* closure = EntryAlloca(closure_type, "closure");
  std::vector<llvm::Value*> captured_values;
  for (const auto& [var, value] : captured_vars) captured_values.push_back(value.value);
  for (const auto& [buffer, pointer] : captured_buffers) captured_values.push_back(pointer);
  for (size_t k = 0; k < captured_values.size(); ++k) {
    builder_.CreateStore(captured_values[k],
                         builder_.CreateStructGEP(closure_type, closure, static_cast<unsigned>(k)));
  }

  std::string name = fmt::format("__tandem.{}.parallel{}", kernel_.name, parallel_count_++);
  // The body takes the captures as arguments so that buffers can be marked noalias; it is
  // inlined into the entry the thread pool calls.
  std::vector<llvm::Type*> body_params = {i64, i64};
  body_params.insert(body_params.end(), fields.begin(), fields.end());
  llvm::Function* body = CreateFunction(
      name + ".body", llvm::FunctionType::get(builder_.getVoidTy(), body_params, false), true);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t k = 0; k < captured_buffers.size(); ++k) {
    unsigned arg = static_cast<unsigned>(2 + captured_vars.size() + k);
    if (!may_alias_.count(captured_buffers[k].first.get())) {
      body->addParamAttr(arg, llvm::Attribute::NoAlias);
    }
    body->addParamAttr(arg, llvm::Attribute::NoCapture);
    body->addParamAttr(arg, llvm::Attribute::getWithAlignment(context_, llvm::Align(64)));
  }
  llvm::Function* entry = CreateFunction(
      name, llvm::FunctionType::get(builder_.getVoidTy(), {i64, i64, ptr}, false), true);
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context_, "entry", entry));
    std::vector<llvm::Value*> args = {entry->getArg(0), entry->getArg(1)};
    for (size_t k = 0; k < fields.size(); ++k) {
      llvm::Value* field =
          b.CreateStructGEP(closure_type, entry->getArg(2), static_cast<unsigned>(k));
      args.push_back(b.CreateLoad(fields[k], field));
    }
    b.CreateCall(body, args);
    b.CreateRetVoid();
  }

  // Emit the body function with a scope of its own.
  llvm::IRBuilderBase::InsertPoint saved_point = builder_.saveIP();
  llvm::Function* saved_function = function_;
  llvm::BasicBlock* saved_entry = entry_block_;
  auto saved_vars = std::move(vars_);
  auto saved_buffers = std::move(buffers_);
  vars_.clear();
  buffers_.clear();
  function_ = body;
  entry_block_ = llvm::BasicBlock::Create(context_, "entry", body);
  auto* start = llvm::BasicBlock::Create(context_, "start", body);
  llvm::BranchInst::Create(start, entry_block_);
  builder_.SetInsertPoint(start);
  unsigned arg = 2;
  for (const auto& [var, value] : captured_vars) {
    vars_[var] = Uniform(body->getArg(arg++), value.dtype);
  }
  for (const auto& [buffer, pointer] : captured_buffers) {
    buffers_[buffer.get()] = body->getArg(arg++);
  }
  std::vector<llvm::Value*> heap;
  for (const ir::Buffer& buffer : private_buffers) {
    llvm::Value* pointer = nullptr;
    if (AllocateBuffer(buffer, &pointer)) heap.push_back(pointer);
    buffers_[buffer.get()] = pointer;
  }
  in_parallel_ = true;
  std::optional<CompactedDigits> digits;
  if (compacted) digits = StartCompactedDigits(*compacted, body->getArg(0));
  EmitLoop(
      body->getArg(0), body->getArg(1), loop->loop_var->name,
      [&](llvm::Value* counter) {
        if (compacted) {
          EmitCompactedIteration(loop, *compacted, *digits);
          return;
        }
        VarScope bind(vars_, loop->loop_var.get(),
                      LoopVarValue(loop->loop_var, Uniform(counter, DataType::kInt64)));
        Emit(loop->body);
      },
      /*guard_empty=*/true);
  for (llvm::Value* pointer : heap) FreeBuffer(pointer);
  builder_.CreateRetVoid();
  in_parallel_ = false;
  function_ = saved_function;
  entry_block_ = saved_entry;
  vars_ = std::move(saved_vars);
  buffers_ = std::move(saved_buffers);
  builder_.restoreIP(saved_point);

  llvm::FunctionCallee parallel_for =
      module_.getOrInsertFunction("tandem_parallel_for", builder_.getVoidTy(), i64, ptr, ptr);
  llvm::Value* iterations = trip ? trip : builder_.getInt64(loop->extent);
  llvm::Value* active = trip ? trip : GuardedIterationCount(loop);
  IterationWork work = active ? WorkOfIteration(loop->body) : IterationWork{};
  if (work.stores == 0) {
    builder_.CreateCall(parallel_for, {iterations, entry, closure});
    return;
  }
  // A guarded loop: on this thread when the work of its iterations that pass the guard is
  // small.
  llvm::Value* serial = builder_.CreateAnd(
      builder_.CreateICmpSLT(builder_.CreateMul(active, builder_.getInt64(work.results)),
                             builder_.getInt64(kParallelMinResults)),
      builder_.CreateICmpSLT(builder_.CreateMul(active, builder_.getInt64(work.stores)),
                             builder_.getInt64(kParallelMinStores)));
  auto* on_this_thread = llvm::BasicBlock::Create(context_, "serial", function_);
  auto* on_threads = llvm::BasicBlock::Create(context_, "parallel", function_);
  auto* done = llvm::BasicBlock::Create(context_, "parallel.done", function_);
  builder_.CreateCondBr(serial, on_this_thread, on_threads);
  builder_.SetInsertPoint(on_this_thread);
  builder_.CreateCall(entry, {builder_.getInt64(0), iterations, closure});
  builder_.CreateBr(done);
  builder_.SetInsertPoint(on_threads);
  builder_.CreateCall(parallel_for, {iterations, entry, closure});
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
}

}  // namespace tandem::backends::codegen
