#include "kernels/search/search_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "ir/error.h"
#include "ir/suggest.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

template <typename Factory>
class Registry {
 public:
  Registry(std::string kind, std::map<std::string, Factory> builtins)
      : kind_(std::move(kind)), factories_(std::move(builtins)) {}

  void Register(const std::string& name, Factory factory) {
    if (name.empty() || !factory) {
      throw ir::Error(fmt::format("registering a {} needs a name and a factory", kind_));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    factories_[name] = std::move(factory);
  }

  auto Make(const std::string& name, const SearchTarget& target) const {
    Factory factory;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = factories_.find(name);
      if (it != factories_.end()) factory = it->second;
    }
    if (!factory) {
      std::vector<std::string> close = ir::CloseNames(name, Names(), 3);
      throw ir::Error(fmt::format(
          "unknown {} '{}'{}", kind_, name,
          close.empty() ? std::string()
                        : fmt::format(" (did you mean '{}'?)", fmt::join(close, "', '"))));
    }
    return factory(target);
  }

  std::vector<std::string> Names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, factory] : factories_) names.push_back(name);
    return names;
  }

 private:
  std::string kind_;
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
};

Registry<ScheduleRuleFactory>& Rules() {
  static Registry<ScheduleRuleFactory> registry(
      "schedule rule", {{"auto_inline", MakeAutoInline},
                        {"multi_level_tiling", MakeMultiLevelTiling},
                        {"random_compute_location", MakeRandomComputeLocation},
                        {"parallel_vectorize_unroll", MakeParallelVectorizeUnroll},
                        {"add_rfactor", MakeAddRFactor},
                        {"multi_level_tiling_gpu", MakeMultiLevelTilingGpu},
                        {"cross_thread_reduction", MakeCrossThreadReduction},
                        {"auto_bind", MakeAutoBind},
                        {"auto_unroll", MakeAutoUnroll}});
  return registry;
}

Registry<PostprocessorFactory>& Postprocessors() {
  static Registry<PostprocessorFactory> registry(
      "postprocessor", {{"rewrite_epilogue_fusion", MakeRewriteEpilogueFusion},
                        {"rewrite_reduction_block", MakeRewriteReductionBlock},
                        {"rewrite_parallel_vectorize_unroll", MakeRewriteParallelVectorizeUnroll},
                        {"rewrite_panel_order", MakeRewritePanelOrder},
                        {"rewrite_prefetch", MakeRewritePrefetch},
                        {"verify_program", MakeVerifyProgram},
                        {"verify_gpu_launch", MakeVerifyGpuLaunch}});
  return registry;
}

Registry<MutatorFactory>& Mutators() {
  static Registry<MutatorFactory> registry("mutator",
                                           {{"mutate_tile_size", MakeMutateTileSize},
                                            {"mutate_parallel", MakeMutateParallel},
                                            {"mutate_unroll", MakeMutateUnroll},
                                            {"mutate_compute_location", MakeMutateComputeLocation},
                                            {"mutate_thread_extent", MakeMutateThreadExtent}});
  return registry;
}

// More design spaces than this are cut (rules that multiply spaces on many blocks).
constexpr size_t kMaxDesignSpaces = 64;

bool IsSampling(const std::string& kind) {
  return kind == "sample_perfect_tile" || kind == "sample_categorical" ||
         kind == "sample_compute_location";
}

// The schedule replayed without the get_block instructions whose handle nothing uses (every
// rule looks its block up; most leave it alone).
Schedule WithoutUnusedHandles(const ir::KernelFunction& kernel, const Schedule& schedule,
                              uint64_t seed) {
  std::set<std::string> used;
  for (const ir::Instruction& inst : schedule.trace().instructions()) {
    used.insert(inst.inputs.begin(), inst.inputs.end());
  }
  std::vector<ir::Instruction> kept;
  for (const ir::Instruction& inst : schedule.trace().instructions()) {
    if (inst.kind == "get_block" && !inst.outputs.empty() && !used.count(inst.outputs[0])) {
      continue;
    }
    kept.push_back(inst);
  }
  if (kept.size() == schedule.trace().size()) return schedule;
  try {
    return Schedule::Replay(kernel, ir::Trace(std::move(kept)), seed);
  } catch (const ScheduleError&) {
    return schedule;
  }
}

// `trace` replayed and postprocessed; nullopt (with the reason in *why when given) when the
// replay fails or a postprocessor rejects the program.
std::optional<Schedule> Postprocess(const ir::KernelFunction& kernel, const ir::Trace& trace,
                                    const SearchSpace& space, uint64_t seed,
                                    std::string* why = nullptr) {
  try {
    Schedule schedule = Schedule::Replay(kernel, trace, seed);
    schedule.EnterPostprocessing();
    for (const PostprocessorPtr& postprocessor : space.postprocessors) {
      if (!postprocessor->Apply(schedule)) {
        if (why) *why = "postprocessor " + postprocessor->name() + " rejects the program";
        return std::nullopt;
      }
    }
    return schedule;
  } catch (const ir::Error& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

}  // namespace

void RegisterScheduleRule(const std::string& name, ScheduleRuleFactory factory) {
  Rules().Register(name, std::move(factory));
}
void RegisterPostprocessor(const std::string& name, PostprocessorFactory factory) {
  Postprocessors().Register(name, std::move(factory));
}
void RegisterMutator(const std::string& name, MutatorFactory factory) {
  Mutators().Register(name, std::move(factory));
}
ScheduleRulePtr MakeScheduleRule(const std::string& name, const SearchTarget& target) {
  return Rules().Make(name, target);
}
PostprocessorPtr MakePostprocessor(const std::string& name, const SearchTarget& target) {
  return Postprocessors().Make(name, target);
}
MutatorPtr MakeMutator(const std::string& name, const SearchTarget& target) {
  return Mutators().Make(name, target);
}
std::vector<std::string> ScheduleRuleNames() {
  return Rules().Names();
}
std::vector<std::string> PostprocessorNames() {
  return Postprocessors().Names();
}
std::vector<std::string> MutatorNames() {
  return Mutators().Names();
}

SearchSpace DefaultCpuSearchSpace(const SearchTarget& target) {
  SearchSpace space;
  for (const char* name : {"auto_inline", "add_rfactor", "multi_level_tiling",
                           "random_compute_location", "parallel_vectorize_unroll"}) {
    space.rules.push_back(MakeScheduleRule(name, target));
  }
  for (const char* name : {"rewrite_epilogue_fusion", "rewrite_reduction_block",
                           "rewrite_panel_order", "rewrite_parallel_vectorize_unroll",
                           "rewrite_prefetch", "verify_program"}) {
    space.postprocessors.push_back(MakePostprocessor(name, target));
  }
  space.mutators = {{MakeMutator("mutate_tile_size", target), 0.9},
                    {MakeMutator("mutate_compute_location", target), 0.05},
                    {MakeMutator("mutate_unroll", target), 0.03},
                    {MakeMutator("mutate_parallel", target), 0.02}};
  return space;
}

SearchSpace DefaultGpuSearchSpace(const SearchTarget& target) {
  SearchSpace space;
  for (const char* name : {"auto_inline", "cross_thread_reduction", "multi_level_tiling_gpu",
                           "auto_bind", "auto_unroll"}) {
    space.rules.push_back(MakeScheduleRule(name, target));
  }
  // Not verify_program: its checks are about CPU vectors and parallel loops, and it refuses the
  // empty loops of an op's empty outputs, which a GPU launch simply skips.
  for (const char* name : {"rewrite_parallel_vectorize_unroll", "verify_gpu_launch"}) {
    space.postprocessors.push_back(MakePostprocessor(name, target));
  }
  space.mutators = {{MakeMutator("mutate_tile_size", target), 0.85},
                    {MakeMutator("mutate_thread_extent", target), 0.1},
                    {MakeMutator("mutate_unroll", target), 0.05}};
  return space;
}

SearchSpace DefaultSearchSpace(const SearchTarget& target) {
  return target.gpu ? DefaultGpuSearchSpace(target) : DefaultCpuSearchSpace(target);
}

std::vector<Schedule> GenerateDesignSpaces(const ir::KernelFunction& kernel,
                                           const SearchSpace& space, uint64_t seed) {
  Schedule initial(kernel, seed);
  std::vector<std::string> order = initial.BlockNames();
  std::reverse(order.begin(), order.end());
  order.push_back("root");
  std::vector<Schedule> current{initial};
  for (const std::string& name : order) {
    std::vector<Schedule> next;
    for (const Schedule& schedule : current) {
      if (!FindRealize(schedule.function(), name)) {
        next.push_back(schedule);
        continue;
      }
      Schedule at_block = schedule;
      BlockRV block = at_block.GetBlock(name);
      std::vector<Schedule> states{at_block};
      for (const ScheduleRulePtr& rule : space.rules) {
        std::vector<Schedule> produced;
        for (const Schedule& state : states) {
          std::vector<Schedule> out;
          try {
            out = rule->Apply(state, block);
          } catch (const ScheduleError&) {
            out.clear();
          }
          if (out.empty()) out.push_back(state);
          produced.insert(produced.end(), out.begin(), out.end());
        }
        states = std::move(produced);
      }
      next.insert(next.end(), states.begin(), states.end());
    }
    if (next.size() > kMaxDesignSpaces) next.erase(next.begin() + kMaxDesignSpaces, next.end());
    current = std::move(next);
  }
  std::vector<Schedule> spaces;
  for (const Schedule& schedule : current) {
    spaces.push_back(WithoutUnusedHandles(kernel, schedule, seed));
  }
  return spaces;
}

std::optional<Schedule> SampleProgram(const ir::KernelFunction& kernel,
                                      const ir::Trace& design_space, const SearchSpace& space,
                                      RandomState& random) {
  ir::Trace trace = search::DesignPart(design_space);
  for (ir::Instruction& inst : trace.mutable_instructions()) {
    if (IsSampling(inst.kind)) inst.decision.reset();
  }
  return Postprocess(kernel, trace, space, random.Next());
}

std::optional<Schedule> ReplayProgram(const ir::KernelFunction& kernel, const ir::Trace& trace,
                                      const SearchSpace& space, std::string* why) {
  bool fixed = true;  // neither sampled from a design space nor postprocessed
  for (const ir::Instruction& inst : trace.instructions()) {
    if (IsSampling(inst.kind) || inst.kind == "enter_postproc") fixed = false;
  }
  if (!fixed) return Postprocess(kernel, search::DesignPart(trace), space, 0, why);
  try {
    return Schedule::Replay(kernel, trace, 0);
  } catch (const ir::Error& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
}

}  // namespace tandem::kernels
