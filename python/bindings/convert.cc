// Conversions between Python values and Tandem's: attributes, data types, tensors.
#include <fmt/format.h>

#include <cstdint>

#include "ir/error.h"
#include "python/bindings/bindings.h"

namespace tandem::python {

ir::AttrValue ToAttrValue(const py::handle& value, const std::string& what) {
  if (py::isinstance<py::bool_>(value)) return int64_t{value.cast<bool>() ? 1 : 0};
  if (py::isinstance<py::int_>(value)) return value.cast<int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    py::sequence items = py::reinterpret_borrow<py::sequence>(value);
    bool all_ints = true;
    for (const py::handle& item : items) {
      if (!py::isinstance<py::int_>(item)) all_ints = false;
      if (!py::isinstance<py::int_>(item) && !py::isinstance<py::float_>(item)) {
        throw ir::Error(
            fmt::format("{}: a list attribute holds ints or floats, not {}", what,
                        py::type::handle_of(item).attr("__name__").cast<std::string>()));
      }
    }
    if (all_ints) return items.cast<std::vector<int64_t>>();
    return items.cast<std::vector<double>>();
  }
  throw ir::Error(fmt::format("{}: an attribute is an int, float, str or list of numbers, not {}",
                              what,
                              py::type::handle_of(value).attr("__name__").cast<std::string>()));
}

py::object FromAttrValue(const ir::AttrValue& value) {
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
}

ir::Attrs ToAttrs(const py::dict& values, const std::string& what) {
  ir::Attrs attrs;
  for (const auto& [key, value] : values) {
    std::string name = py::str(key).cast<std::string>();
    attrs.Set(name, ToAttrValue(value, fmt::format("{}: attribute '{}'", what, name)));
  }
  return attrs;
}

py::dict FromAttrs(const ir::Attrs& attrs) {
  py::dict out;
  for (const auto& [key, value] : attrs.values()) out[py::str(key)] = FromAttrValue(value);
  return out;
}

ir::DataType ToDataType(const py::dtype& dtype) {
  char kind = dtype.kind();
  auto size = dtype.itemsize();
  if (kind == 'f' && size == 4) return ir::DataType::kFloat32;
  if (kind == 'f' && size == 8) return ir::DataType::kFloat64;
  if (kind == 'f' && size == 2) return ir::DataType::kFloat16;
  if (kind == 'i' && size == 1) return ir::DataType::kInt8;
  if (kind == 'u' && size == 1) return ir::DataType::kUInt8;
  if (kind == 'i' && size == 4) return ir::DataType::kInt32;
  if (kind == 'i' && size == 8) return ir::DataType::kInt64;
  if (kind == 'b') return ir::DataType::kBool;
  throw ir::Error(
      fmt::format("NumPy dtype {} has no Tandem data type (float16/32/64, int8/32/64, "
                  "uint8, bool)",
                  dtype.attr("name").cast<std::string>()));
}

py::dtype ToNumpyDtype(ir::DataType dtype) {
  switch (dtype) {
    case ir::DataType::kFloat32:
      return py::dtype("float32");
    case ir::DataType::kFloat64:
      return py::dtype("float64");
    case ir::DataType::kFloat16:
      return py::dtype("float16");
    case ir::DataType::kInt8:
      return py::dtype("int8");
    case ir::DataType::kUInt8:
      return py::dtype("uint8");
    case ir::DataType::kInt32:
      return py::dtype("int32");
    case ir::DataType::kInt64:
      return py::dtype("int64");
    case ir::DataType::kBool:
      return py::dtype("bool");
  }
  throw ir::Error("unknown data type");
}

namespace {

// The capsule that owns the storage of an array made by ToArray: a copy of the tensor.
constexpr const char* kTensorCapsule = "tandem.Tensor";

// The tensor whose storage `array` is exactly (same address, shape and data type, C-contiguous),
// or null.
const ir::Tensor* TensorBehind(const py::array& array, const ir::TensorType& type) {
  PyObject* base = py::detail::array_proxy(array.ptr())->base;
  if (base == nullptr || !PyCapsule_IsValid(base, kTensorCapsule)) return nullptr;
  const auto* tensor = static_cast<const ir::Tensor*>(PyCapsule_GetPointer(base, kTensorCapsule));
  if (tensor->raw_data() != array.data() || tensor->shape() != type.shape ||
      tensor->dtype() != type.dtype || (array.flags() & py::array::c_style) == 0) {
    return nullptr;
  }
  return tensor;
}

}  // namespace

py::array ToArray(const ir::Tensor& tensor) {
  auto* holder = new ir::Tensor(tensor);
  py::capsule owner(holder, kTensorCapsule, [](PyObject* capsule) {
    delete static_cast<ir::Tensor*>(PyCapsule_GetPointer(capsule, kTensorCapsule));
  });
  return py::array(ToNumpyDtype(tensor.dtype()), tensor.shape(), holder->raw_data(), owner);
}

ir::Tensor ToTensor(const py::array& array, const ir::TensorType& type, const std::string& what,
                    bool* copied) {
  ir::Shape shape(array.shape(), array.shape() + array.ndim());
  ir::DataType dtype = ToDataType(array.dtype());
  if (shape != type.shape || dtype != type.dtype) {
    throw ir::Error(fmt::format("{}: got an array of {} {}, expected {}", what, ir::ToString(dtype),
                                ir::ShapeToString(shape), ir::ToString(type)));
  }
  if (const ir::Tensor* tensor = TensorBehind(array, type)) {
    if (copied) *copied = false;
    return tensor->WithLayout(type.layout);  // the same storage
  }
  if (copied) *copied = true;
  py::array dense = py::array::ensure(array, py::array::c_style | py::array::forcecast);
  return ir::Tensor::FromBytes(type,
                               std::span<const uint8_t>(static_cast<const uint8_t*>(dense.data()),
                                                        static_cast<size_t>(type.num_bytes())));
}

ir::Tensor ToTensor(const py::array& array, const std::string& what) {
  ir::TensorType type{ir::Shape(array.shape(), array.shape() + array.ndim()),
                      ToDataType(array.dtype()), ""};
  return ToTensor(array, type, what);
}

void CallPython(const std::string& context, const std::function<void()>& call) {
  py::gil_scoped_acquire gil;
  try {
    call();
  } catch (py::error_already_set& e) {
    std::string message = e.what();
    throw ir::Error(fmt::format("{}: {}", context, message));
  }
}

}  // namespace tandem::python
