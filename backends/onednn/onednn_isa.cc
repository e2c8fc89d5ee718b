#include "backends/onednn/onednn_isa.h"

#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/target/resolved_target.h"
#include "ir/error.h"

namespace tandem::backends {

namespace {

const OnednnIsaEntry& IsaFor(const ir::Target& target) {
  for (const OnednnIsaEntry& isa : OnednnIsas()) {
    if (TargetHasFeatures(target, isa.llvm_features)) return isa;
  }
  return OnednnIsas().back();
}

}  // namespace

std::string OnednnIsaFor(const ir::Target& target) {
  return IsaFor(target).name;
}

void PinOnednnIsa(const ir::Target& target) {
  const OnednnIsaEntry& wanted = IsaFor(target);
  // The machine's own instruction set needs no limit; a lower one does.
  bool limit = &wanted != &IsaFor(ir::ParseTarget("llvm")) || GetHostCpu().configured;
  PinOnednnIsaEntry(wanted, limit, fmt::format("target '{}'", ir::ToString(target)));
}

bool EnsureOnednnIsaFixed() {
  if (PinnedOnednnIsa().empty()) PinOnednnIsa(ir::Target{});
  return true;
}

}  // namespace tandem::backends
