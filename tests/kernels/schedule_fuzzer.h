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
//
// This file holds the actions (which primitive to try, with which arguments); fuzz_program.h
// the random source and the queries of the current program they draw arguments from, and
// fuzz_checks.h the checked application of one primitive and the counts.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "kernels/schedule/schedule.h"
#include "tests/kernels/fuzz_checks.h"
#include "tests/kernels/fuzz_program.h"

namespace tandem::kernels::testing {

class ScheduleFuzzer : private FuzzProgram {
 public:
  using StepHook = StepChecker::StepHook;

  // `after_step` (optional) runs after every successful transformation with its kind and the
  // function before it.
  ScheduleFuzzer(Schedule& schedule, uint64_t seed, FuzzCounts& counts, StepHook after_step = {})
      : FuzzProgram(schedule, seed), checker_(schedule, counts, std::move(after_step)) {}

  void Run(int steps) {
    for (int i = 0; i < steps; ++i) Step();
  }

  // The transformations applied so far, in order.
  const std::vector<std::string>& applied() const { return checker_.applied(); }

 private:
  template <typename F>
  bool Try(const std::string& kind, F&& apply, bool transformation = true) {
    return checker_.Try(kind, std::forward<F>(apply), transformation);
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
    Remember(copy);
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
    Remember(copy);
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
    if (Try("rfactor", [&] { rf = s_.RFactor(loop, axis); })) Remember(rf);
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
      Remember(init);
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

  StepChecker checker_;
  std::vector<std::string> read_copies_;
};

}  // namespace tandem::kernels::testing
