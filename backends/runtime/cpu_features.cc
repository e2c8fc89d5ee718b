#include "backends/runtime/cpu_features.h"

#include <utility>

namespace tandem::backends {

namespace {

// __builtin_cpu_supports takes a string literal only, hence one function per feature.
#define TANDEM_CPU_FEATURE(name)                           \
  {                                                        \
    name, [] { return __builtin_cpu_supports(name) != 0; } \
  }

const std::vector<std::pair<std::string, bool (*)()>>& FeatureTable() {
  static const std::vector<std::pair<std::string, bool (*)()>> table = {
      TANDEM_CPU_FEATURE("popcnt"),       TANDEM_CPU_FEATURE("sse4.1"),
      TANDEM_CPU_FEATURE("sse4.2"),       TANDEM_CPU_FEATURE("avx"),
      TANDEM_CPU_FEATURE("avx2"),         TANDEM_CPU_FEATURE("fma"),
      TANDEM_CPU_FEATURE("bmi"),          TANDEM_CPU_FEATURE("bmi2"),
      TANDEM_CPU_FEATURE("avx512f"),      TANDEM_CPU_FEATURE("avx512vl"),
      TANDEM_CPU_FEATURE("avx512bw"),     TANDEM_CPU_FEATURE("avx512dq"),
      TANDEM_CPU_FEATURE("avx512cd"),     TANDEM_CPU_FEATURE("avx512vnni"),
      TANDEM_CPU_FEATURE("avx512vbmi"),   TANDEM_CPU_FEATURE("avx512ifma"),
      TANDEM_CPU_FEATURE("avx512bf16"),   TANDEM_CPU_FEATURE("avx512vpopcntdq"),
      TANDEM_CPU_FEATURE("avx512bitalg"), TANDEM_CPU_FEATURE("avx512vbmi2"),
      TANDEM_CPU_FEATURE("gfni"),         TANDEM_CPU_FEATURE("vpclmulqdq"),
  };
  return table;
}

#undef TANDEM_CPU_FEATURE

}  // namespace

const std::vector<std::string>& CheckableCpuFeatures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, supported] : FeatureTable()) out.push_back(name);
    return out;
  }();
  return names;
}

bool HostHasCpuFeature(const std::string& feature) {
  __builtin_cpu_init();
  for (const auto& [name, supported] : FeatureTable()) {
    if (name == feature) return supported();
  }
  return false;
}

}  // namespace tandem::backends
