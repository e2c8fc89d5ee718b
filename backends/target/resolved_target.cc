#include "backends/target/resolved_target.h"

#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "backends/llvm/jit.h"
#include "ir/error.h"

namespace tandem::backends {

namespace {

// "+a,+b,-c" of this processor's features, sorted.
std::string ProcessorFeatures() {
  llvm::StringMap<bool> features;
  std::vector<std::string> listed;
  if (llvm::sys::getHostCPUFeatures(features)) {
    for (const auto& entry : features) {
      std::string feature(1, entry.second ? '+' : '-');
      feature += entry.first().str();
      listed.push_back(std::move(feature));
    }
  }
  std::sort(listed.begin(), listed.end());
  std::string text;
  for (const std::string& feature : listed) text += (text.empty() ? "" : ",") + feature;
  return text;
}

std::unique_ptr<llvm::MCSubtargetInfo> SubtargetOf(const ir::Target& target) {
  CodegenOptions options;
  options.cpu = target.cpu;
  options.features = target.features;
  TargetSpec spec = backends::ResolveTarget(options);
  std::string message;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(spec.triple, message);
  if (!llvm_target)
    throw ir::Error(fmt::format("no LLVM target for '{}': {}", spec.triple, message));
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      llvm_target->createMCSubtargetInfo(spec.triple, spec.cpu, spec.features));
}

}  // namespace

const HostCpu& GetHostCpu() {
  static const HostCpu host = [] {
    HostCpu result;
#ifdef TANDEM_HOST_TARGET
    ir::Target configured = ir::ParseTarget(TANDEM_HOST_TARGET);
    if (configured.cpu == "host") {
      throw ir::Error(
          fmt::format("TANDEM_HOST_TARGET \"{}\" must name a CPU (-cpu=...)", TANDEM_HOST_TARGET));
    }
    result.name = configured.cpu;
    result.features = configured.features;
    result.configured = true;
#else
    result.name = llvm::sys::getHostCPUName().str();
    result.features = ProcessorFeatures();
#endif
    return result;
  }();
  return host;
}

ir::Target ResolveTarget(const ir::Target& target) {
  CheckHasCodeGenerator(target);
  ir::Target resolved = target;
  if (resolved.kind == "cuda") {
    if (resolved.arch.empty()) resolved.arch = ir::CudaArchitectures().front();
    if (resolved.num_threads == 0) resolved.num_threads = 1;
    return resolved;
  }
  if (resolved.cpu == "host" || resolved.cpu.empty()) {
    const HostCpu& host = GetHostCpu();
    resolved.cpu = host.name;
    std::string extra = resolved.features;
    resolved.features = host.features;
    if (!extra.empty()) resolved.features += (resolved.features.empty() ? "" : ",") + extra;
  }
  if (resolved.num_threads == 0) {
    resolved.num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  return resolved;
}

std::vector<std::string> MissingHostFeatures(const ir::Target& target) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = SubtargetOf(target);
  llvm::StringMap<bool> processor;
  std::vector<std::string> missing;
  if (!info || !llvm::sys::getHostCPUFeatures(processor)) return missing;
  for (const auto& entry : processor) {
    if (entry.second) continue;
    std::string feature = entry.first().str();
    if (info->checkFeatures("+" + feature)) missing.push_back(feature);
  }
  std::sort(missing.begin(), missing.end());
  return missing;
}

bool TargetHasFeatures(const ir::Target& target, const std::string& features) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = SubtargetOf(ResolveTarget(target));
  return info && info->checkFeatures(features);
}

int VectorUnitBits(const ir::Target& target) {
  if (target.vector_bits > 0) return target.vector_bits;
  return TargetVectorUnit(target.cpu, target.features).f32_lanes * 32;
}

const std::vector<std::string>& CodeGeneratorKinds() {
  static const std::vector<std::string> kinds = {"llvm", "cuda"};
  return kinds;
}

void CheckHasCodeGenerator(const ir::Target& target) {
  const std::vector<std::string>& kinds = CodeGeneratorKinds();
  if (std::find(kinds.begin(), kinds.end(), target.kind) != kinds.end()) return;
  std::string known;
  for (const std::string& kind : kinds) known += (known.empty() ? "" : ", ") + kind;
  throw ir::Error(
      fmt::format("target kind '{}' has no code generator in this build (code generators: {})",
                  target.kind, known));
}

}  // namespace tandem::backends
