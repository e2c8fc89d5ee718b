#include "ir/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "ir/aligned_memory.h"
#include "ir/error.h"

namespace tandem::ir {
namespace {

void CheckShape(const Shape& shape) {
  for (int64_t d : shape) {
    if (d < 0) throw Error("tensor shape " + ShapeToString(shape) + " has a negative extent");
  }
}

}  // namespace

Tensor::Tensor(const TensorType& type) : type_(type) {
  CheckShape(type.shape);
  storage_ = AllocateAligned(type.num_bytes(), "a tensor");
}

Tensor Tensor::FromFloats(Shape shape, const std::vector<float>& values) {
  Tensor t(TensorType{std::move(shape), DataType::kFloat32, ""});
  if (static_cast<int64_t>(values.size()) != t.num_elements()) {
    throw Error(fmt::format("FromFloats: {} values given for shape {}", values.size(),
                            ShapeToString(t.shape())));
  }
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::FromDoubles(Shape shape, DataType dtype, const std::vector<double>& values) {
  Tensor t(TensorType{std::move(shape), dtype, ""});
  if (static_cast<int64_t>(values.size()) != t.num_elements()) {
    throw Error(fmt::format("FromDoubles: {} values given for shape {}", values.size(),
                            ShapeToString(t.shape())));
  }
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::FromInt64s(Shape shape, const std::vector<int64_t>& values) {
  Tensor t(TensorType{std::move(shape), DataType::kInt64, ""});
  if (static_cast<int64_t>(values.size()) != t.num_elements()) {
    throw Error(fmt::format("FromInt64s: {} values given for shape {}", values.size(),
                            ShapeToString(t.shape())));
  }
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

Tensor Tensor::FromBytes(const TensorType& type, std::span<const uint8_t> bytes) {
  Tensor t(type);
  if (static_cast<int64_t>(bytes.size()) != t.num_bytes()) {
    throw Error(fmt::format("tensor of type {} needs {} bytes of data but {} were given",
                            ToString(type), t.num_bytes(), bytes.size()));
  }
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

Tensor Tensor::Random(const TensorType& type, uint64_t seed, double low, double high) {
  Tensor t(type);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = dist(rng);
    if (!IsFloat(type.dtype)) v = std::floor(v);
    if (type.dtype == DataType::kBool) v = v >= (low + high) / 2 ? 1 : 0;
    t.SetDouble(i, v);
  }
  return t;
}

std::span<const uint8_t> Tensor::bytes() const {
  return {storage_.get(), static_cast<size_t>(num_bytes())};
}

double Tensor::GetDouble(int64_t i) const {
  switch (dtype()) {
    case DataType::kFloat32:
      return data<float>()[i];
    case DataType::kFloat64:
      return data<double>()[i];
    case DataType::kFloat16:
      return HalfToFloat(data<uint16_t>()[i]);
    case DataType::kInt8:
      return data<int8_t>()[i];
    case DataType::kUInt8:
      return data<uint8_t>()[i];
    case DataType::kInt32:
      return data<int32_t>()[i];
    case DataType::kInt64:
      return static_cast<double>(data<int64_t>()[i]);
    case DataType::kBool:
      return data<uint8_t>()[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

void Tensor::SetDouble(int64_t i, double v) {
  // Integer conversion truncates toward zero and saturates, so no value is undefined behaviour.
  auto to_int = [v](double lo, double hi) -> double {
    if (std::isnan(v)) return 0;
    return std::trunc(std::min(std::max(v, lo), hi));
  };
  switch (dtype()) {
    case DataType::kFloat32:
      data<float>()[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      data<double>()[i] = v;
      break;
    case DataType::kFloat16:
      data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v));
      break;
    case DataType::kInt8:
      data<int8_t>()[i] = static_cast<int8_t>(to_int(-128, 127));
      break;
    case DataType::kUInt8:
      data<uint8_t>()[i] = static_cast<uint8_t>(to_int(0, 255));
      break;
    case DataType::kInt32:
      data<int32_t>()[i] = static_cast<int32_t>(to_int(-2147483648.0, 2147483647.0));
      break;
    case DataType::kInt64:
      data<int64_t>()[i] =
          static_cast<int64_t>(to_int(-9223372036854775808.0, 9223372036854774784.0));
      break;
    case DataType::kBool:
      data<uint8_t>()[i] = v != 0 ? 1 : 0;
      break;
  }
}

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out(static_cast<size_t>(num_elements()));
  for (int64_t i = 0; i < num_elements(); ++i) out[static_cast<size_t>(i)] = GetDouble(i);
  return out;
}

Tensor Tensor::Clone() const {
  Tensor t(type_);
  if (num_bytes() > 0) std::memcpy(t.raw_data(), raw_data(), static_cast<size_t>(num_bytes()));
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  CheckShape(shape);
  if (NumElements(shape) != num_elements()) {
    throw Error(fmt::format("cannot reshape a tensor of shape {} to {}",
                            ShapeToString(this->shape()), ShapeToString(shape)));
  }
  Tensor t = *this;
  t.type_.shape = std::move(shape);
  return t;
}

Tensor Tensor::WithLayout(std::string layout) const {
  Tensor t = *this;
  t.type_.layout = std::move(layout);
  return t;
}

namespace {

void CheckSameShape(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) {
    throw Error(fmt::format("cannot compare tensors of shapes {} and {}",
                            ShapeToString(actual.shape()), ShapeToString(expected.shape())));
  }
}

// True when the elements are not compared by value: both NaN, or the same infinity.
bool SameSpecialValue(double a, double e) {
  return (std::isnan(a) && std::isnan(e)) || (std::isinf(a) && a == e);
}

// True when exactly one side is NaN or infinite, or the infinities differ.
bool SpecialValueMismatch(double a, double e) {
  return !SameSpecialValue(a, e) && (!std::isfinite(a) || !std::isfinite(e));
}

}  // namespace

double RelativeError(const Tensor& actual, const Tensor& expected) {
  CheckSameShape(actual, expected);
  // The finite elements are scaled by their largest magnitude so that neither the squares nor
  // the differences overflow.
  double scale = 0;
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    double a = actual.GetDouble(i), e = expected.GetDouble(i);
    if (SameSpecialValue(a, e)) continue;
    if (SpecialValueMismatch(a, e)) return std::numeric_limits<double>::infinity();
    scale = std::max({scale, std::abs(a), std::abs(e)});
  }
  if (scale == 0) return 0;
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    double a = actual.GetDouble(i), e = expected.GetDouble(i);
    if (SameSpecialValue(a, e)) continue;
    double d = a / scale - e / scale;
    diff += d * d;
    norm += (e / scale) * (e / scale);
  }
  // ||a - b|| / max(||b||, 1e-30), in units of `scale`.
  double denominator = std::max(std::sqrt(norm), 1e-30 / scale);
  return std::sqrt(diff) / denominator;
}

int64_t LargestDifference(const Tensor& actual, const Tensor& expected) {
  CheckSameShape(actual, expected);
  int64_t worst = -1;
  double worst_difference = -1;
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    double a = actual.GetDouble(i), e = expected.GetDouble(i);
    if (SameSpecialValue(a, e)) continue;
    if (SpecialValueMismatch(a, e)) return i;
    double difference = std::abs(a / 2 - e / 2);
    if (difference > worst_difference) {
      worst = i;
      worst_difference = difference;
    }
  }
  return worst_difference > 0 ? worst : -1;
}

double MaxAbsoluteError(const Tensor& actual, const Tensor& expected) {
  CheckSameShape(actual, expected);
  double worst = 0;
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    worst = std::max(worst, std::abs(actual.GetDouble(i) - expected.GetDouble(i)));
  }
  return worst;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ff;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (mantissa != 0 ? 0x200 : 0));
  }
  if (exponent >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);  // overflow to inf
  if (exponent <= 0) {                                                // subnormal or zero
    if (exponent < -10) return sign;
    mantissa |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half_mantissa = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half_mantissa & 1))) ++half_mantissa;
    return static_cast<uint16_t>(sign | half_mantissa);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fff;
  if (remainder > 0x1000 || (remainder == 0x1000 && (half & 1))) ++half;  // round to nearest even
  return static_cast<uint16_t>(sign | half);
}

}  // namespace tandem::ir
