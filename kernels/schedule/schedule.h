// Schedule: transforms one kernel function through primitives that record themselves in a
// Trace.
//
// A schedule hands out random-variable handles: BlockRV (a block), LoopRV (a loop) and ExprRV
// (an integer decided by a sampling instruction). Every primitive appends an Instruction to
// the trace naming its input and output handles ("b0", "l3", "v5"), its literal arguments and,
// for sampling instructions, its decision. Replaying the trace on the original kernel
// reproduces the same program; replaying it with changed decisions gives the mutated program,
// or an Error when the changed decisions are invalid.
//
// An illegal primitive throws an Error naming the primitive and the violated precondition and
// leaves the schedule (function and trace) unchanged. Handles to loops that a later primitive
// removed (split, fuse, compute_at) become stale; using one is an Error.
//
// Randomness comes from one seeded generator with a portable algorithm (SplitMix64), so the
// same seed gives the same decisions on every machine and compiler.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"
#include "ir/trace.h"
#include "kernels/schedule/schedule_error.h"

namespace tandem::kernels {

struct BlockRV {
  std::string name;
};
struct LoopRV {
  std::string name;
};
struct ExprRV {
  std::string name;
};

// A split factor: a literal or a sampled value.
struct Factor {
  Factor(int64_t literal) : literal(literal) {}         // NOLINT(google-explicit-constructor)
  Factor(ExprRV rv) : literal(0), rv(std::move(rv)) {}  // NOLINT(google-explicit-constructor)
  int64_t literal;
  std::optional<ExprRV> rv;
};

// The deterministic random source of tuning: SplitMix64, fully specified, so decisions are
// portable across machines and standard libraries (std distributions are not).
class RandomState {
 public:
  explicit RandomState(uint64_t seed = 0) : state_(seed) {}
  uint64_t Next();
  // Uniform integer in [0, n); n > 0.
  int64_t Uniform(int64_t n);
  // Uniform double in [0, 1).
  double UniformReal();
  // A new independent stream derived from this one (advances this one).
  RandomState Fork() { return RandomState(Next()); }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

class Schedule {
 public:
  explicit Schedule(ir::KernelFunction function, uint64_t seed = 0);

  const ir::KernelFunction& function() const { return function_; }
  const ir::KernelFunction& original() const { return original_; }
  const ir::Trace& trace() const { return trace_; }
  RandomState& random() { return random_; }

  // Replays `trace` on `function`. Sampling instructions reuse their recorded decisions (and
  // fail when a decision is invalid for the program); the new schedule's trace equals `trace`
  // when nothing changed.
  static Schedule Replay(const ir::KernelFunction& function, const ir::Trace& trace,
                         uint64_t seed = 0);

  // --- Handles ---
  BlockRV GetBlock(const std::string& name);
  std::vector<LoopRV> GetLoops(const BlockRV& block);
  // Names of the blocks in the function (excluding the root), in pre-order.
  std::vector<std::string> BlockNames() const;
  // Resolved values of handles (for rules that inspect the program).
  const std::string& BlockName(const BlockRV& block) const;
  const ir::Var& LoopVar(const LoopRV& loop) const;
  int64_t Value(const ExprRV& value) const;
  int64_t LoopExtent(const LoopRV& loop) const;

  // --- Loop transformations ---
  std::vector<LoopRV> Split(const LoopRV& loop, const std::vector<Factor>& factors);
  LoopRV Fuse(const std::vector<LoopRV>& loops);
  void Reorder(const std::vector<LoopRV>& order);
  void Parallel(const LoopRV& loop);
  void Vectorize(const LoopRV& loop);
  void Unroll(const LoopRV& loop);
  // Binds a loop to a GPU block or thread index (`thread` is "blockIdx.x" ... "threadIdx.z";
  // anything else is a ScheduleError). Legal where parallelizing it would be, and not nested in
  // a loop bound to the same index.
  void Bind(const LoopRV& loop, const std::string& thread);
  void Annotate(const LoopRV& loop, const std::string& key, const ir::AttrValue& value);
  void Annotate(const BlockRV& block, const std::string& key, const ir::AttrValue& value);
  // Annotates with the value of a sampled integer. The handle is recorded as the second input,
  // so a replay with a changed decision annotates the new value.
  void Annotate(const LoopRV& loop, const std::string& key, const ExprRV& value);
  void Annotate(const BlockRV& block, const std::string& key, const ExprRV& value);
  // Records "enter_postproc": the instructions after it were added by postprocessors (see
  // kernels/search/search_space.h). It changes nothing; Replay skips it.
  void EnterPostprocessing();

  // --- Block transformations ---
  BlockRV CacheRead(const BlockRV& block, int read_index, const std::string& scope);
  BlockRV CacheWrite(const BlockRV& block, int write_index, const std::string& scope);
  void SetScope(const BlockRV& block, int write_index, const std::string& scope);
  // A loop handle from SampleComputeLocation may be the "root" location, in which case
  // compute_at / reverse_compute_at record themselves and leave the block where it is.
  void ComputeAt(const BlockRV& block, const LoopRV& loop);
  void ReverseComputeAt(const BlockRV& block, const LoopRV& loop);
  void ComputeInline(const BlockRV& block);
  void ReverseComputeInline(const BlockRV& block);
  BlockRV RFactor(const LoopRV& loop, int factor_axis);
  BlockRV DecomposeReduction(const BlockRV& block, const LoopRV& loop);
  void TransformLayout(const BlockRV& block, int buffer_index, bool is_write,
                       const std::string& src_layout, const std::string& dst_layout);

  // --- Sampling (decision: the sampled value; pass one to force it) ---
  // n factors whose product is exactly the loop's extent, the innermost at most
  // max_innermost_factor. With a seed whose switch is nonzero, a fresh sample's innermost factor
  // is the largest divisor of the extent at most seed->innermost (and max_innermost_factor), the
  // outer ones sampled as usual; the switch is recorded as the instruction's second input, so
  // that sampling the trace anew keeps the dependence.
  struct PerfectTileSeed {
    ExprRV enabled;
    int64_t innermost = 1;
  };
  std::vector<ExprRV> SamplePerfectTile(const LoopRV& loop, int n, int64_t max_innermost_factor,
                                        std::optional<std::vector<int64_t>> decision = {},
                                        std::optional<PerfectTileSeed> seed = {});
  ExprRV SampleCategorical(const std::vector<int64_t>& candidates,
                           const std::vector<double>& probabilities,
                           std::optional<int64_t> decision = {});
  // A legal compute_at location of `block` (decision: index into
  // primitive::ComputeAtLocations, or -1 for the root, i.e. stay in place).
  LoopRV SampleComputeLocation(const BlockRV& block, std::optional<int64_t> decision = {});

  // The sentinel loop handle meaning "at the root" (no loop).
  static bool IsRoot(const LoopRV& loop) { return loop.name == "root"; }

 private:
  std::string NewName(char prefix);
  BlockRV NewBlock(const std::string& block_name);
  LoopRV NewLoop(const ir::Var& var);
  ExprRV NewValue(int64_t value);
  void Record(std::string kind, std::vector<std::string> inputs, ir::Attrs attrs,
              std::vector<std::string> outputs, std::optional<ir::AttrValue> decision = {});

  ir::KernelFunction original_;
  ir::KernelFunction function_;
  ir::Trace trace_;
  RandomState random_;
  int next_name_ = 0;
  std::map<std::string, std::string> blocks_;
  std::map<std::string, ir::Var> loops_;
  std::map<std::string, int64_t> values_;
};

// Factors for sample_perfect_tile: a uniformly random ordered factorization of `extent` into
// `n` parts with the innermost at most `max_innermost_factor`.
std::vector<int64_t> SamplePerfectTileFactors(RandomState& random, int64_t extent, int n,
                                              int64_t max_innermost_factor);

// Runs `step` on `schedule`; when a primitive refuses it as illegal (ScheduleError), restores
// the schedule (program and trace) as it was and returns false. For rules that skip a step which
// turns out illegal for a particular kernel. Any other error is restored the same way and
// rethrown: a stale handle or a bug is not "this step does not apply here".
bool TrySteps(Schedule& schedule, const std::function<void()>& step);

}  // namespace tandem::kernels
