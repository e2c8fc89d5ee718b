// A model loaded from an exported artifact (a shared library written by `tandem export`, see
// artifact.h): its kernels' machine code, its constants and its execution plan, run with nothing
// of the compiler in the process. This is what libtandem_runtime's C API wraps.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/external/external_backend.h"
#include "backends/runtime/artifact.h"

namespace tandem::backends {

class ArtifactModel {
 public:
  // Loads the artifact at `path`. Steps:
  //   1. the file: an ELF 64-bit x86-64 shared object, ending in a trailer whose length and
  //      checksum match the bytes before it;
  //   2. the library opened (dlopen) and its payload decoded and checked (DecodeArtifactPayload);
  //   3. the host checked for every CPU feature the manifest requires;
  //   4. every call's kernel symbol looked up, every backend call's subgraph parsed and compiled
  //      by its backend (oneDNN, pinned to the instruction set the manifest records), the arena
  //      allocated.
  // Error (ir::Error, with the file) naming what is wrong at the first step that fails; then
  // `failure`, when given, says whether the file is unreadable or damaged (kFile) or sound but
  // not for this runtime or host (kIncompatible).
  enum class LoadFailure { kNone, kFile, kIncompatible };
  static std::unique_ptr<ArtifactModel> Load(const std::string& path,
                                             LoadFailure* failure = nullptr);
  // A model exported with --format object and linked into this program: its payload and its
  // kernels by symbol (the table the object defines). Steps 2 to 4 of Load; `name` for messages.
  using KernelEntry = void (*)(void** buffers);
  static std::unique_ptr<ArtifactModel> LoadLinked(
      const std::string& name, const uint8_t* payload, uint64_t size,
      const std::map<std::string, KernelEntry>& kernels, LoadFailure* failure = nullptr);
  ~ArtifactModel();
  ArtifactModel(const ArtifactModel&) = delete;
  ArtifactModel& operator=(const ArtifactModel&) = delete;

  const Artifact& artifact() const { return artifact_; }
  const std::vector<ArtifactTensor>& inputs() const { return artifact_.inputs; }
  const std::vector<ArtifactTensor>& outputs() const { return artifact_.outputs; }
  // Bytes of input / output `index` (dense, row-major).
  int64_t input_bytes(size_t index) const { return input_bytes_.at(index); }
  int64_t output_bytes(size_t index) const { return output_bytes_.at(index); }

  // Runs the model: inputs[i] holds input i, outputs[i] receives output i (dense, row-major, of
  // input_bytes(i) / output_bytes(i) bytes; outputs must not overlap each other or the inputs).
  // Buffers that are not 64-byte aligned are staged through aligned copies. One run at a time
  // per model. Error naming the kernel when a parallel loop of one failed.
  void Run(const void* const* inputs, void* const* outputs);

 private:
  ArtifactModel() = default;
  static std::unique_ptr<ArtifactModel> LoadChecked(const std::string& path, LoadFailure& kind);
  // Steps 2 (decoding) to 4 of Load for a payload whose kernels `lookup` finds by symbol.
  void Finish(const std::string& what, const uint8_t* payload, uint64_t size,
              const std::function<KernelEntry(const std::string&)>& lookup, LoadFailure& kind);

  std::string path_;
  void* library_ = nullptr;
  Artifact artifact_;
  const uint8_t* payload_ = nullptr;
  std::vector<KernelEntry> entries_;                          // per call; null for a backend call
  std::vector<std::unique_ptr<ExternalFunction>> externals_;  // per call; null for a kernel
  bool runs_on_openmp_ = false;
  std::vector<int64_t> input_bytes_, output_bytes_;
  std::shared_ptr<uint8_t> arena_;
  std::vector<std::shared_ptr<uint8_t>> staging_;  // per input, then per output
  std::vector<void*> pointers_;                    // per slot
  std::vector<void*> arguments_;
};

}  // namespace tandem::backends
