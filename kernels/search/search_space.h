// The kernel design space: schedule rules, postprocessors and mutators.
//
// A design space is a Schedule whose trace contains sampling instructions (sample_perfect_tile,
// sample_categorical, sample_compute_location). Drawing a program from it is replaying the
// trace with those decisions cleared (Schedule::Replay samples a missing decision), then running
// the postprocessors, which turn annotations into concrete loops and reject invalid programs.
// Rules build the design spaces: GenerateDesignSpaces visits the kernel's blocks from the last
// to the first (consumers before producers, so an epilogue is fused before its producer is
// tiled) and lets every rule transform the current schedules at that block; a rule may return
// several schedules (alternative structures), which multiplies the design spaces.
// The root block is visited last, after every other block. Mutators change one decision of a
// sampled program's trace; the result is replayed and postprocessed like a fresh sample.
//
// A program's trace is its design part (the rules' instructions with their decisions), an
// "enter_postproc" instruction, and the steps the postprocessors took. Schedule::Replay of the
// whole trace reproduces the program; ReplayProgram and the mutators use only the design part
// (the postprocessing is redone), so a mutated trace keeps a stale postprocessing part that
// ReplayProgram ignores. Where a rule leaves a decision to a postprocessor (the parallel
// extent, the unroll depth, the tile level an epilogue is fused at), it annotates a sampled
// value (Schedule::Annotate with an ExprRV), so that a changed decision changes the annotation.
//
// Rules, postprocessors and mutators are small value types registered by name, one per file in
// kernels/search/<kind>/<name>.cc (kernels/search/components.h lists the built-in ones); a
// search space is a list of them, so a user adds a rule without touching the others.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/kernel/stmt.h"
#include "ir/trace.h"
#include "kernels/default_schedule.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels {

// Facts about the target that rules need. The GPU fields matter where `gpu` is true (the
// DefaultGpuSearchSpace's rules and postprocessors read them; CPU ones ignore them).
struct SearchTarget {
  int vector_lanes = 16;  // f32 lanes of the widest vector
  int num_cores = 2;      // cores parallel loops are spread over
  // What the default schedules know of the cores (kernels/default_schedule.h); the seeded tile
  // samples of multi-level tiling start from the register tile planned with it.
  CpuCoreModel core;
  int64_t max_innermost_factor = 64;
  std::vector<int64_t> unroll_depths = {0, 16, 64, 512};  // candidates for auto-unroll

  bool gpu = false;
  std::string gpu_arch;                             // "sm_80", "sm_90" (what ptxas checks)
  int64_t max_threads_per_block = 1024;             // threads of one thread block
  int64_t max_shared_memory_per_block = 48 * 1024;  // bytes of static shared memory per block
  int64_t registers_per_block = 65536;              // 32-bit registers one block may use
  int64_t max_registers_per_thread = 255;           // what ptxas gives one thread at most
  int warp_size = 32;
  int sm_count = 108;  // streaming multiprocessors

  bool operator==(const SearchTarget& other) const = default;
};

// The search target of an NVIDIA GPU architecture ("sm_80": A100, 108 SMs; "sm_90": H100 and
// H200, 132 SMs): gpu set, the architecture's limits filled in. Error for another architecture.
SearchTarget GpuSearchTarget(const std::string& arch);
// A search target as JSON and back (every field; a missing field keeps its default, a field of
// the wrong type is an Error naming it).
std::string SearchTargetToJson(const SearchTarget& target);
SearchTarget SearchTargetFromJson(const std::string& json);

class ScheduleRule {
 public:
  virtual ~ScheduleRule() = default;
  virtual std::string name() const = 0;
  // The schedules this rule makes of `block` in `schedule`: {schedule} unchanged when the rule
  // does not apply; several for alternative structures. Never throws for an inapplicable
  // block; an illegal step is skipped (the Schedule leaves the program unchanged on error).
  virtual std::vector<Schedule> Apply(const Schedule& schedule, const BlockRV& block) const = 0;
};

class Postprocessor {
 public:
  virtual ~Postprocessor() = default;
  virtual std::string name() const = 0;
  // Finishes a sampled program in place; false rejects it (with no measurement wasted).
  virtual bool Apply(Schedule& schedule) const = 0;
};

class Mutator {
 public:
  virtual ~Mutator() = default;
  virtual std::string name() const = 0;
  // A trace equal to `trace` but for one changed decision, or nullopt when this mutator finds
  // nothing to change. `kernel` is the unscheduled kernel the trace applies to.
  virtual std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction& kernel,
                                         RandomState& random) const = 0;
};

using ScheduleRulePtr = std::shared_ptr<const ScheduleRule>;
using PostprocessorPtr = std::shared_ptr<const Postprocessor>;
using MutatorPtr = std::shared_ptr<const Mutator>;

struct SearchSpace {
  std::vector<ScheduleRulePtr> rules;
  std::vector<PostprocessorPtr> postprocessors;
  std::vector<std::pair<MutatorPtr, double>> mutators;  // with selection probabilities
};

// Rules, postprocessors and mutators by name. The built-in ones are listed in
// kernels/search/components.h; Register* adds (or replaces) a name, so that a user-defined
// component can be named in a space like a built-in one. Make* throws ir::Error for an unknown
// name, naming the known ones that are close.
using ScheduleRuleFactory = std::function<ScheduleRulePtr(const SearchTarget&)>;
using PostprocessorFactory = std::function<PostprocessorPtr(const SearchTarget&)>;
using MutatorFactory = std::function<MutatorPtr(const SearchTarget&)>;
void RegisterScheduleRule(const std::string& name, ScheduleRuleFactory factory);
void RegisterPostprocessor(const std::string& name, PostprocessorFactory factory);
void RegisterMutator(const std::string& name, MutatorFactory factory);
ScheduleRulePtr MakeScheduleRule(const std::string& name, const SearchTarget& target);
PostprocessorPtr MakePostprocessor(const std::string& name, const SearchTarget& target);
MutatorPtr MakeMutator(const std::string& name, const SearchTarget& target);
std::vector<std::string> ScheduleRuleNames();
std::vector<std::string> PostprocessorNames();
std::vector<std::string> MutatorNames();

// The default CPU space: auto-inline, multi-level tiling (SSRSRS) with epilogue fusion,
// random compute location, parallel-vectorize-unroll, rfactor for long reductions; the
// postprocessors that rewrite annotations and verify; mutators of tile sizes, parallel extent,
// unroll depth and compute location.
SearchSpace DefaultCpuSearchSpace(const SearchTarget& target);
// The default GPU space (MetaSchedule's CUDA space): auto-inline, cross-thread reduction,
// multi-level tiling with thread binding (SSSRRSRS; with and without operand tiles staged in
// shared memory), auto-bind of what is left unbound, auto-unroll; the postprocessors that
// rewrite the unroll annotation and verify the launches against the target's limits (not
// verify_ptxas, which needs the CUDA toolkit: backends/cuda/verify_ptxas.h adds it); mutators of
// tile sizes, thread extents and unroll depth.
SearchSpace DefaultGpuSearchSpace(const SearchTarget& target);
// DefaultGpuSearchSpace for a GPU target, DefaultCpuSearchSpace otherwise.
SearchSpace DefaultSearchSpace(const SearchTarget& target);

// Design spaces of `kernel` (see the file comment). Always at least one.
std::vector<Schedule> GenerateDesignSpaces(const ir::KernelFunction& kernel,
                                           const SearchSpace& space, uint64_t seed);

// A program drawn from a design space: its trace replayed on `kernel` with every sampling
// decision drawn anew from `random`, then postprocessed. nullopt when replay fails or a
// postprocessor rejects it.
std::optional<Schedule> SampleProgram(const ir::KernelFunction& kernel,
                                      const ir::Trace& design_space, const SearchSpace& space,
                                      RandomState& random);
// Replays `trace` (decisions kept) and postprocesses; nullopt when invalid. A fixed trace (no
// sampling instruction and no postprocessing part: a default or hand-written schedule) is
// replayed as it is: it was never drawn from the space, so the space's postprocessors, whose
// vector-width and annotation rules prune samples, do not apply to it; the primitives' own
// checks still reject an illegal step. When it returns nullopt and `why` is given, *why says
// why: the replay's error, or which postprocessor rejected the program.
std::optional<Schedule> ReplayProgram(const ir::KernelFunction& kernel, const ir::Trace& trace,
                                      const SearchSpace& space, std::string* why = nullptr);

}  // namespace tandem::kernels
