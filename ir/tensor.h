// Tensor: a dense n-dimensional array with 64-byte aligned storage.
//
// Tensors are handles: copying a Tensor shares its storage (like a shared_ptr); Clone() makes a
// deep copy. The graph IR holds weights as Tensors inside constant nodes and treats them as
// immutable; the runtime and the reference interpreter use the same type for inputs and outputs.
// Data is stored row-major in native (little-endian) byte order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/type.h"

namespace tandem::ir {

class Tensor {
 public:
  Tensor() = default;
  // A zero-filled tensor of the given type.
  explicit Tensor(const TensorType& type);
  Tensor(Shape shape, DataType dtype) : Tensor(TensorType{std::move(shape), dtype, ""}) {}

  static Tensor FromFloats(Shape shape, const std::vector<float>& values);
  static Tensor FromDoubles(Shape shape, DataType dtype, const std::vector<double>& values);
  static Tensor FromInt64s(Shape shape, const std::vector<int64_t>& values);
  // Copies `bytes` (exactly type.num_bytes() of them) into a new tensor.
  static Tensor FromBytes(const TensorType& type, std::span<const uint8_t> bytes);
  // Uniform random values in [low, high) from a deterministic generator seeded by `seed`.
  static Tensor Random(const TensorType& type, uint64_t seed, double low = -1.0, double high = 1.0);

  bool defined() const { return storage_ != nullptr || type_.num_elements() == 0; }
  const TensorType& type() const { return type_; }
  const Shape& shape() const { return type_.shape; }
  DataType dtype() const { return type_.dtype; }
  int64_t rank() const { return type_.rank(); }
  int64_t num_elements() const { return type_.num_elements(); }
  int64_t num_bytes() const { return type_.num_bytes(); }

  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }
  std::span<const uint8_t> bytes() const;

  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }

  // Element access through double, for any dtype (used by the reference interpreter and tests).
  double GetDouble(int64_t flat_index) const;
  void SetDouble(int64_t flat_index, double value);
  std::vector<double> ToDoubles() const;

  Tensor Clone() const;
  // Same storage, new shape with the same number of elements (or new layout tag).
  Tensor Reshaped(Shape shape) const;
  Tensor WithLayout(std::string layout) const;

 private:
  TensorType type_;
  std::shared_ptr<uint8_t> storage_;
};

// ||a - b||_2 / max(||b||_2, tiny) over the finite elements. Elements that are NaN on both sides
// or the same infinity on both sides are equal and left out; NaN or an infinity on one side only
// (or opposite infinities) gives +infinity. Never NaN. Throws Error when shapes differ.
double RelativeError(const Tensor& actual, const Tensor& expected);
// The flat index of the element that differs most (a NaN or infinity mismatch first), or -1
// when all elements are equal in the sense of RelativeError. Throws Error when shapes differ.
int64_t LargestDifference(const Tensor& actual, const Tensor& expected);
// Largest |a - b| over all elements. Throws Error when shapes differ.
double MaxAbsoluteError(const Tensor& actual, const Tensor& expected);

// IEEE half <-> float conversion used for f16 storage.
float HalfToFloat(uint16_t half);
uint16_t FloatToHalf(float value);

}  // namespace tandem::ir
