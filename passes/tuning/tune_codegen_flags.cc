// TuneCodegenFlags: chooses code generation flags for the whole module by measurement: the
// target's defaults, 256- or 512-bit preferred vectors (512 only where the host has AVX-512),
// or floating-point reassociation (faster reductions, different rounding: still checked against
// the reference). The choice is stored as module attributes that Build reads
// (backends::kPreferVectorWidthAttr, kAllowReassociationAttr), so the tuned module builds the
// way it was measured.
#include "backends/runtime/executable.h"
#include "passes/tuning/knob_pass.h"

namespace tandem::passes {

namespace {

tuning::Choice SetAttribute(std::string name, std::string key, int64_t value,
                            std::function<bool(const ir::IRModule&)> constraint = nullptr) {
  return tuning::Choice{std::move(name),
                        [key, value](const ir::IRModule& m) {
                          ir::IRModule out = m;
                          out.attrs().Set(key, value);
                          return out;
                        },
                        std::move(constraint)};
}

}  // namespace

void RegisterTuneCodegenFlags(PassRegistry& registry) {
  RegisterKnobPass<SearchOptions>(
      registry,
      {.name = "TuneCodegenFlags",
       .summary = "Choose vector width (256/512 bit) and reassociation for code generation by "
                  "measurement."},
      [](const ir::IRModule&, PassContext& context, const SearchOptions&) {
        bool avx512 = context.Tuning().target_descriptor().find("avx512f") != std::string::npos;
        return tuning::Knob("TuneCodegenFlags",
                            {KeepChoice("default"),
                             SetAttribute("vector256", backends::kPreferVectorWidthAttr, 256),
                             SetAttribute("vector512", backends::kPreferVectorWidthAttr, 512,
                                          [avx512](const ir::IRModule&) { return avx512; }),
                             SetAttribute("reassociate", backends::kAllowReassociationAttr, 1)});
      });
}

}  // namespace tandem::passes
