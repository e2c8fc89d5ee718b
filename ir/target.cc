#include "ir/target.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

#include "ir/error.h"

namespace tandem::ir {

const std::vector<std::string>& CudaArchitectures() {
  static const std::vector<std::string> kArchitectures = {"sm_80", "sm_90"};
  return kArchitectures;
}

std::string ToString(const Target& t) {
  std::string s = t.kind;
  if (t.cpu != "host") s += " -cpu=" + t.cpu;
  if (!t.features.empty()) s += " -features=" + t.features;
  if (t.num_threads != 0) s += fmt::format(" -threads={}", t.num_threads);
  if (t.vector_bits != 0) s += fmt::format(" -vector-bits={}", t.vector_bits);
  if (!t.arch.empty()) s += " -arch=" + t.arch;
  return s;
}

Target ParseTarget(const std::string& text) {
  std::istringstream in(text);
  Target t;
  if (!(in >> t.kind)) throw Error("empty target");
  if (t.kind != "llvm" && t.kind != "cuda") {
    throw Error(fmt::format("unknown target kind '{}' (expected llvm or cuda)", t.kind));
  }
  std::string option;
  while (in >> option) {
    auto eq = option.find('=');
    if (option.rfind("-", 0) != 0 || eq == std::string::npos) {
      throw Error(fmt::format("target option '{}' must look like -key=value", option));
    }
    std::string key = option.substr(1, eq - 1), value = option.substr(eq + 1);
    auto to_int = [&](const std::string& v) {
      try {
        size_t used = 0;
        int n = std::stoi(v, &used);
        if (used != v.size() || n < 0) throw std::invalid_argument(v);
        return n;
      } catch (const std::exception&) {
        throw Error(
            fmt::format("target option -{} needs a non-negative integer, not '{}'", key, v));
      }
    };
    bool cuda = t.kind == "cuda";
    if (cuda ? key == "cpu" || key == "features" || key == "vector-bits" : key == "arch") {
      throw Error(fmt::format("target option -{} does not apply to the {} target", key, t.kind));
    }
    if (key == "cpu")
      t.cpu = value;
    else if (key == "features")
      t.features = value;
    else if (key == "threads")
      t.num_threads = to_int(value);
    else if (key == "vector-bits")
      t.vector_bits = to_int(value);
    else if (key == "arch") {
      const auto& known = CudaArchitectures();
      if (std::find(known.begin(), known.end(), value) == known.end()) {
        throw Error(fmt::format("unknown CUDA architecture -arch={} (supported: {})", value,
                                fmt::join(known, ", ")));
      }
      t.arch = value;
    } else {
      throw Error(fmt::format("unknown target option -{} (known: {})", key,
                              cuda ? "arch, threads" : "cpu, features, threads, vector-bits"));
    }
  }
  return t;
}

}  // namespace tandem::ir
