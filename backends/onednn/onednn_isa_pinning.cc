#include "backends/onednn/onednn_isa_pinning.h"

#include <fmt/format.h>

#include <mutex>

#include "ir/error.h"

namespace tandem::backends {

namespace {

bool Includes(const OnednnIsaEntry& larger, const OnednnIsaEntry& smaller) {
  auto big = static_cast<unsigned>(larger.value), small = static_cast<unsigned>(smaller.value);
  return (big & small) == small;
}

std::mutex pin_mutex;
const OnednnIsaEntry* pinned = nullptr;

}  // namespace

const std::vector<OnednnIsaEntry>& OnednnIsas() {
  // oneDNN's instruction sets are bit masks: one includes another when it has all of its bits.
  static const std::vector<OnednnIsaEntry> isas = {
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
  return isas;
}

void PinOnednnIsaEntry(const OnednnIsaEntry& wanted, bool limit, const std::string& wanted_for) {
  std::lock_guard<std::mutex> lock(pin_mutex);
  if (pinned == nullptr) {
    if (limit) {
      bool set = dnnl::set_max_cpu_isa(wanted.value) == dnnl::status::success;
      if (!set && dnnl::get_effective_cpu_isa() != wanted.value) {
        throw ir::Error(fmt::format(
            "cannot limit oneDNN to {} for {}: oneDNN has already dispatched in this process",
            wanted.name, wanted_for));
      }
    }
    pinned = &wanted;
    return;
  }
  if (pinned == &wanted || Includes(wanted, *pinned)) return;
  throw ir::Error(fmt::format(
      "oneDNN runs {} code in this process (fixed by the first target that used it), but {} "
      "needs {}: oneDNN's instruction set is fixed once per process, so run it in a process of "
      "its own",
      pinned->name, wanted_for, wanted.name));
}

void PinOnednnIsaByName(const std::string& name, const std::string& wanted_for) {
  for (const OnednnIsaEntry& isa : OnednnIsas()) {
    if (name == isa.name) return PinOnednnIsaEntry(isa, /*limit=*/true, wanted_for);
  }
  throw ir::Error(
      fmt::format("{} needs oneDNN instruction set '{}', which this oneDNN does not "
                  "know",
                  wanted_for, name));
}

std::string PinnedOnednnIsa() {
  std::lock_guard<std::mutex> lock(pin_mutex);
  return pinned ? pinned->name : "";
}

}  // namespace tandem::backends
