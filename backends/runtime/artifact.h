// The description of an exported model (a deployable artifact): what `tandem export` writes and
// libtandem_runtime loads. An artifact is a shared library (or a relocatable object for static
// linking) holding the kernels as machine code, one function `void symbol(void** buffers)` each
// (the calling convention of backends/llvm/codegen.h), and one read-only payload under the
// symbol kArtifactPayloadSymbol (its length under kArtifactPayloadSizeSymbol): a header and this
// description as JSON, then the constants.
//
// Payload layout (little-endian):
//   bytes 0..7    kArtifactMagic ("TANDEMA\0")
//   bytes 8..11   uint32 format version (kArtifactFormatVersion)
//   bytes 12..15  uint32 reserved (0)
//   bytes 16..23  uint64 length of the JSON description that follows
//   bytes 24..    the JSON description, then zero padding to a multiple of 64, then the
//                 constants, each at a multiple of 64 from the payload's start
//
// DecodeArtifact checks everything a corrupted or hostile payload could get wrong (sizes,
// offsets, indices, overflow) and throws ir::Error naming the field: a description it returns
// never makes the runner read or write outside its buffers. The description holds no compiler
// types, so the runtime library needs nothing of the compiler to read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::backends {

inline constexpr char kArtifactMagic[8] = {'T', 'A', 'N', 'D', 'E', 'M', 'A', '\0'};
inline constexpr uint32_t kArtifactFormatVersion = 1;
inline constexpr const char* kArtifactPayloadSymbol = "tandem_artifact_payload";
// A uint64 beside the payload: its length in bytes.
inline constexpr const char* kArtifactPayloadSizeSymbol = "tandem_artifact_payload_size";
inline constexpr int64_t kArtifactAlignment = 64;

// An input or output of the model: its name in the model, element type and shape.
struct ArtifactTensor {
  std::string name;
  std::string dtype;  // the text form's names: f32, f64, f16, i8, u8, i32, i64, bool
  std::vector<int64_t> shape;
};

// Bytes of one element of `dtype`, or 0 when it is not one of the names above.
int64_t ArtifactDtypeSize(const std::string& dtype);

// Where one value of the execution plan lives when the model runs (see ExecutionPlan).
struct ArtifactSlot {
  enum class Kind { kInput, kConstant, kArena, kOutput };
  Kind kind = Kind::kArena;
  int64_t index = 0;  // input / output number, arena offset, or payload offset of a constant
  int64_t bytes = 0;
};

// One call of the run, in order, with a slot per parameter: a kernel's symbol, or a subgraph run
// by an external backend ("onednn"), stored as the text form of a module holding it (its
// weights included) at [data_offset, data_offset + data_bytes) of the payload and compiled by
// the backend when the artifact loads.
struct ArtifactCall {
  std::string symbol;   // "" for a backend call
  std::string kernel;   // the kernel's (or the subgraph's) name in the module
  std::string backend;  // "" for a kernel
  std::vector<int> args;
  int64_t data_offset = 0;
  int64_t data_bytes = 0;
};

// What the artifact was made from and for. The runtime refuses an artifact whose
// `required_features` the host lacks or whose `format_version` it does not read.
struct ArtifactManifest {
  std::string tandem_version;
  int64_t codegen_version = 0;
  std::string target;                          // the target text it was compiled for
  std::vector<std::string> required_features;  // x86 ISA extensions the code may use (avx2 ...)
  std::string pipeline;
  std::string trace_hash;  // of the pipeline trace the module was rebuilt from ("" if none)
  std::string model_hash;  // structural hash of the imported model
  int64_t threads = 0;     // the thread count it was built for (0: the host's)
  // With backend calls: oneDNN's instruction set (pinned at load) and the version it ran.
  std::string onednn_isa;
  std::string onednn_version;
};

struct Artifact {
  ArtifactManifest manifest;
  std::vector<ArtifactTensor> inputs, outputs;
  std::vector<ArtifactSlot> slots;
  std::vector<ArtifactCall> calls;
  // Outputs that are an input or a constant, or returned twice: copied from `slot` after the run.
  std::vector<std::pair<int, int>> output_copies;  // (slot, output)
  int64_t arena_bytes = 0;
};

// The payload of `artifact` with `constants` (one per kConstant slot, in slot order, each of
// the slot's bytes) and `call_data` (one per call: "" for a kernel, the subgraph's text for a
// backend call): fills in their offsets. Error when the counts differ.
std::string EncodeArtifactPayload(Artifact artifact, const std::vector<const void*>& constant_data,
                                  const std::vector<std::string>& call_data);

// Appended to an exported shared library: the length of the bytes before it and their checksum,
// checked before the library is opened, so that a truncated or corrupted file is an error and
// not a crash of the dynamic loader. 32 bytes: magic, length, checksum, reserved.
inline constexpr char kArtifactTrailerMagic[8] = {'T', 'N', 'D', 'M', 'S', 'U', 'M', '1'};
inline constexpr int64_t kArtifactTrailerBytes = 32;
// The checksum the trailer holds (a 64-bit multiply-xor hash: it detects corruption, it does
// not authenticate; a shared library is code, load only artifacts you trust).
uint64_t ArtifactChecksum(const uint8_t* data, uint64_t size);
// The trailer for `size` bytes whose checksum is `checksum`.
std::string ArtifactTrailer(uint64_t size, uint64_t checksum);

// Reads and checks a payload of `size` bytes at `data` (see the file comment). Constant slots'
// `index` is their offset in the payload.
Artifact DecodeArtifactPayload(const uint8_t* data, uint64_t size);

}  // namespace tandem::backends
