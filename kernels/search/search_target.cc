// SearchTarget: the GPU targets by architecture and the JSON form (kernels/search/search_space.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "kernels/search/search_space.h"

namespace tandem::kernels {

SearchTarget GpuSearchTarget(const std::string& arch) {
  SearchTarget target;
  target.gpu = true;
  target.gpu_arch = arch;
  target.unroll_depths = {0, 16, 64, 512, 1024};
  target.max_innermost_factor = 64;
  // Both architectures: 1024 threads and 64 Ki registers per block, 48 KiB of static shared
  // memory per block (more only through dynamic shared memory, which the code generator does not
  // use), warps of 32 threads.
  if (arch == "sm_80") {
    target.sm_count = 108;  // A100
  } else if (arch == "sm_90") {
    target.sm_count = 132;  // H100, H200
  } else {
    throw ir::Error(
        fmt::format("search target: unknown GPU architecture '{}' (known: sm_80, sm_90)", arch));
  }
  return target;
}

std::string SearchTargetToJson(const SearchTarget& target) {
  nlohmann::json json = {{"vector_lanes", target.vector_lanes},
                         {"num_cores", target.num_cores},
                         {"fma_per_cycle", target.core.fma_per_cycle},
                         {"l1_data_ways", target.core.l1_data_ways},
                         {"l1_data_bytes", target.core.l1_data_bytes},
                         {"l2_ways", target.core.l2_ways},
                         {"l2_bytes", target.core.l2_bytes},
                         {"max_innermost_factor", target.max_innermost_factor},
                         {"unroll_depths", target.unroll_depths},
                         {"gpu", target.gpu},
                         {"gpu_arch", target.gpu_arch},
                         {"max_threads_per_block", target.max_threads_per_block},
                         {"max_shared_memory_per_block", target.max_shared_memory_per_block},
                         {"registers_per_block", target.registers_per_block},
                         {"max_registers_per_thread", target.max_registers_per_thread},
                         {"warp_size", target.warp_size},
                         {"sm_count", target.sm_count}};
  return json.dump();
}

namespace {

template <typename T>
void Read(const nlohmann::json& json, const char* key, T& field) {
  auto it = json.find(key);
  if (it == json.end()) return;
  try {
    field = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ir::Error(fmt::format("search target JSON: field '{}' has the wrong type ({})", key,
                                it->type_name()));
  }
}

}  // namespace

SearchTarget SearchTargetFromJson(const std::string& text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_object()) throw ir::Error("search target JSON: not a JSON object");
  SearchTarget target;
  Read(json, "vector_lanes", target.vector_lanes);
  Read(json, "num_cores", target.num_cores);
  Read(json, "fma_per_cycle", target.core.fma_per_cycle);
  Read(json, "l1_data_ways", target.core.l1_data_ways);
  Read(json, "l1_data_bytes", target.core.l1_data_bytes);
  Read(json, "l2_ways", target.core.l2_ways);
  Read(json, "l2_bytes", target.core.l2_bytes);
  Read(json, "max_innermost_factor", target.max_innermost_factor);
  Read(json, "unroll_depths", target.unroll_depths);
  Read(json, "gpu", target.gpu);
  Read(json, "gpu_arch", target.gpu_arch);
  Read(json, "max_threads_per_block", target.max_threads_per_block);
  Read(json, "max_shared_memory_per_block", target.max_shared_memory_per_block);
  Read(json, "registers_per_block", target.registers_per_block);
  Read(json, "max_registers_per_thread", target.max_registers_per_thread);
  Read(json, "warp_size", target.warp_size);
  Read(json, "sm_count", target.sm_count);
  return target;
}

}  // namespace tandem::kernels
