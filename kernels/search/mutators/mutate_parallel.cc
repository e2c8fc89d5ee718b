// mutate_parallel: another largest parallel extent (the sampled value of the root's
// "tandem.parallel" annotation).
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class MutateParallel : public Mutator {
 public:
  std::string name() const override { return "mutate_parallel"; }

  std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction&,
                                 RandomState& random) const override {
    return search::MutateOneCategorical(
        trace, search::CategoricalsAnnotating(trace, search::kParallelKey), random);
  }
};

}  // namespace

MutatorPtr MakeMutateParallel(const SearchTarget&) {
  return std::make_shared<MutateParallel>();
}

}  // namespace tandem::kernels
