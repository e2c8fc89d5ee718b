// Data types and value types of the graph IR.
//
// A graph value is either a tensor (shape + element type + optional layout) or a tuple of
// values (the result of `split`, or a multi-output function). Shapes are static: every
// dimension is a known non-negative extent, which is what lets Tandem plan memory and key the
// tuning database by shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::ir {

enum class DataType { kFloat32, kFloat64, kFloat16, kInt8, kUInt8, kInt32, kInt64, kBool };

// Short text name ("f32", "i64", "bool" ...), used by the text form.
std::string ToString(DataType dtype);
// Parses a short name; also accepts long names such as "float32". Throws Error when unknown.
DataType ParseDataType(const std::string& name);
// Size of one element in bytes.
int64_t SizeOf(DataType dtype);
bool IsFloat(DataType dtype);

using Shape = std::vector<int64_t>;

// Product of the extents (1 for a scalar); throws Error when it overflows int64.
int64_t NumElements(const Shape& shape);
// "[1,3,224,224]".
std::string ShapeToString(const Shape& shape);

// The type of one tensor value. `layout` names the meaning of each axis ("NCHW", "NHWC",
// "NCHW8c"); empty means the op's default layout / not layout-sensitive.
struct TensorType {
  Shape shape;
  DataType dtype = DataType::kFloat32;
  std::string layout;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t num_elements() const { return NumElements(shape); }
  // Element count x element size; throws Error naming the type when it overflows int64.
  int64_t num_bytes() const;
  bool operator==(const TensorType& other) const = default;
};

// "f32[1,3,224,224]" or "f32[1,64,56,56]{NHWC}".
std::string ToString(const TensorType& type);

// The type of any graph value: a tensor, or a tuple of types.
class Type {
 public:
  Type() = default;         // an empty tuple
  Type(TensorType tensor);  // NOLINT(google-explicit-constructor): tensors are the common case
  static Type Tuple(std::vector<Type> fields);

  bool is_tensor() const { return is_tensor_; }
  bool is_tuple() const { return !is_tensor_; }
  // Throws Error when this is a tuple.
  const TensorType& tensor() const;
  const std::vector<Type>& fields() const { return fields_; }

  bool operator==(const Type& other) const = default;

 private:
  bool is_tensor_ = false;
  TensorType tensor_;
  std::vector<Type> fields_;
};

// Throws Error when the element count or byte size of a tensor in `type` overflows int64.
void CheckSizes(const Type& type);

// "f32[2,3]" or "(f32[2,3], f32[2,5])".
std::string ToString(const Type& type);

}  // namespace tandem::ir
