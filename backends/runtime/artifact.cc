#include "backends/runtime/artifact.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "ir/error.h"

namespace tandem::backends {

namespace {

using nlohmann::json;

constexpr uint64_t kHeaderBytes = 24;
// Limits that keep a hostile description from asking for absurd work before anything runs.
constexpr size_t kMaxEntries = size_t{1} << 20;
constexpr size_t kMaxRank = 16;

int64_t AlignUp(int64_t value) {
  return (value + kArtifactAlignment - 1) / kArtifactAlignment * kArtifactAlignment;
}

const char* KindName(ArtifactSlot::Kind kind) {
  switch (kind) {
    case ArtifactSlot::Kind::kInput:
      return "input";
    case ArtifactSlot::Kind::kConstant:
      return "constant";
    case ArtifactSlot::Kind::kArena:
      return "arena";
    case ArtifactSlot::Kind::kOutput:
      return "output";
  }
  return "?";
}

json TensorJson(const ArtifactTensor& t) {
  return json{{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
}

// Errors of a payload that does not decode name the field.
[[noreturn]] void Bad(const std::string& what) {
  throw ir::Error(fmt::format("the artifact's description is corrupt: {}", what));
}

const json& Field(const json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) Bad(fmt::format("{} has no '{}'", where, key));
  return object.at(key);
}

std::string StringField(const json& object, const char* key, const std::string& where) {
  const json& v = Field(object, key, where);
  if (!v.is_string()) Bad(fmt::format("{}.{} is not a string", where, key));
  return v.get<std::string>();
}

int64_t IntField(const json& object, const char* key, const std::string& where, int64_t lo,
                 int64_t hi) {
  const json& v = Field(object, key, where);
  if (!v.is_number_integer()) Bad(fmt::format("{}.{} is not an integer", where, key));
  int64_t value = v.get<int64_t>();
  if (value < lo || value > hi) {
    Bad(fmt::format("{}.{} = {} is outside [{}, {}]", where, key, value, lo, hi));
  }
  return value;
}

const json& ArrayField(const json& object, const char* key, const std::string& where) {
  const json& v = Field(object, key, where);
  if (!v.is_array()) Bad(fmt::format("{}.{} is not an array", where, key));
  if (v.size() > kMaxEntries) Bad(fmt::format("{}.{} has too many entries", where, key));
  return v;
}

// The tensor at `where`, with its size in bytes checked against overflow.
ArtifactTensor DecodeTensor(const json& j, const std::string& where, int64_t& bytes) {
  ArtifactTensor t;
  t.name = StringField(j, "name", where);
  t.dtype = StringField(j, "dtype", where);
  bytes = ArtifactDtypeSize(t.dtype);
  if (bytes == 0) Bad(fmt::format("{} has the unknown element type '{}'", where, t.dtype));
  const json& shape = ArrayField(j, "shape", where);
  if (shape.size() > kMaxRank) Bad(fmt::format("{} has rank {}", where, shape.size()));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_number_integer()) Bad(fmt::format("{}.shape[{}] is not an integer", where, d));
    int64_t extent = shape[d].get<int64_t>();
    if (extent < 0 || (extent > 0 && bytes > std::numeric_limits<int64_t>::max() / extent)) {
      Bad(fmt::format("{}.shape[{}] = {} is negative or too large", where, d, extent));
    }
    bytes *= extent;
    t.shape.push_back(extent);
  }
  return t;
}

std::vector<ArtifactTensor> DecodeTensors(const json& j, const char* key,
                                          std::vector<int64_t>& bytes) {
  std::vector<ArtifactTensor> out;
  const json& list = ArrayField(j, key, "description");
  for (size_t i = 0; i < list.size(); ++i) {
    int64_t b = 0;
    out.push_back(DecodeTensor(list[i], fmt::format("{}[{}]", key, i), b));
    bytes.push_back(b);
  }
  return out;
}

}  // namespace

int64_t ArtifactDtypeSize(const std::string& dtype) {
  if (dtype == "f32" || dtype == "i32") return 4;
  if (dtype == "f64" || dtype == "i64") return 8;
  if (dtype == "f16") return 2;
  if (dtype == "i8" || dtype == "u8" || dtype == "bool") return 1;
  return 0;
}

std::string EncodeArtifactPayload(Artifact artifact, const std::vector<const void*>& constant_data,
                                  const std::vector<std::string>& call_data) {
  // 1. The constants' offsets, after the header and the description (whose length depends on
  // the offsets: lay the constants out from a bound on that length, then pad up to it).
  size_t constants = 0;
  for (const ArtifactSlot& slot : artifact.slots) {
    constants += slot.kind == ArtifactSlot::Kind::kConstant;
  }
  if (constants != constant_data.size() || call_data.size() != artifact.calls.size()) {
    throw ir::Error(fmt::format(
        "EncodeArtifactPayload: {} constant slots but {} constants, {} calls but {} call data",
        constants, constant_data.size(), artifact.calls.size(), call_data.size()));
  }
  auto describe = [&]() {
    json j;
    const ArtifactManifest& m = artifact.manifest;
    j["manifest"] = json{{"tandem_version", m.tandem_version},
                         {"codegen_version", m.codegen_version},
                         {"target", m.target},
                         {"required_features", m.required_features},
                         {"pipeline", m.pipeline},
                         {"trace_hash", m.trace_hash},
                         {"model_hash", m.model_hash},
                         {"threads", m.threads},
                         {"onednn_isa", m.onednn_isa},
                         {"onednn_version", m.onednn_version}};
    j["inputs"] = json::array();
    for (const ArtifactTensor& t : artifact.inputs) j["inputs"].push_back(TensorJson(t));
    j["outputs"] = json::array();
    for (const ArtifactTensor& t : artifact.outputs) j["outputs"].push_back(TensorJson(t));
    j["slots"] = json::array();
    for (const ArtifactSlot& s : artifact.slots) {
      j["slots"].push_back(
          json{{"kind", KindName(s.kind)}, {"index", s.index}, {"bytes", s.bytes}});
    }
    j["calls"] = json::array();
    for (const ArtifactCall& c : artifact.calls) {
      j["calls"].push_back(json{{"symbol", c.symbol},
                                {"kernel", c.kernel},
                                {"backend", c.backend},
                                {"args", c.args},
                                {"data_offset", c.data_offset},
                                {"data_bytes", c.data_bytes}});
    }
    j["output_copies"] = json::array();
    for (const auto& [slot, output] : artifact.output_copies) {
      j["output_copies"].push_back(json{{"slot", slot}, {"output", output}});
    }
    j["arena_bytes"] = artifact.arena_bytes;
    return j.dump();
  };
  // Offsets are at most 20 digits each: reserve that much for every constant's index.
  for (ArtifactSlot& slot : artifact.slots) {
    if (slot.kind == ArtifactSlot::Kind::kConstant) slot.index = 0;
  }
  for (size_t c = 0; c < artifact.calls.size(); ++c) {
    artifact.calls[c].data_offset = 0;
    artifact.calls[c].data_bytes = static_cast<int64_t>(call_data[c].size());
  }
  int64_t description_bound = static_cast<int64_t>(describe().size()) +
                              20 * static_cast<int64_t>(constants + artifact.calls.size());
  int64_t offset = AlignUp(static_cast<int64_t>(kHeaderBytes) + description_bound);
  for (ArtifactSlot& slot : artifact.slots) {
    if (slot.kind != ArtifactSlot::Kind::kConstant) continue;
    slot.index = offset;
    offset = AlignUp(offset + slot.bytes);
  }
  for (ArtifactCall& call : artifact.calls) {
    if (call.data_bytes == 0) continue;
    call.data_offset = offset;
    offset = AlignUp(offset + call.data_bytes);
  }
  std::string description = describe();
  // 2. Header, description, padding, constants.
  std::string payload(static_cast<size_t>(offset), '\0');
  std::memcpy(payload.data(), kArtifactMagic, 8);
  uint32_t version = kArtifactFormatVersion;
  std::memcpy(payload.data() + 8, &version, 4);
  uint64_t length = description.size();
  std::memcpy(payload.data() + 16, &length, 8);
  std::memcpy(payload.data() + kHeaderBytes, description.data(), description.size());
  size_t c = 0;
  for (const ArtifactSlot& slot : artifact.slots) {
    if (slot.kind != ArtifactSlot::Kind::kConstant) continue;
    std::memcpy(payload.data() + slot.index, constant_data[c++], static_cast<size_t>(slot.bytes));
  }
  for (size_t k = 0; k < artifact.calls.size(); ++k) {
    const ArtifactCall& call = artifact.calls[k];
    if (call.data_bytes > 0) {
      std::memcpy(payload.data() + call.data_offset, call_data[k].data(), call_data[k].size());
    }
  }
  return payload;
}

uint64_t ArtifactChecksum(const uint8_t* data, uint64_t size) {
  // Four independent lanes over 8-byte words, then the tail and the length mixed in.
  constexpr uint64_t kPrime = 0x9E3779B97F4A7C15ull;
  uint64_t lanes[4] = {1, 2, 3, 4};
  uint64_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t word = 0;
      std::memcpy(&word, data + i + 8 * k, 8);
      lanes[k] = (lanes[k] ^ word) * kPrime;
      lanes[k] ^= lanes[k] >> 29;
    }
  }
  uint64_t hash = size * kPrime;
  for (uint64_t lane : lanes) hash = (hash ^ lane) * kPrime;
  for (; i < size; ++i) hash = (hash ^ data[i]) * kPrime;
  return hash ^ (hash >> 31);
}

std::string ArtifactTrailer(uint64_t size, uint64_t checksum) {
  std::string trailer(static_cast<size_t>(kArtifactTrailerBytes), '\0');
  std::memcpy(trailer.data(), kArtifactTrailerMagic, 8);
  std::memcpy(trailer.data() + 8, &size, 8);
  std::memcpy(trailer.data() + 16, &checksum, 8);
  return trailer;
}

Artifact DecodeArtifactPayload(const uint8_t* data, uint64_t size) {
  // 1. The header.
  if (data == nullptr || size < kHeaderBytes || std::memcmp(data, kArtifactMagic, 8) != 0) {
    throw ir::Error("not a Tandem artifact (its payload does not start with the artifact magic)");
  }
  uint32_t version = 0;
  std::memcpy(&version, data + 8, 4);
  if (version != kArtifactFormatVersion) {
    throw ir::Error(fmt::format(
        "the artifact has format version {}, and this runtime reads version {}: export the "
        "model again with the Tandem of this runtime",
        version, kArtifactFormatVersion));
  }
  uint64_t length = 0;
  std::memcpy(&length, data + 16, 8);
  if (length > size - kHeaderBytes) Bad("the description runs past the end of the payload");
  // 2. The description.
  json j = json::parse(data + kHeaderBytes, data + kHeaderBytes + length, nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) Bad("it is not a JSON object");
  Artifact a;
  const json& m = Field(j, "manifest", "description");
  a.manifest.tandem_version = StringField(m, "tandem_version", "manifest");
  a.manifest.codegen_version =
      IntField(m, "codegen_version", "manifest", 0, std::numeric_limits<int32_t>::max());
  a.manifest.target = StringField(m, "target", "manifest");
  for (const json& f : ArrayField(m, "required_features", "manifest")) {
    if (!f.is_string()) Bad("manifest.required_features holds a non-string");
    a.manifest.required_features.push_back(f.get<std::string>());
  }
  a.manifest.pipeline = StringField(m, "pipeline", "manifest");
  a.manifest.trace_hash = StringField(m, "trace_hash", "manifest");
  a.manifest.model_hash = StringField(m, "model_hash", "manifest");
  a.manifest.threads = IntField(m, "threads", "manifest", 0, 4095);
  a.manifest.onednn_isa = StringField(m, "onednn_isa", "manifest");
  a.manifest.onednn_version = StringField(m, "onednn_version", "manifest");
  std::vector<int64_t> input_bytes, output_bytes;
  a.inputs = DecodeTensors(j, "inputs", input_bytes);
  a.outputs = DecodeTensors(j, "outputs", output_bytes);
  const int64_t max = std::numeric_limits<int64_t>::max();
  a.arena_bytes = IntField(j, "arena_bytes", "description", 0, max);
  // 3. Slots: every one inside what it points into.
  const json& slots = ArrayField(j, "slots", "description");
  for (size_t s = 0; s < slots.size(); ++s) {
    std::string where = fmt::format("slots[{}]", s);
    ArtifactSlot slot;
    std::string kind = StringField(slots[s], "kind", where);
    slot.bytes = IntField(slots[s], "bytes", where, 0, max);
    slot.index = IntField(slots[s], "index", where, 0, max);
    if (kind == "input" || kind == "output") {
      bool input = kind == "input";
      const std::vector<int64_t>& bytes = input ? input_bytes : output_bytes;
      slot.kind = input ? ArtifactSlot::Kind::kInput : ArtifactSlot::Kind::kOutput;
      if (slot.index >= static_cast<int64_t>(bytes.size()) ||
          bytes[static_cast<size_t>(slot.index)] != slot.bytes) {
        Bad(fmt::format("{} names {} {} of {} bytes, which the model does not have", where, kind,
                        slot.index, slot.bytes));
      }
    } else if (kind == "constant") {
      slot.kind = ArtifactSlot::Kind::kConstant;
      if (slot.index % kArtifactAlignment != 0 || static_cast<uint64_t>(slot.index) > size ||
          static_cast<uint64_t>(slot.bytes) > size - static_cast<uint64_t>(slot.index) ||
          static_cast<uint64_t>(slot.index) < kHeaderBytes + length) {
        Bad(
            fmt::format("{} (a constant of {} bytes at offset {}) lies outside the payload's "
                        "{} bytes of constants",
                        where, slot.bytes, slot.index, size));
      }
    } else if (kind == "arena") {
      slot.kind = ArtifactSlot::Kind::kArena;
      if (slot.index % kArtifactAlignment != 0 || slot.index > a.arena_bytes ||
          slot.bytes > a.arena_bytes - slot.index) {
        Bad(fmt::format("{} ({} bytes at offset {}) lies outside the arena of {} bytes", where,
                        slot.bytes, slot.index, a.arena_bytes));
      }
    } else {
      Bad(fmt::format("{}.kind is '{}'", where, kind));
    }
    a.slots.push_back(slot);
  }
  // 4. Calls and output copies: indices of slots.
  int64_t num_slots = static_cast<int64_t>(a.slots.size());
  const json& calls = ArrayField(j, "calls", "description");
  for (size_t c = 0; c < calls.size(); ++c) {
    std::string where = fmt::format("calls[{}]", c);
    ArtifactCall call;
    call.symbol = StringField(calls[c], "symbol", where);
    call.kernel = StringField(calls[c], "kernel", where);
    call.backend = StringField(calls[c], "backend", where);
    call.data_offset = IntField(calls[c], "data_offset", where, 0, max);
    call.data_bytes = IntField(calls[c], "data_bytes", where, 0, max);
    if (call.backend.empty() && call.symbol.empty()) {
      Bad(fmt::format("{} has neither a symbol nor a backend", where));
    }
    if (!call.backend.empty() && call.backend != "onednn") {
      Bad(fmt::format("{} runs on backend '{}' (this runtime has onednn)", where, call.backend));
    }
    if (!call.backend.empty() &&
        (static_cast<uint64_t>(call.data_offset) < kHeaderBytes + length ||
         static_cast<uint64_t>(call.data_offset) > size ||
         static_cast<uint64_t>(call.data_bytes) > size - static_cast<uint64_t>(call.data_offset) ||
         call.data_bytes == 0)) {
      Bad(fmt::format("{}'s subgraph ({} bytes at offset {}) lies outside the payload", where,
                      call.data_bytes, call.data_offset));
    }
    const json& args = ArrayField(calls[c], "args", where);
    for (size_t k = 0; k < args.size(); ++k) {
      if (!args[k].is_number_integer() || args[k].get<int64_t>() < 0 ||
          args[k].get<int64_t>() >= num_slots) {
        Bad(fmt::format("{}.args[{}] is not a slot", where, k));
      }
      call.args.push_back(static_cast<int>(args[k].get<int64_t>()));
    }
    a.calls.push_back(std::move(call));
  }
  const json& copies = ArrayField(j, "output_copies", "description");
  for (size_t c = 0; c < copies.size(); ++c) {
    std::string where = fmt::format("output_copies[{}]", c);
    int slot = static_cast<int>(IntField(copies[c], "slot", where, 0, num_slots - 1));
    int output = static_cast<int>(
        IntField(copies[c], "output", where, 0, static_cast<int64_t>(a.outputs.size()) - 1));
    if (a.slots[static_cast<size_t>(slot)].bytes != output_bytes[static_cast<size_t>(output)]) {
      Bad(fmt::format("{} copies {} bytes into an output of {}", where,
                      a.slots[static_cast<size_t>(slot)].bytes,
                      output_bytes[static_cast<size_t>(output)]));
    }
    a.output_copies.emplace_back(slot, output);
  }
  return a;
}

}  // namespace tandem::backends
