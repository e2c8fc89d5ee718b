// mutate_compute_location: moves a block to another place it may legally be computed: another
// decision of a sample_compute_location (among the locations legal in the program as it is
// when that instruction runs, found by replaying the trace up to it), or another tile level for
// an epilogue (the sample_categorical behind a "tandem.fuse_level" annotation).
#include "ir/error.h"
#include "kernels/schedule/primitives.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class MutateComputeLocation : public Mutator {
 public:
  std::string name() const override { return "mutate_compute_location"; }

  std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction& kernel,
                                 RandomState& random) const override {
    std::vector<size_t> candidates = search::CategoricalsAnnotating(trace, search::kFuseLevelKey);
    const auto& instructions = trace.instructions();
    for (size_t i = 0; i < search::PostprocessingStart(trace); ++i) {
      if (instructions[i].kind == "sample_compute_location" && instructions[i].decision &&
          !instructions[i].inputs.empty()) {
        candidates.push_back(i);
      }
    }
    while (!candidates.empty()) {
      size_t pick = static_cast<size_t>(random.Uniform(static_cast<int64_t>(candidates.size())));
      size_t index = candidates[pick];
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(pick));
      std::optional<ir::Trace> mutated = instructions[index].kind == "sample_categorical"
                                             ? search::OtherCategory(trace, index, random)
                                             : OtherLocation(trace, index, kernel, random);
      if (mutated) return mutated;
    }
    return std::nullopt;
  }

 private:
  static std::optional<ir::Trace> OtherLocation(const ir::Trace& trace, size_t index,
                                                const ir::KernelFunction& kernel,
                                                RandomState& random) {
    const ir::Instruction& inst = trace.instructions()[index];
    const auto* current = std::get_if<int64_t>(&*inst.decision);
    if (!current) return std::nullopt;
    try {
      Schedule before = Schedule::Replay(kernel, trace.Prefix(index));
      std::string block;
      std::optional<size_t> def = search::DefiningInstruction(trace, inst.inputs[0]);
      if (def && trace.instructions()[*def].kind == "get_block") {
        block = trace.instructions()[*def].attrs.GetString("name");
      } else {
        block = before.BlockName(BlockRV{inst.inputs[0]});
      }
      // Decisions -1 (stay at the root) .. n-1.
      int64_t choices =
          static_cast<int64_t>(primitive::ComputeAtLocations(before.function(), block).size()) + 1;
      if (choices < 2) return std::nullopt;
      int64_t next = random.Uniform(choices - 1) - 1;
      if (next >= *current) ++next;
      return trace.WithDecision(index, next);
    } catch (const ScheduleError&) {
      return std::nullopt;
    }
  }
};

}  // namespace

MutatorPtr MakeMutateComputeLocation(const SearchTarget&) {
  return std::make_shared<MutateComputeLocation>();
}

}  // namespace tandem::kernels
