// The schedule fuzzer's view of the program it transforms (schedule_fuzzer.h): its random
// source, and queries of the schedule's current function from which the fuzzer draws the
// arguments of primitives (blocks, their loops and how the loops nest).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/kernel/functor.h"
#include "kernels/schedule/schedule.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::testing {

class FuzzProgram {
 public:
  FuzzProgram(Schedule& schedule, uint64_t seed)
      : s_(schedule), random_(seed * 0x9e3779b97f4a7c15ULL + 1) {}

 protected:
  struct LoopInfo {
    LoopRV rv;
    const ir::ForNode* node = nullptr;
    bool reduction = false;         // bound to a reduction iterator of the block
    bool chains_into_next = false;  // its body is exactly the next loop
  };

  // --- randomness ---
  int64_t Uniform(int64_t n) { return random_.Uniform(n); }
  bool Chance(double p) { return random_.UniformReal() < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Uniform(static_cast<int64_t>(v.size())))];
  }
  template <typename Container>
  void Shuffle(Container& v) {
    for (size_t i = v.size(); i > 1; --i) {
      std::swap(v[i - 1], v[static_cast<size_t>(Uniform(static_cast<int64_t>(i)))]);
    }
  }

  // --- the program ---
  const ir::BlockRealizeNode* Realize(const std::string& name) const {
    auto path = FindBlock(s_.function(), name);
    return path ? ir::As<ir::BlockRealizeNode>(path->target) : nullptr;
  }
  static bool IsReduction(const ir::BlockRealizeNode* realize) {
    for (const ir::IterVar& iv : realize->block->iter_vars) {
      if (iv.kind == ir::IterKind::kReduction) return true;
    }
    return false;
  }
  std::vector<std::string> BlockNames(
      const std::function<bool(const ir::BlockRealizeNode*)>& keep = {}) const {
    std::vector<std::string> out;
    for (const std::string& name : s_.BlockNames()) {
      if (!keep || keep(Realize(name))) out.push_back(name);
    }
    return out;
  }
  BlockRV Block(const std::string& name) {
    auto it = blocks_.find(name);
    if (it != blocks_.end()) return it->second;
    BlockRV rv = s_.GetBlock(name);
    blocks_.emplace(name, rv);
    return rv;
  }
  // Keeps the handle of a block a primitive created.
  void Remember(const BlockRV& rv) { blocks_[s_.BlockName(rv)] = rv; }
  std::vector<LoopInfo> Loops(const std::string& name) {
    std::vector<LoopRV> rvs = s_.GetLoops(Block(name));
    const ir::BlockRealizeNode* realize = Realize(name);
    std::vector<LoopInfo> out;
    for (const LoopRV& rv : rvs) {
      LoopInfo info;
      info.rv = rv;
      info.node = ir::As<ir::ForNode>(GetLoopPath(s_.function(), s_.LoopVar(rv)).target);
      for (size_t k = 0; k < realize->iter_values.size(); ++k) {
        if (realize->block->iter_vars[k].kind == ir::IterKind::kReduction &&
            ir::UsesVar(realize->iter_values[k], info.node->loop_var)) {
          info.reduction = true;
        }
      }
      out.push_back(info);
    }
    for (size_t i = 0; i + 1 < out.size(); ++i) {
      const auto* child = ir::As<ir::ForNode>(out[i].node->body);
      out[i].chains_into_next = child == out[i + 1].node;
    }
    return out;
  }
  // Maximal runs [begin, end) of loops each of whose bodies is the next loop.
  static std::vector<std::pair<size_t, size_t>> Chains(const std::vector<LoopInfo>& loops) {
    std::vector<std::pair<size_t, size_t>> out;
    size_t begin = 0;
    for (size_t i = 0; i < loops.size(); ++i) {
      if (!loops[i].chains_into_next) {
        if (i > begin) out.emplace_back(begin, i + 1);
        begin = i + 1;
      }
    }
    return out;
  }
  std::vector<LoopRV> RandomSubsequence(const std::vector<LoopInfo>& loops, size_t begin,
                                        size_t end) {
    std::vector<LoopRV> picked;
    for (size_t i = begin; i < end; ++i) {
      if (Chance(0.6)) picked.push_back(loops[i].rv);
    }
    if (picked.size() < 2) {
      picked = {loops[begin].rv, loops[end - 1].rv};
    }
    return picked;
  }

  // A random block and a random one of its loops; false when there is none.
  bool RandomLoop(std::string* name, LoopInfo* loop,
                  const std::function<bool(const ir::BlockRealizeNode*)>& keep = {}) {
    std::vector<std::string> names = BlockNames(keep);
    if (names.empty()) return false;
    *name = Pick(names);
    std::vector<LoopInfo> loops = Loops(*name);
    if (loops.empty()) return false;
    *loop = Pick(loops);
    return true;
  }

  Schedule& s_;

 private:
  RandomState random_;
  std::map<std::string, BlockRV> blocks_;
};

}  // namespace tandem::kernels::testing
