// mutate_thread_extent: another number of threads for a nest a GPU rule spread over threads (the
// sampled value of a "tandem.thread_extent" annotation: AutoBind, CrossThreadReduction).
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class MutateThreadExtent : public Mutator {
 public:
  std::string name() const override { return "mutate_thread_extent"; }

  std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction&,
                                 RandomState& random) const override {
    return search::MutateOneCategorical(
        trace, search::CategoricalsAnnotating(trace, search::kThreadExtentKey), random);
  }
};

}  // namespace

MutatorPtr MakeMutateThreadExtent(const SearchTarget&) {
  return std::make_shared<MutateThreadExtent>();
}

}  // namespace tandem::kernels
