// A random schedule generator for fuzz tests of the schedule primitives.
//
// ScheduleFuzzer applies a random program of primitives to a Schedule: tiling splits (sampled
// perfect tiles and literal, possibly non-dividing, factors), reorders and fuses along
// perfectly nested chains, loop kinds and annotations, cache_read/cache_write with
// compute_at/reverse_compute_at, compute_at at sampled locations, compute_inline and
// reverse_compute_inline, rfactor, decompose_reduction and transform_layout. Arguments are drawn
// from the current program, so many applications are legal, and many are not: a primitive that
// throws ir::Error is counted as rejected, and the fuzzer checks that it left the function and
// the trace unchanged. Every other exception propagates.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/schedule/schedule.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::testing {

struct KindCounts {
  int applied = 0;
  int rejected = 0;
};

// Totals over a fuzz run. Transformations count in `applied`/`rejected`; handle and sampling
// instructions only in `by_kind`.
struct FuzzCounts {
  int schedules = 0;
  int applied = 0;
  int rejected = 0;
  std::map<std::string, KindCounts> by_kind;
  // Rejection messages with names and numbers blanked out, with how often each occurred.
  std::map<std::string, int> reasons;
};

// The message with quoted names replaced by '_' and digits by '#', so that rejections of the
// same kind aggregate.
inline std::string RejectionPattern(const std::string& message) {
  std::string out;
  bool quoted = false;
  for (char c : message) {
    if (c == '\'') {
      quoted = !quoted;
      out += quoted ? "'_" : "'";
    } else if (!quoted) {
      out += std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
    }
  }
  return out;
}

class ScheduleFuzzer {
 public:
  // `after_step` (optional) runs after every successful transformation with its kind and the
  // function before it.
  using StepHook = std::function<void(const std::string& kind, const ir::KernelFunction& before)>;

  ScheduleFuzzer(Schedule& schedule, uint64_t seed, FuzzCounts& counts, StepHook after_step = {})
      : s_(schedule),
        random_(seed * 0x9e3779b97f4a7c15ULL + 1),
        counts_(counts),
        after_step_(std::move(after_step)) {}

  void Run(int steps) {
    for (int i = 0; i < steps; ++i) Step();
  }

  // The transformations applied so far, in order.
  const std::vector<std::string>& applied() const { return applied_; }

 private:
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

  // Runs one primitive; returns false when it was rejected with an ir::Error.
  template <typename F>
  bool Try(const std::string& kind, F&& apply, bool transformation = true) {
    ir::KernelFunction before = s_.function();
    size_t trace_size = s_.trace().size();
    try {
      apply();
    } catch (const ir::Error& e) {
      ++counts_.by_kind[kind].rejected;
      if (transformation) {
        ++counts_.rejected;
        ++counts_.reasons[kind + ": " + RejectionPattern(e.message())];
      }
      EXPECT_TRUE(ir::StructuralEqual(before, s_.function()))
          << kind << " was rejected but changed the function: " << e.what();
      EXPECT_EQ(trace_size, s_.trace().size())
          << kind << " was rejected but changed the trace: " << e.what();
      return false;
    }
    ++counts_.by_kind[kind].applied;
    if (transformation) {
      ++counts_.applied;
      applied_.push_back(kind);
      if (after_step_) after_step_(kind, before);
    }
    return true;
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
  template <typename Container>
  void Shuffle(Container& v) {
    for (size_t i = v.size(); i > 1; --i) {
      std::swap(v[i - 1], v[static_cast<size_t>(Uniform(static_cast<int64_t>(i)))]);
    }
  }

  // --- actions ---
  void Step() {
    // Weighted choice among the actions.
    static const std::vector<std::pair<int, void (ScheduleFuzzer::*)()>> kActions = {
        {4, &ScheduleFuzzer::TileSampled},
        {3, &ScheduleFuzzer::SplitLiteral},
        {3, &ScheduleFuzzer::ReorderChain},
        {2, &ScheduleFuzzer::FuseChain},
        {1, &ScheduleFuzzer::ParallelOuter},
        {1, &ScheduleFuzzer::VectorizeInner},
        {1, &ScheduleFuzzer::UnrollAny},
        {1, &ScheduleFuzzer::AnnotateAny},
        {3, &ScheduleFuzzer::CacheWriteAndReverseComputeAt},
        {3, &ScheduleFuzzer::CacheReadAndComputeAt},
        {3, &ScheduleFuzzer::ComputeAtSampled},
        {1, &ScheduleFuzzer::InlineProducer},
        {1, &ScheduleFuzzer::InlineConsumer},
        {3, &ScheduleFuzzer::RFactorReduction},
        {2, &ScheduleFuzzer::DecomposeAnyReduction},
        {2, &ScheduleFuzzer::TransformCopyLayout},
        {2, &ScheduleFuzzer::MoveAnyBlock},
    };
    int total = 0;
    for (const auto& a : kActions) total += a.first;
    int64_t x = Uniform(total);
    for (const auto& [weight, action] : kActions) {
      if (x < weight) {
        (this->*action)();
        return;
      }
      x -= weight;
    }
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

  void TileSampled() {
    std::string name;
    LoopInfo loop;
    if (!RandomLoop(&name, &loop)) return;
    int n = 2 + static_cast<int>(Uniform(3));
    int64_t max_innermost = Pick(std::vector<int64_t>{0, 4, 8, 16});
    std::vector<ExprRV> tiles;
    if (!Try(
            "sample_perfect_tile", [&] { tiles = s_.SamplePerfectTile(loop.rv, n, max_innermost); },
            false)) {
      return;
    }
    std::vector<Factor> factors(tiles.begin(), tiles.end());
    Try("split", [&] { s_.Split(loop.rv, factors); });
  }

  void SplitLiteral() {
    std::string name;
    LoopInfo loop;
    if (!RandomLoop(&name, &loop)) return;
    int64_t extent = loop.node->extent;
    int64_t f = 2 + Uniform(6);
    std::vector<Factor> factors;
    switch (Uniform(5)) {
      case 0:
        factors = {-1, f};
        break;
      case 1:
        factors = {f, -1};
        break;
      case 2:
        factors = {(extent + f - 1) / f + Uniform(2), f};
        break;
      case 3:
        factors = {-1, 2 + Uniform(3), 2 + Uniform(3)};
        break;
      default:
        factors = {1, std::max<int64_t>(1, extent - 1)};
        break;  // too small when > 1
    }
    Try("split", [&] { s_.Split(loop.rv, factors); });
  }

  void ReorderChain() {
    std::vector<std::string> names = BlockNames();
    if (names.empty()) return;
    std::vector<LoopInfo> loops = Loops(Pick(names));
    if (loops.size() < 2) return;
    std::vector<LoopRV> order;
    auto chains = Chains(loops);
    if (!chains.empty() && Chance(0.85)) {
      auto [begin, end] = Pick(chains);
      order = RandomSubsequence(loops, begin, end);
    } else {
      order = RandomSubsequence(loops, 0, loops.size());
    }
    Shuffle(order);
    Try("reorder", [&] { s_.Reorder(order); });
  }

  void FuseChain() {
    std::vector<std::string> names = BlockNames();
    if (names.empty()) return;
    std::vector<LoopInfo> loops = Loops(Pick(names));
    if (loops.size() < 2) return;
    size_t begin = 0, end = loops.size();
    auto chains = Chains(loops);
    if (!chains.empty() && Chance(0.85)) std::tie(begin, end) = Pick(chains);
    size_t length = std::min<size_t>(end - begin, 2 + static_cast<size_t>(Uniform(2)));
    size_t first =
        begin + static_cast<size_t>(Uniform(static_cast<int64_t>(end - begin - length + 1)));
    std::vector<LoopRV> fused;
    for (size_t i = first; i < first + length; ++i) fused.push_back(loops[i].rv);
    Try("fuse", [&] { s_.Fuse(fused); });
  }

  void ParallelOuter() {
    std::vector<std::string> names = BlockNames();
    if (names.empty()) return;
    std::vector<LoopInfo> loops = Loops(Pick(names));
    if (loops.empty()) return;
    const LoopInfo& loop = loops[static_cast<size_t>(Uniform(std::min<int64_t>(2, loops.size())))];
    Try("parallel", [&] { s_.Parallel(loop.rv); });
  }

  void VectorizeInner() {
    std::vector<std::string> names = BlockNames();
    if (names.empty()) return;
    std::vector<LoopInfo> loops = Loops(Pick(names));
    if (loops.empty()) return;
    Try("vectorize", [&] { s_.Vectorize(loops.back().rv); });
  }

  void UnrollAny() {
    std::string name;
    LoopInfo loop;
    if (RandomLoop(&name, &loop)) Try("unroll", [&] { s_.Unroll(loop.rv); });
  }

  void AnnotateAny() {
    std::string name;
    LoopInfo loop;
    if (!RandomLoop(&name, &loop)) return;
    if (Chance(0.5)) {
      BlockRV block = Block(name);
      Try("annotate", [&] { s_.Annotate(block, "schedule_rule", std::string("fuzz")); });
      return;
    }
    ExprRV step;
    if (!Try(
            "sample_categorical",
            [&] {
              step = s_.SampleCategorical({0, 16, 64}, {0.5, 0.25, 0.25});
            },
            false)) {
      return;
    }
    Try("annotate", [&] { s_.Annotate(loop.rv, "pragma_auto_unroll_max_step", s_.Value(step)); });
  }

  void CacheWriteAndReverseComputeAt() {
    std::vector<std::string> names =
        BlockNames([](const ir::BlockRealizeNode* r) { return !r->block->writes.empty(); });
    if (names.empty()) return;
    std::vector<std::string> reductions = BlockNames(IsReduction);
    const std::string name = !reductions.empty() && Chance(0.7) ? Pick(reductions) : Pick(names);
    BlockRV block = Block(name);
    std::string scope = Chance(0.8) ? "local" : "global";
    BlockRV copy;
    if (!Try("cache_write", [&] { copy = s_.CacheWrite(block, 0, scope); })) return;
    blocks_[s_.BlockName(copy)] = copy;
    if (Chance(0.15)) return;
    std::vector<LoopInfo> loops = Loops(name);
    if (loops.empty()) return;
    const LoopInfo& loop = Pick(loops);
    Try("reverse_compute_at", [&] { s_.ReverseComputeAt(copy, loop.rv); });
  }

  void CacheReadAndComputeAt() {
    std::vector<std::string> names =
        BlockNames([](const ir::BlockRealizeNode* r) { return !r->block->reads.empty(); });
    if (names.empty()) return;
    const std::string name = Pick(names);
    int index = static_cast<int>(Uniform(static_cast<int64_t>(Realize(name)->block->reads.size())));
    std::string scope = Chance(0.5) ? "local" : "global";
    BlockRV copy;
    BlockRV block = Block(name);
    if (!Try("cache_read", [&] { copy = s_.CacheRead(block, index, scope); })) return;
    blocks_[s_.BlockName(copy)] = copy;
    read_copies_.push_back(s_.BlockName(copy));
    if (Chance(0.15)) return;
    if (Chance(0.5)) {
      LoopRV at;
      if (Try(
              "sample_compute_location", [&] { at = s_.SampleComputeLocation(copy); }, false)) {
        Try("compute_at", [&] { s_.ComputeAt(copy, at); });
      }
      return;
    }
    std::vector<LoopInfo> loops = Loops(name);
    if (loops.empty()) return;
    const LoopInfo& loop = Pick(loops);
    Try("compute_at", [&] { s_.ComputeAt(copy, loop.rv); });
  }

  void ComputeAtSampled() {
    std::vector<std::string> names = BlockNames();
    if (names.empty()) return;
    std::string name = Pick(names);
    if (Realize("pad") && Chance(0.6)) name = "pad";
    BlockRV block = Block(name);
    LoopRV at;
    if (!Try(
            "sample_compute_location", [&] { at = s_.SampleComputeLocation(block); }, false)) {
      return;
    }
    Try("compute_at", [&] { s_.ComputeAt(block, at); });
  }

  void InlineProducer() {
    std::vector<std::string> names = BlockNames();
    if (names.empty()) return;
    std::string name = Realize("pad") && Chance(0.6) ? "pad" : Pick(names);
    BlockRV block = Block(name);
    Try("compute_inline", [&] { s_.ComputeInline(block); });
  }

  void InlineConsumer() {
    std::vector<std::string> names = BlockNames();
    if (names.empty()) return;
    std::string name = Chance(0.6) ? names.back() : Pick(names);
    BlockRV block = Block(name);
    Try("reverse_compute_inline", [&] { s_.ReverseComputeInline(block); });
  }

  void RFactorReduction() {
    std::vector<std::string> names = BlockNames(IsReduction);
    if (names.empty()) return;
    std::string name = Pick(names);
    std::vector<LoopInfo> loops = Loops(name);
    std::vector<LoopRV> reduction_loops;
    for (const LoopInfo& l : loops) {
      if (l.reduction) reduction_loops.push_back(l.rv);
    }
    if (reduction_loops.empty()) return;
    LoopRV loop = Pick(reduction_loops);
    if (Chance(0.6)) {
      std::vector<LoopRV> parts;
      int64_t f = 2 + Uniform(3);
      if (!Try("split", [&] { parts = s_.Split(loop, {-1, f}); })) return;
      loop = Pick(parts);
    }
    const ir::BlockRealizeNode* realize = Realize(name);
    if (realize->block->writes.empty()) return;
    int64_t rank = static_cast<int64_t>(realize->block->writes[0].buffer->shape.size());
    int axis = static_cast<int>(Uniform(rank + 1));
    BlockRV rf;
    if (Try("rfactor", [&] { rf = s_.RFactor(loop, axis); })) blocks_[s_.BlockName(rf)] = rf;
  }

  void DecomposeAnyReduction() {
    std::vector<std::string> names =
        BlockNames([](const ir::BlockRealizeNode* r) { return r->block->init != nullptr; });
    if (names.empty()) return;
    std::string name = Pick(names);
    std::vector<LoopInfo> loops = Loops(name);
    if (loops.empty()) return;
    const LoopInfo& loop = Pick(loops);
    BlockRV init;
    BlockRV block = Block(name);
    if (Try("decompose_reduction", [&] { init = s_.DecomposeReduction(block, loop.rv); })) {
      blocks_[s_.BlockName(init)] = init;
    }
  }

  void TransformCopyLayout() {
    std::vector<std::string> copies;
    for (const std::string& c : read_copies_) {
      if (Realize(c) && !Realize(c)->block->writes.empty()) copies.push_back(c);
    }
    if (copies.empty()) return;
    std::string name = Pick(copies);
    const ir::Buffer& buffer = Realize(name)->block->writes[0].buffer;
    size_t rank = buffer->shape.size();
    std::string src, dst;
    for (size_t d = 0; d < rank; ++d) src += static_cast<char>('A' + d);
    dst = src;
    Shuffle(dst);
    if (Chance(0.6)) {
      char axis = src[static_cast<size_t>(Uniform(static_cast<int64_t>(rank)))];
      dst += std::to_string(2 + Uniform(3)) + static_cast<char>(std::tolower(axis));
    }
    // From the copy's side (its write) or from a reader's side (its read of the copy).
    std::string block = name;
    int index = 0;
    bool is_write = true;
    if (Chance(0.4)) {
      for (const std::string& reader : BlockNames()) {
        const auto& reads = Realize(reader)->block->reads;
        for (size_t i = 0; i < reads.size(); ++i) {
          if (reads[i].buffer == buffer) {
            block = reader;
            index = static_cast<int>(i);
            is_write = false;
          }
        }
      }
    }
    BlockRV target = Block(block);
    Try("transform_layout", [&] { s_.TransformLayout(target, index, is_write, src, dst); });
  }

  // compute_at or reverse_compute_at of a random block at a random loop of another block.
  void MoveAnyBlock() {
    std::vector<std::string> names = BlockNames();
    if (names.size() < 2) return;
    std::string moved = Pick(names);
    std::string other = Pick(names);
    if (other == moved) return;
    std::vector<LoopInfo> loops = Loops(other);
    if (loops.empty()) return;
    const LoopInfo& loop = Pick(loops);
    BlockRV block = Block(moved);
    if (Chance(0.5)) {
      Try("compute_at", [&] { s_.ComputeAt(block, loop.rv); });
    } else {
      Try("reverse_compute_at", [&] { s_.ReverseComputeAt(block, loop.rv); });
    }
  }

  Schedule& s_;
  RandomState random_;
  FuzzCounts& counts_;
  StepHook after_step_;
  std::map<std::string, BlockRV> blocks_;
  std::vector<std::string> read_copies_;
  std::vector<std::string> applied_;
};

}  // namespace tandem::kernels::testing
