#include "ir/ops/op_util.h"

#include <fmt/format.h>

namespace tandem::ir::ops {

const TensorType& TensorOperand(const std::vector<Type>& inputs, size_t index,
                                const std::string& role) {
  if (index >= inputs.size()) throw Error(fmt::format("missing operand '{}'", role));
  if (!inputs[index].is_tensor()) {
    throw Error(
        fmt::format("operand '{}' must be a tensor but is {}", role, ToString(inputs[index])));
  }
  return inputs[index].tensor();
}

int64_t NormalizeAxis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    throw Error(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Shape BroadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error(fmt::format("shapes {} and {} cannot be broadcast together (axis {}: {} vs {})",
                              ShapeToString(a), ShapeToString(b), i, da, db));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  }
  return strides;
}

void ForEachIndex(const Shape& shape,
                  const std::function<void(const std::vector<int64_t>&, int64_t)>& fn) {
  int64_t total = NumElements(shape);
  if (total == 0) return;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    fn(index, flat);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      size_t u = static_cast<size_t>(d);
      if (++index[u] < shape[u]) break;
      index[u] = 0;
    }
  }
}

int64_t BroadcastOffset(const std::vector<int64_t>& output_index, const Shape& input_shape) {
  size_t offset_rank = output_index.size() - input_shape.size();
  int64_t offset = 0;
  for (size_t i = 0; i < input_shape.size(); ++i) {
    int64_t idx = input_shape[i] == 1 ? 0 : output_index[i + offset_rank];
    offset = offset * input_shape[i] + idx;
  }
  return offset;
}

DataType CommonDataType(const std::vector<Type>& inputs) {
  DataType dtype = TensorOperand(inputs, 0, "0").dtype;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const TensorType& t = TensorOperand(inputs, i, std::to_string(i));
    if (t.dtype != dtype) {
      throw Error(
          fmt::format("operands must have one data type but operand 0 is {} and operand "
                      "{} is {}",
                      ToString(dtype), i, ToString(t.dtype)));
    }
  }
  return dtype;
}

void CheckLength(const Attrs& attrs, const std::string& name, size_t expected) {
  const auto& v = attrs.GetInts(name);
  if (v.size() != expected) {
    throw Error(fmt::format("attribute '{}' must have {} values but has {} ({})", name, expected,
                            v.size(), ToString(AttrValue(v))));
  }
}

AxisView ViewAround(const Shape& shape, int64_t axis) {
  AxisView view;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (static_cast<int64_t>(i) < axis) {
      view.outer *= d;
    } else if (static_cast<int64_t>(i) == axis) {
      view.extent = d;
    } else {
      view.inner *= d;
    }
  }
  return view;
}

bool Flag(const Attrs& attrs, const std::string& name) {
  int64_t value = attrs.GetInt(name);
  if (value != 0 && value != 1) {
    throw Error(fmt::format("attribute '{}' must be 0 or 1 but is {}", name, value));
  }
  return value == 1;
}

int64_t OperandAxis(const TensorType& x, const Attrs& attrs) {
  if (x.rank() == 0) throw Error("the operand must have rank 1 or more");
  return NormalizeAxis(attrs.GetInt("axis"), x.rank());
}

int64_t WrapIndex(int64_t value, int64_t extent, int64_t where, const Shape& indices_shape) {
  if (value < -extent || value >= extent) {
    std::vector<int64_t> position(indices_shape.size());
    int64_t rest = where;
    for (size_t k = indices_shape.size(); k-- > 0;) {
      position[k] = indices_shape[k] > 0 ? rest % indices_shape[k] : 0;
      rest = indices_shape[k] > 0 ? rest / indices_shape[k] : 0;
    }
    throw Error(fmt::format("index {} at position [{}] of the indices is out of range [{}, {})",
                            value, fmt::join(position, ","), -extent, extent));
  }
  return value < 0 ? value + extent : value;
}

int64_t IndexAt(const Tensor& indices, int64_t flat) {
  return indices.dtype() == DataType::kInt64 ? indices.data<int64_t>()[flat]
                                             : indices.data<int32_t>()[flat];
}

}  // namespace tandem::ir::ops
