#include "ir/type.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/checked_math.h"
#include "ir/error.h"

namespace tandem::ir {

std::string ToString(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "f32";
    case DataType::kFloat64:
      return "f64";
    case DataType::kFloat16:
      return "f16";
    case DataType::kInt8:
      return "i8";
    case DataType::kUInt8:
      return "u8";
    case DataType::kInt32:
      return "i32";
    case DataType::kInt64:
      return "i64";
    case DataType::kBool:
      return "bool";
  }
  return "?";
}

DataType ParseDataType(const std::string& name) {
  if (name == "f32" || name == "float32" || name == "float") return DataType::kFloat32;
  if (name == "f64" || name == "float64" || name == "double") return DataType::kFloat64;
  if (name == "f16" || name == "float16") return DataType::kFloat16;
  if (name == "i8" || name == "int8") return DataType::kInt8;
  if (name == "u8" || name == "uint8") return DataType::kUInt8;
  if (name == "i32" || name == "int32") return DataType::kInt32;
  if (name == "i64" || name == "int64") return DataType::kInt64;
  if (name == "bool") return DataType::kBool;
  throw Error(
      fmt::format("unknown data type '{}' (expected one of f32, f64, f16, i8, u8, i32, "
                  "i64, bool)",
                  name));
}

int64_t SizeOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kFloat16:
      return 2;
    case DataType::kInt8:
      return 1;
    case DataType::kUInt8:
      return 1;
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
    case DataType::kBool:
      return 1;
  }
  return 0;
}

bool IsFloat(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 || dtype == DataType::kFloat16;
}

int64_t NumElements(const Shape& shape) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      throw Error(
          fmt::format("the element count of shape {} overflows int64", ShapeToString(shape)));
    }
  }
  return n;
}

int64_t TensorType::num_bytes() const {
  int64_t elements = 0;
  try {
    elements = num_elements();
  } catch (const Error&) {
    throw Error(fmt::format("the element count of {} overflows int64", ToString(*this)));
  }
  return CheckedMul(elements, SizeOf(dtype), fmt::format("the byte size of {}", ToString(*this)));
}

std::string ShapeToString(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

std::string ToString(const TensorType& type) {
  std::string s = ToString(type.dtype) + ShapeToString(type.shape);
  if (!type.layout.empty()) s += "{" + type.layout + "}";
  return s;
}

Type::Type(TensorType tensor) : is_tensor_(true), tensor_(std::move(tensor)) {}

Type Type::Tuple(std::vector<Type> fields) {
  Type t;
  t.fields_ = std::move(fields);
  return t;
}

const TensorType& Type::tensor() const {
  if (!is_tensor_) throw Error("expected a tensor type but found tuple type " + ToString(*this));
  return tensor_;
}

void CheckSizes(const Type& type) {
  if (type.is_tensor()) {
    type.tensor().num_bytes();
    return;
  }
  for (const Type& field : type.fields()) CheckSizes(field);
}

std::string ToString(const Type& type) {
  if (type.is_tensor()) return ToString(type.tensor());
  std::vector<std::string> parts;
  for (const Type& f : type.fields()) parts.push_back(ToString(f));
  return fmt::format("({})", fmt::join(parts, ", "));
}

}  // namespace tandem::ir
