#include "tuning/measure/wire_format.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace tandem::tuning {

void AppendString(std::string& out, const std::string& text) {
  Append<uint64_t>(out, text.size());
  out += text;
}

void AppendTensor(std::string& out, const ir::Tensor& tensor) {
  Append<uint8_t>(out, static_cast<uint8_t>(tensor.dtype()));
  Append<uint32_t>(out, static_cast<uint32_t>(tensor.rank()));
  for (int64_t extent : tensor.shape()) Append<int64_t>(out, extent);
  AppendString(out, tensor.type().layout);
  std::span<const uint8_t> bytes = tensor.bytes();
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void AppendTensors(std::string& out, const std::vector<ir::Tensor>& tensors) {
  Append<uint32_t>(out, static_cast<uint32_t>(tensors.size()));
  for (const ir::Tensor& tensor : tensors) AppendTensor(out, tensor);
}

void WireReader::Need(size_t bytes) const {
  if (in_.size() - offset_ < bytes) {
    throw ir::Error(fmt::format("malformed message: {} bytes needed at offset {} of {}", bytes,
                                offset_, in_.size()));
  }
}

std::string WireReader::GetString() {
  auto size = Get<uint64_t>();
  Need(size);
  std::string text = in_.substr(offset_, size);
  offset_ += size;
  return text;
}

ir::Tensor WireReader::GetTensor() {
  auto dtype = Get<uint8_t>();
  if (dtype > static_cast<uint8_t>(ir::DataType::kBool)) {
    throw ir::Error(fmt::format("malformed message: data type {}", dtype));
  }
  ir::TensorType type;
  type.dtype = static_cast<ir::DataType>(dtype);
  auto rank = Get<uint32_t>();
  for (uint32_t d = 0; d < rank; ++d) {
    type.shape.push_back(Get<int64_t>());
    if (type.shape.back() < 0) throw ir::Error("malformed message: negative extent");
  }
  type.layout = GetString();
  auto bytes = static_cast<size_t>(type.num_bytes());
  Need(bytes);
  ir::Tensor tensor = ir::Tensor::FromBytes(
      type,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in_.data()) + offset_, bytes));
  offset_ += bytes;
  return tensor;
}

std::vector<ir::Tensor> WireReader::GetTensors() {
  std::vector<ir::Tensor> tensors(Get<uint32_t>());
  for (ir::Tensor& tensor : tensors) tensor = GetTensor();
  return tensors;
}

std::string EncodeResult(const MeasureResult& result) {
  std::string out;
  Append<uint32_t>(out, static_cast<uint32_t>(result.error.size()));
  out += result.error;
  Append<double>(out, result.median_seconds);
  Append<double>(out, result.stddev_seconds);
  Append<double>(out, result.max_relative_error);
  Append<uint32_t>(out, static_cast<uint32_t>(result.run_seconds.size()));
  for (double seconds : result.run_seconds) Append<double>(out, seconds);
  return out;
}

std::optional<MeasureResult> DecodeResult(const std::string& in) {
  MeasureResult result;
  size_t offset = 0;
  auto has = [&](size_t bytes) { return in.size() - offset >= bytes; };
  if (!has(4)) return std::nullopt;
  auto error_size = ReadAt<uint32_t>(in, offset);
  offset += 4;
  if (!has(error_size + 3 * sizeof(double) + 4)) return std::nullopt;
  result.error = in.substr(offset, error_size);
  offset += error_size;
  result.median_seconds = ReadAt<double>(in, offset);
  result.stddev_seconds = ReadAt<double>(in, offset + 8);
  result.max_relative_error = ReadAt<double>(in, offset + 16);
  auto runs = ReadAt<uint32_t>(in, offset + 24);
  offset += 28;
  if (in.size() - offset != size_t{runs} * sizeof(double)) return std::nullopt;
  for (uint32_t r = 0; r < runs; ++r) {
    result.run_seconds.push_back(ReadAt<double>(in, offset));
    offset += sizeof(double);
  }
  return result;
}

}  // namespace tandem::tuning
