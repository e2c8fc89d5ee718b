// Resolving a target: what `host`, a thread count of 0 and a CPU's default features stand for on
// this machine, so that tuning runs, records and fixtures carry a target that means the same on
// every machine that reads them.
//
// A resolved target names a CPU (never "host"), lists the subtarget features it was built with
// when they came from the host, and has a thread count > 0. Compiling for a resolved target gives
// the same code on any machine; running that code needs a machine with its features
// (MissingHostFeatures says which are missing here).
#pragma once

#include <string>
#include <vector>

#include "ir/target.h"

namespace tandem::backends {

// The CPU "host" stands for: this machine's CPU name and its enabled and disabled features
// ("+avx2,+fma,-avx512f,..."; sorted), or, in a build configured with
// -DTANDEM_HOST_TARGET="llvm -cpu=NAME [-features=...]", that CPU (so that a whole build,
// its tests included, behaves as on a machine of that kind, where this one can run its code).
struct HostCpu {
  std::string name;
  std::string features;
  bool configured = false;  // true when the build's TANDEM_HOST_TARGET chose it
};
const HostCpu& GetHostCpu();

// `target` with "host" replaced by GetHostCpu() and a thread count of 0 by the number of
// hardware threads; a cuda target gets its architecture (the oldest supported when none is
// given) and one thread. Other fields are kept. Error for a target kind without a code generator.
ir::Target ResolveTarget(const ir::Target& target);

// The features code compiled for `target` may use that this machine's processor lacks ("avx512f",
// ...; empty when this machine can run it). Asks the processor itself, not GetHostCpu().
std::vector<std::string> MissingHostFeatures(const ir::Target& target);

// Whether code for `target` may use every feature of `features` ("+avx2,+fma"), as LLVM's
// subtarget for its CPU and features says.
bool TargetHasFeatures(const ir::Target& target, const std::string& features);

// The width in bits of the vector registers code for `target` uses by default (512, 256, 128).
int VectorUnitBits(const ir::Target& target);

// The target kinds that have a code generator ("llvm", "cuda"), and the check Build and the tools
// make: Error naming the kinds that exist when `target.kind` is not one of them.
const std::vector<std::string>& CodeGeneratorKinds();
void CheckHasCodeGenerator(const ir::Target& target);

}  // namespace tandem::backends
