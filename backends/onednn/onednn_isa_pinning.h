// oneDNN's instruction set, fixed once per process (the part of onednn_isa.h that needs no
// compiler: libtandem_runtime pins the instruction set an exported model records by name).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <vector>

namespace tandem::backends {

// One of oneDNN's instruction sets: its name, its value, and the LLVM features a target must
// have for it.
struct OnednnIsaEntry {
  const char* name;
  dnnl::cpu_isa value;
  const char* llvm_features;
};

// oneDNN's instruction sets, best first.
const std::vector<OnednnIsaEntry>& OnednnIsas();

// Fixes oneDNN's instruction set to `wanted` in this process: limits oneDNN to it when `limit`,
// else records it (oneDNN keeps the machine's own). A later call for an instruction set that is
// a superset of the fixed one is accepted; another one is an Error naming `wanted_for` (the
// target or artifact that asked). Thread-safe.
void PinOnednnIsaEntry(const OnednnIsaEntry& wanted, bool limit, const std::string& wanted_for);

// PinOnednnIsaEntry for the instruction set named `name` (always limiting); Error on an unknown
// name.
void PinOnednnIsaByName(const std::string& name, const std::string& wanted_for);

// The instruction set fixed in this process; "" when none was fixed yet.
std::string PinnedOnednnIsa();

// Fixes oneDNN's instruction set for the default target unless one is fixed already, and
// returns true: every use of oneDNN calls it first (OnednnContext), so that oneDNN never
// dispatches before its instruction set is fixed. In the compiler the default target is `host`
// (which TANDEM_HOST_TARGET may make another CPU: onednn_isa.cc); in libtandem_runtime it is the
// machine's own (onednn_isa_runtime.cc).
bool EnsureOnednnIsaFixed();

}  // namespace tandem::backends
