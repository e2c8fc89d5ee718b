#include "backends/runtime/artifact_model.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "backends/onednn/onednn_compiler.h"
#include "backends/onednn/onednn_isa_pinning.h"
#include "backends/runtime/cpu_features.h"
#include "backends/runtime/thread_pool.h"
#include "ir/aligned_memory.h"
#include "ir/error.h"
#include "ir/parser.h"

namespace tandem::backends {

namespace {

constexpr uint16_t kElfSharedObject = 3;
constexpr uint16_t kElfMachineX86_64 = 62;

bool Aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kArtifactAlignment == 0;
}

std::string MachineName(uint16_t machine) {
  switch (machine) {
    case 3:
      return "x86 (32-bit)";
    case 40:
      return "ARM";
    case 183:
      return "AArch64";
    case 243:
      return "RISC-V";
    case 21:
      return "PowerPC 64";
    default:
      return fmt::format("ELF machine {}", machine);
  }
}

using LoadFailure = ArtifactModel::LoadFailure;

// Step 1: the file's ELF header and trailer.
void CheckFile(const std::string& path, LoadFailure& kind) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ir::Error(fmt::format("cannot open the artifact '{}'", path));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  if (bytes.size() < 64 || std::memcmp(bytes.data(),
                                       "\x7f"
                                       "ELF",
                                       4) != 0) {
    throw ir::Error(fmt::format("'{}' is not an exported model (not an ELF file)", path));
  }
  uint16_t type = 0, machine = 0;
  std::memcpy(&type, bytes.data() + 16, 2);
  std::memcpy(&machine, bytes.data() + 18, 2);
  if (bytes[4] != 2 || bytes[5] != 1 || machine != kElfMachineX86_64) {
    kind = LoadFailure::kIncompatible;
    throw ir::Error(fmt::format("'{}' was built for {}, and this runtime runs x86-64 code", path,
                                bytes[4] != 2 ? "a 32-bit machine" : MachineName(machine)));
  }
  if (type != kElfSharedObject) {
    kind = LoadFailure::kIncompatible;
    throw ir::Error(
        fmt::format("'{}' is not a shared library (ELF type {}): export the model "
                    "with --format shared to load it",
                    path, type));
  }
  if (bytes.size() < static_cast<size_t>(kArtifactTrailerBytes) + 64) {
    throw ir::Error(fmt::format("'{}' is truncated (no artifact trailer)", path));
  }
  const uint8_t* trailer = bytes.data() + bytes.size() - kArtifactTrailerBytes;
  uint64_t length = 0, checksum = 0;
  std::memcpy(&length, trailer + 8, 8);
  std::memcpy(&checksum, trailer + 16, 8);
  if (std::memcmp(trailer, kArtifactTrailerMagic, 8) != 0 ||
      length != bytes.size() - kArtifactTrailerBytes) {
    throw ir::Error(
        fmt::format("'{}' is truncated or was not written by tandem export (its "
                    "artifact trailer is missing or does not match its size)",
                    path));
  }
  if (ArtifactChecksum(bytes.data(), length) != checksum) {
    throw ir::Error(fmt::format("'{}' is corrupt (its checksum does not match)", path));
  }
}

// A backend call's subgraph, parsed from the payload and compiled by oneDNN under the
// instruction set the manifest records.
std::unique_ptr<ExternalFunction> CompileSubgraph(const std::string& what,
                                                  const ArtifactManifest& manifest,
                                                  const ArtifactCall& call, const uint8_t* payload,
                                                  LoadFailure& kind) {
  const dnnl_version_t* version = dnnl_version();
  std::string here = fmt::format("{}.{}", version->major, version->minor);
  if (manifest.onednn_version.rfind(here + ".", 0) != 0 && manifest.onednn_version != here) {
    kind = LoadFailure::kIncompatible;
    throw ir::Error(fmt::format("{} was exported with oneDNN {}, and this runtime has oneDNN {}.{}",
                                what, manifest.onednn_version, here, version->patch));
  }
  std::string text(reinterpret_cast<const char*>(payload + call.data_offset),
                   static_cast<size_t>(call.data_bytes));
  ir::IRModule module;
  try {
    module = ir::ParseModule(text);
    module.Get(call.kernel);
  } catch (const ir::Error& e) {
    throw ir::Error(fmt::format("{}: the subgraph of call '{}' does not parse: {}", what,
                                call.kernel, e.what()));
  }
  kind = LoadFailure::kIncompatible;
  PinOnednnIsaByName(manifest.onednn_isa, what);
  std::unique_ptr<ExternalFunction> compiled = CompileOnednnSubgraph(module.Get(call.kernel));
  kind = LoadFailure::kFile;
  return compiled;
}

}  // namespace

std::unique_ptr<ArtifactModel> ArtifactModel::Load(const std::string& path, LoadFailure* failure) {
  LoadFailure kind = LoadFailure::kFile;
  try {
    return LoadChecked(path, kind);
  } catch (const ir::Error&) {
    if (failure != nullptr) *failure = kind;
    throw;
  }
}

std::unique_ptr<ArtifactModel> ArtifactModel::LoadChecked(const std::string& path,
                                                          LoadFailure& kind) {
  CheckFile(path, kind);
  auto model = std::unique_ptr<ArtifactModel>(new ArtifactModel());
  model->path_ = path;
  // 2. The library and its payload.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  model->library_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (model->library_ == nullptr) {
    const char* why = dlerror();
    throw ir::Error(fmt::format("cannot load the artifact '{}': {}", path, why ? why : "?"));
  }
  const auto* payload = static_cast<const uint8_t*>(dlsym(model->library_, kArtifactPayloadSymbol));
  const auto* size =
      static_cast<const uint64_t*>(dlsym(model->library_, kArtifactPayloadSizeSymbol));
  if (payload == nullptr || size == nullptr) {
    throw ir::Error(fmt::format("'{}' is a shared library but not an exported model (no {})", path,
                                kArtifactPayloadSymbol));
  }
  void* library = model->library_;
  model->Finish(
      fmt::format("'{}'", path), payload, *size,
      [library](const std::string& symbol) {
        return reinterpret_cast<KernelEntry>(dlsym(library, symbol.c_str()));
      },
      kind);
  return model;
}

std::unique_ptr<ArtifactModel> ArtifactModel::LoadLinked(
    const std::string& name, const uint8_t* payload, uint64_t size,
    const std::map<std::string, KernelEntry>& kernels, LoadFailure* failure) {
  LoadFailure kind = LoadFailure::kFile;
  try {
    auto model = std::unique_ptr<ArtifactModel>(new ArtifactModel());
    model->Finish(
        fmt::format("the linked model {}", name), payload, size,
        [&kernels](const std::string& symbol) {
          auto found = kernels.find(symbol);
          return found == kernels.end() ? nullptr : found->second;
        },
        kind);
    return model;
  } catch (const ir::Error&) {
    if (failure != nullptr) *failure = kind;
    throw;
  }
}

void ArtifactModel::Finish(const std::string& what, const uint8_t* payload, uint64_t size,
                           const std::function<KernelEntry(const std::string&)>& lookup,
                           LoadFailure& kind) {
  try {
    uint32_t version = 0;
    bool magic = payload != nullptr && size >= 12 && std::memcmp(payload, kArtifactMagic, 8) == 0;
    if (magic) std::memcpy(&version, payload + 8, 4);
    if (magic && version != kArtifactFormatVersion) kind = LoadFailure::kIncompatible;
    artifact_ = DecodeArtifactPayload(payload, size);
  } catch (const ir::Error& e) {
    throw ir::Error(fmt::format("{}: {}", what, e.message()));
  }
  kind = LoadFailure::kFile;
  payload_ = payload;
  const Artifact& a = artifact_;
  // 3. The host.
  std::vector<std::string> missing;
  for (const std::string& feature : a.manifest.required_features) {
    if (!HostHasCpuFeature(feature)) missing.push_back(feature);
  }
  if (!missing.empty()) {
    kind = LoadFailure::kIncompatible;
    throw ir::Error(fmt::format(
        "{} was compiled for '{}' and needs CPU features this machine lacks: {} (export it "
        "again for this machine's target)",
        what, a.manifest.target, fmt::join(missing, ", ")));
  }
  // 4. Kernels, backend subgraphs, sizes and buffers.
  for (const ArtifactCall& call : a.calls) {
    entries_.push_back(nullptr);
    externals_.push_back(nullptr);
    if (!call.backend.empty()) {
      externals_.back() = CompileSubgraph(what, a.manifest, call, payload, kind);
      runs_on_openmp_ = runs_on_openmp_ || externals_.back()->runs_on_openmp();
      continue;
    }
    KernelEntry entry = lookup(call.symbol);
    if (entry == nullptr) {
      throw ir::Error(fmt::format("{} has no code for kernel '{}' (symbol {})", what, call.kernel,
                                  call.symbol));
    }
    entries_.back() = entry;
  }
  auto bytes_of = [](const ArtifactTensor& t) {
    int64_t n = ArtifactDtypeSize(t.dtype);
    for (int64_t extent : t.shape) n *= extent;  // checked against overflow when decoded
    return n;
  };
  for (const ArtifactTensor& t : a.inputs) input_bytes_.push_back(bytes_of(t));
  for (const ArtifactTensor& t : a.outputs) output_bytes_.push_back(bytes_of(t));
  if (a.arena_bytes > 0) arena_ = ir::AllocateAligned(a.arena_bytes, "the model's intermediates");
  staging_.resize(a.inputs.size() + a.outputs.size());
  pointers_.assign(a.slots.size(), nullptr);
}

ArtifactModel::~ArtifactModel() {
  if (library_ != nullptr) dlclose(library_);
}

void ArtifactModel::Run(const void* const* inputs, void* const* outputs) {
  const Artifact& a = artifact_;
  size_t num_inputs = a.inputs.size();
  // Unaligned buffers go through aligned staging copies.
  std::vector<void*> in(num_inputs), out(a.outputs.size());
  for (size_t i = 0; i < num_inputs; ++i) {
    in[i] = const_cast<void*>(inputs[i]);
    if (Aligned(in[i])) continue;
    if (!staging_[i]) staging_[i] = ir::AllocateAligned(input_bytes_[i], "an input's aligned copy");
    std::memcpy(staging_[i].get(), inputs[i], static_cast<size_t>(input_bytes_[i]));
    in[i] = staging_[i].get();
  }
  for (size_t o = 0; o < out.size(); ++o) {
    out[o] = outputs[o];
    if (Aligned(out[o])) continue;
    std::shared_ptr<uint8_t>& stage = staging_[num_inputs + o];
    if (!stage) stage = ir::AllocateAligned(output_bytes_[o], "an output's aligned copy");
    out[o] = stage.get();
  }
  for (size_t s = 0; s < a.slots.size(); ++s) {
    const ArtifactSlot& slot = a.slots[s];
    size_t index = static_cast<size_t>(slot.index);
    switch (slot.kind) {
      case ArtifactSlot::Kind::kInput:
        pointers_[s] = in[index];
        break;
      case ArtifactSlot::Kind::kOutput:
        pointers_[s] = out[index];
        break;
      case ArtifactSlot::Kind::kConstant:
        pointers_[s] = const_cast<uint8_t*>(payload_ + slot.index);
        break;
      case ArtifactSlot::Kind::kArena:
        pointers_[s] = arena_.get() + slot.index;
        break;
    }
  }
  OpenMPTeamScope team(runs_on_openmp_);
  for (size_t c = 0; c < a.calls.size(); ++c) {
    const ArtifactCall& call = a.calls[c];
    arguments_.resize(call.args.size());
    for (size_t k = 0; k < call.args.size(); ++k) {
      arguments_[k] = pointers_[static_cast<size_t>(call.args[k])];
    }
    if (externals_[c]) {
      externals_[c]->Run(arguments_.data());
    } else {
      entries_[c](arguments_.data());
    }
    if (std::exception_ptr error = TakeParallelForError()) {
      RethrowParallelForError(error, externals_[c] ? "call_extern" : "kernel", call.kernel,
                              call.backend);
    }
  }
  for (const auto& [slot, output] : a.output_copies) {
    std::memcpy(out[static_cast<size_t>(output)], pointers_[static_cast<size_t>(slot)],
                static_cast<size_t>(output_bytes_[static_cast<size_t>(output)]));
  }
  for (size_t o = 0; o < out.size(); ++o) {
    if (out[o] != outputs[o]) {
      std::memcpy(outputs[o], out[o], static_cast<size_t>(output_bytes_[o]));
    }
  }
}

}  // namespace tandem::backends
