// mutate_parallel: another largest parallel extent (the sampled value of the root's
// "tandem.parallel" annotation), or the other order of a tiled block's outer loops (its
// "tandem.panels_outer" annotation): the two decisions that shape the parallel loop.
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class MutateParallel : public Mutator {
 public:
  std::string name() const override { return "mutate_parallel"; }

  std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction&,
                                 RandomState& random) const override {
    std::vector<size_t> decisions = search::CategoricalsAnnotating(trace, search::kParallelKey);
    for (size_t d : search::CategoricalsAnnotating(trace, search::kPanelsOuterKey)) {
      decisions.push_back(d);
    }
    return search::MutateOneCategorical(trace, decisions, random);
  }
};

}  // namespace

MutatorPtr MakeMutateParallel(const SearchTarget&) {
  return std::make_shared<MutateParallel>();
}

}  // namespace tandem::kernels
