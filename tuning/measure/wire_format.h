// The binary messages the tuning library's child processes exchange with the tuning process
// (ProcessRunner's workers, the measurement server): plain values in native byte order, strings
// and tensors with their sizes, measure results. Both ends are the same binary, so there is no
// versioning. Internal to the tuning library.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "tuning/measure/measure.h"

namespace tandem::tuning {

template <typename T>
void Append(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// The value at `offset` of `in`, which must hold sizeof(T) bytes there.
template <typename T>
T ReadAt(const std::string& in, size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

// A u64 size, then the bytes.
void AppendString(std::string& out, const std::string& text);
// dtype, rank, extents, layout, then the data bytes.
void AppendTensor(std::string& out, const ir::Tensor& tensor);
void AppendTensors(std::string& out, const std::vector<ir::Tensor>& tensors);

// Reads what the Append functions wrote, in order; ir::Error when the message ends early or a
// value is malformed (a truncated or corrupted message).
class WireReader {
 public:
  explicit WireReader(const std::string& in) : in_(in) {}
  template <typename T>
  T Get() {
    Need(sizeof(T));
    T value = ReadAt<T>(in_, offset_);
    offset_ += sizeof(T);
    return value;
  }
  std::string GetString();
  ir::Tensor GetTensor();
  std::vector<ir::Tensor> GetTensors();
  bool at_end() const { return offset_ == in_.size(); }

 private:
  void Need(size_t bytes) const;
  const std::string& in_;
  size_t offset_ = 0;
};

// A measure result as a message payload, and back (nothing when the payload is malformed).
std::string EncodeResult(const MeasureResult& result);
std::optional<MeasureResult> DecodeResult(const std::string& in);

}  // namespace tandem::tuning
