// mutate_unroll: another unroll depth (the sampled value of the root's "tandem.unroll"
// annotation).
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

class MutateUnroll : public Mutator {
 public:
  std::string name() const override { return "mutate_unroll"; }

  std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction&,
                                 RandomState& random) const override {
    return search::MutateOneCategorical(
        trace, search::CategoricalsAnnotating(trace, search::kUnrollKey), random);
  }
};

}  // namespace

MutatorPtr MakeMutateUnroll(const SearchTarget&) {
  return std::make_shared<MutateUnroll>();
}

}  // namespace tandem::kernels
