// mutate_tile_size: moves one prime factor from one level of a sample_perfect_tile decision to
// another, keeping the product (the loop's extent) and the innermost bound.
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> primes;
  for (int64_t p = 2; p * p <= n; ++p) {
    if (n % p == 0) primes.push_back(p);
    while (n % p == 0) n /= p;
  }
  if (n > 1) primes.push_back(n);
  return primes;
}

class MutateTileSize : public Mutator {
 public:
  std::string name() const override { return "mutate_tile_size"; }

  std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction&,
                                 RandomState& random) const override {
    const auto& instructions = trace.instructions();
    std::vector<size_t> candidates;
    for (size_t i = 0; i < search::PostprocessingStart(trace); ++i) {
      const ir::Instruction& inst = instructions[i];
      if (inst.kind != "sample_perfect_tile" || !inst.decision) continue;
      const auto* factors = std::get_if<std::vector<int64_t>>(&*inst.decision);
      if (!factors || factors->size() < 2) continue;
      int64_t product = 1;
      for (int64_t f : *factors) product *= f;
      if (product > 1) candidates.push_back(i);
    }
    if (candidates.empty()) return std::nullopt;
    for (int attempt = 0; attempt < 32; ++attempt) {
      size_t index =
          candidates[static_cast<size_t>(random.Uniform(static_cast<int64_t>(candidates.size())))];
      const ir::Instruction& inst = instructions[index];
      std::vector<int64_t> factors = std::get<std::vector<int64_t>>(*inst.decision);
      int64_t max_innermost = inst.attrs.GetInt("max_innermost_factor", 0);
      std::vector<size_t> sources;
      for (size_t k = 0; k < factors.size(); ++k) {
        if (factors[k] > 1) sources.push_back(k);
      }
      size_t from =
          sources[static_cast<size_t>(random.Uniform(static_cast<int64_t>(sources.size())))];
      size_t to = static_cast<size_t>(random.Uniform(static_cast<int64_t>(factors.size()) - 1));
      if (to >= from) ++to;
      std::vector<int64_t> primes = PrimeFactors(factors[from]);
      int64_t p = primes[static_cast<size_t>(random.Uniform(static_cast<int64_t>(primes.size())))];
      factors[from] /= p;
      factors[to] *= p;
      if (max_innermost > 0 && factors.back() > max_innermost) continue;
      return trace.WithDecision(index, factors);
    }
    return std::nullopt;
  }
};

}  // namespace

MutatorPtr MakeMutateTileSize(const SearchTarget&) {
  return std::make_shared<MutateTileSize>();
}

}  // namespace tandem::kernels
