#include "backends/onednn/onednn_isa.h"

#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/target/resolved_target.h"
#include "ir/error.h"

namespace tandem::backends {

namespace {

struct Isa {
  const char* name;
  dnnl::cpu_isa value;
  const char* llvm_features;  // what the target must have for it
};

// Best first. oneDNN's instruction sets are bit masks: one includes another when it has all of
// its bits.
constexpr Isa kIsas[] = {
    {"avx512_core_amx", dnnl::cpu_isa::avx512_core_amx,
     "+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx512vnni,+avx512bf16,+amx-tile,+amx-int8,+amx-"
     "bf16"},
    {"avx512_core_bf16", dnnl::cpu_isa::avx512_core_bf16,
     "+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx512vnni,+avx512bf16"},
    {"avx512_core_vnni", dnnl::cpu_isa::avx512_core_vnni,
     "+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx512vnni"},
    {"avx512_core", dnnl::cpu_isa::avx512_core, "+avx512f,+avx512bw,+avx512vl,+avx512dq"},
    {"avx2_vnni", dnnl::cpu_isa::avx2_vnni, "+avx2,+avxvnni"},
    {"avx2", dnnl::cpu_isa::avx2, "+avx2"},
    {"avx", dnnl::cpu_isa::avx, "+avx"},
    {"sse41", dnnl::cpu_isa::sse41, "+sse4.1"},
};

const Isa& IsaFor(const ir::Target& target) {
  for (const Isa& isa : kIsas) {
    if (TargetHasFeatures(target, isa.llvm_features)) return isa;
  }
  return kIsas[std::size(kIsas) - 1];
}

bool Includes(const Isa& larger, const Isa& smaller) {
  auto big = static_cast<unsigned>(larger.value), small = static_cast<unsigned>(smaller.value);
  return (big & small) == small;
}

std::mutex pin_mutex;
const Isa* pinned = nullptr;

}  // namespace

std::string OnednnIsaFor(const ir::Target& target) {
  return IsaFor(target).name;
}

void PinOnednnIsa(const ir::Target& target) {
  const Isa& wanted = IsaFor(target);
  std::lock_guard<std::mutex> lock(pin_mutex);
  if (pinned == nullptr) {
    // The machine's own instruction set needs no limit; a lower one does.
    const Isa& machine = IsaFor(ir::ParseTarget("llvm"));
    if (&wanted != &machine || GetHostCpu().configured) {
      bool set = dnnl::set_max_cpu_isa(wanted.value) == dnnl::status::success;
      if (!set && dnnl::get_effective_cpu_isa() != wanted.value) {
        throw ir::Error(fmt::format(
            "cannot limit oneDNN to {} for target '{}': oneDNN has already dispatched in this "
            "process",
            wanted.name, ir::ToString(target)));
      }
    }
    pinned = &wanted;
    return;
  }
  if (pinned == &wanted || Includes(wanted, *pinned)) return;
  throw ir::Error(fmt::format(
      "oneDNN runs {} code in this process (fixed by the first target that used it), but target "
      "'{}' needs {}: oneDNN's instruction set is fixed once per process, so run this target in a "
      "process of its own",
      pinned->name, ir::ToString(target), wanted.name));
}

bool EnsureOnednnIsaFixed() {
  {
    std::lock_guard<std::mutex> lock(pin_mutex);
    if (pinned != nullptr) return true;
  }
  PinOnednnIsa(ir::Target{});
  return true;
}

std::string PinnedOnednnIsa() {
  std::lock_guard<std::mutex> lock(pin_mutex);
  return pinned ? pinned->name : "";
}

}  // namespace tandem::backends
