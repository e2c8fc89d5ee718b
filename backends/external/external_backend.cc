#include "backends/external/external_backend.h"

#include <unistd.h>

#include <fmt/format.h>

#include <atomic>

#include "ir/error.h"

namespace tandem::backends {

namespace {

// The process that initialized CUDA (0: none). A forked child inherits the value, so a child of
// a process that initialized it finds another process's pid here.
std::atomic<pid_t> cuda_initialized_by{0};

}  // namespace

CudaState CudaStateOfThisProcess() {
  pid_t by = cuda_initialized_by.load();
  if (by == 0) return CudaState::kUntouched;
  return by == getpid() ? CudaState::kInitializedHere : CudaState::kInheritedFromParent;
}

bool MayInitializeCuda(std::string* why) {
  pid_t expected = 0;
  pid_t self = getpid();
  if (cuda_initialized_by.compare_exchange_strong(expected, self) || expected == self) return true;
  if (why) {
    *why = fmt::format(
        "CUDA cannot be used in this process: it was forked from process {}, which had "
        "initialized CUDA",
        expected);
  }
  return false;
}

// Defined by each backend compiled into this build (backends/onednn, backends/cublas).
void RegisterOnednnBackend(ExternalBackendRegistry& registry);
#ifdef TANDEM_HAVE_CUDA
void RegisterCublasBackend(ExternalBackendRegistry& registry);
#endif

ExternalBackendRegistry& ExternalBackendRegistry::Global() {
  static ExternalBackendRegistry* registry = [] {
    auto* r = new ExternalBackendRegistry();
    RegisterOnednnBackend(*r);
#ifdef TANDEM_HAVE_CUDA
    RegisterCublasBackend(*r);
#endif
    return r;
  }();
  return *registry;
}

void ExternalBackendRegistry::Register(std::shared_ptr<const ExternalBackend> backend) {
  std::string name = backend->name();
  if (backends_.count(name)) {
    throw ir::Error(fmt::format("external backend '{}' is registered twice", name));
  }
  backends_[name] = std::move(backend);
}

const ExternalBackend* ExternalBackendRegistry::Find(const std::string& name) const {
  auto it = backends_.find(name);
  return it == backends_.end() ? nullptr : it->second.get();
}

const ExternalBackend& ExternalBackendRegistry::Get(const std::string& name) const {
  if (const ExternalBackend* backend = Find(name)) return *backend;
  throw ir::Error(fmt::format("unknown external backend '{}' (this build has: {})", name,
                              fmt::join(Names(), ", ")));
}

std::vector<std::string> ExternalBackendRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, backend] : backends_) names.push_back(name);
  return names;
}

std::vector<const ExternalBackend*> ExternalBackendRegistry::AvailableBackends() const {
  std::vector<const ExternalBackend*> out;
  for (const auto& [name, backend] : backends_) {
    if (backend->Available()) out.push_back(backend.get());
  }
  return out;
}

std::vector<PatternMatch> FindMatches(const ir::GraphFunction& function,
                                      const ExternalBackend& backend) {
  std::vector<PatternMatch> all;
  for (const Pattern& pattern : backend.patterns()) {
    std::vector<PatternMatch> found = FindMatches(function, pattern, backend.name());
    all.insert(all.end(), found.begin(), found.end());
  }
  return all;
}

}  // namespace tandem::backends
