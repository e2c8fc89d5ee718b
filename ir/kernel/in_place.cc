#include "ir/kernel/in_place.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "ir/kernel/canonical_form.h"
#include "ir/kernel/functor.h"

namespace tandem::ir {

namespace {

// What the kernel does with one buffer: its stores (each with its innermost block) and its
// loads (each with the store whose value holds it, or null when it is elsewhere: an index, a
// condition, a block binding).
struct BufferUses {
  struct StoreSite {
    const StoreNode* store;
    const BlockNode* block;
    // Whether each element is stored once: no enclosing block reduces or has an init, every
    // loop of extent above 1 around a block feeds its bindings, and every loop or iterator
    // since the innermost block feeds the store's indices (one that does not repeats it).
    bool once;
  };
  struct LoadSite {
    const ExprNode* load;
    const StoreNode* in_value_of;
  };
  std::vector<StoreSite> stores;
  std::vector<LoadSite> loads;
};

class UseCollector {
 public:
  std::unordered_map<const BufferNode*, BufferUses> uses;

  void Walk(const Stmt& s, const BlockNode* block, bool once) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto* loop = As<ForNode>(s);
        if (loop->extent > 1) loops_.push_back(loop->loop_var.get());
        Walk(loop->body, block, once);
        if (loop->extent > 1) loops_.pop_back();
        break;
      }
      case StmtKind::kSeq:
        for (const Stmt& child : As<SeqNode>(s)->stmts) Walk(child, block, once);
        break;
      case StmtKind::kStore: {
        const auto* store = As<StoreNode>(s);
        std::unordered_set<const ExprNode*> indexed;
        for (const Expr& index : store->indices) {
          Loads(index, nullptr);
          CollectVars(index, indexed);
        }
        Loads(store->value, store);
        // A loop since the innermost block (or one of its iterators) that the indices do not
        // use repeats the store.
        bool store_once = once && std::all_of(loops_.begin(), loops_.end(), [&](const ExprNode* v) {
                            return indexed.count(v) > 0;
                          });
        uses[store->buffer.get()].stores.push_back({store, block, store_once});
        break;
      }
      case StmtKind::kIfThenElse: {
        const auto* branch = As<IfThenElseNode>(s);
        Loads(branch->condition, nullptr);
        Walk(branch->then_case, block, once);
        Walk(branch->else_case, block, once);
        break;
      }
      case StmtKind::kBlockRealize: {
        const auto* realize = As<BlockRealizeNode>(s);
        const BlockNode* inner = realize->block.get();
        std::unordered_set<const ExprNode*> bound;
        for (const Expr& value : realize->iter_values) {
          Loads(value, nullptr);
          CollectVars(value, bound);
        }
        Loads(realize->predicate, nullptr);
        bool inner_once =
            once && !inner->init &&
            std::all_of(inner->iter_vars.begin(), inner->iter_vars.end(),
                        [](const IterVar& v) { return v.kind == IterKind::kSpatial; }) &&
            std::all_of(loops_.begin(), loops_.end(),
                        [&](const ExprNode* var) { return bound.count(var) > 0; });
        // Inside the block, a nested block must bind the block's iterators and the loops between
        // them (the loops outside are accounted for by this block's bindings).
        std::vector<const ExprNode*> outer = std::move(loops_);
        loops_.clear();
        for (const IterVar& v : inner->iter_vars) {
          if (v.extent > 1) loops_.push_back(v.var.get());
        }
        Walk(inner->init, inner, false);
        Walk(inner->body, inner, inner_once);
        loops_ = std::move(outer);
        break;
      }
    }
  }

 private:
  // Loops of extent above 1 (and iterators) since the innermost enclosing block.
  std::vector<const ExprNode*> loops_;

  static void CollectVars(const Expr& e, std::unordered_set<const ExprNode*>& vars) {
    VisitExprTree(e, [&](const Expr& x) {
      if (x->kind == ExprKind::kVar) vars.insert(x.get());
    });
  }

  void Loads(const Expr& e, const StoreNode* in_value_of) {
    if (!e.defined()) return;
    VisitExprTree(e, [&](const Expr& x) {
      if (x->kind == ExprKind::kLoad) uses[x->buffer.get()].loads.push_back({x.get(), in_value_of});
    });
  }
};

bool SameIndices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!canonical::DeepEqual(a[k], b[k])) return false;
  }
  return true;
}

}  // namespace

// Steps:
//   1. collect every store and load of every buffer, with its block and enclosing store;
//   2. for each output, find its single store in a block with spatial iterators only and no
//      init, and check that nothing reads the output;
//   3. pair it with the first unpaired input of its dtype and shape whose every read is in that
//      store's value at the store's indices.
std::vector<InPlacePair> InPlacePairs(const KernelFunction& kernel) {
  std::vector<InPlacePair> pairs;
  int num_params = static_cast<int>(kernel.params.size());
  int first_output = num_params - std::clamp(kernel.num_outputs, 0, num_params);
  UseCollector collector;
  collector.Walk(kernel.body, nullptr, true);
  std::vector<bool> paired(kernel.params.size(), false);
  for (int o = first_output; o < num_params; ++o) {
    const BufferNode* output = kernel.params[static_cast<size_t>(o)].get();
    const BufferUses& out = collector.uses[output];
    if (out.stores.size() != 1 || !out.loads.empty()) continue;
    const BufferUses::StoreSite& site = out.stores[0];
    if (!site.block || !site.once) continue;
    for (int i = 0; i < first_output; ++i) {
      const BufferNode* input = kernel.params[static_cast<size_t>(i)].get();
      if (paired[static_cast<size_t>(i)] || input == output || input->dtype != output->dtype ||
          input->shape != output->shape) {
        continue;
      }
      const BufferUses& in = collector.uses[input];
      if (!in.stores.empty() || in.loads.empty()) continue;
      bool only_at_the_store =
          std::all_of(in.loads.begin(), in.loads.end(), [&](const BufferUses::LoadSite& load) {
            return load.in_value_of == site.store &&
                   SameIndices(load.load->operands, site.store->indices);
          });
      if (!only_at_the_store) continue;
      paired[static_cast<size_t>(i)] = true;
      pairs.push_back({i, o});
      break;
    }
  }
  return pairs;
}

}  // namespace tandem::ir
