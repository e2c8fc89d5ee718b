#include "kernels/compute/op_compute.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/error.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

std::vector<Expr> BroadcastIndex(const std::vector<Var>& index, const ir::Shape& result_shape,
                                 const ir::Shape& operand_shape) {
  size_t offset = result_shape.size() - operand_shape.size();
  std::vector<Expr> out;
  for (size_t k = 0; k < operand_shape.size(); ++k) {
    bool broadcast = operand_shape[k] == 1 && result_shape[offset + k] != 1;
    out.push_back(broadcast ? Expr(0) : index[offset + k]);
  }
  return out;
}

std::vector<Expr> ReshapeIndex(const std::vector<Var>& index, const ir::Shape& target_shape,
                               const ir::Shape& source_shape) {
  std::vector<size_t> target_axes;
  std::vector<size_t> source_axes;
  for (size_t k = 0; k < target_shape.size(); ++k) {
    if (target_shape[k] != 1) target_axes.push_back(k);
  }
  for (size_t k = 0; k < source_shape.size(); ++k) {
    if (source_shape[k] != 1) source_axes.push_back(k);
  }
  std::vector<Expr> out(source_shape.size(), Expr(0));
  bool same = target_axes.size() == source_axes.size();
  for (size_t k = 0; same && k < target_axes.size(); ++k) {
    same = target_shape[target_axes[k]] == source_shape[source_axes[k]];
  }
  if (same) {
    for (size_t k = 0; k < source_axes.size(); ++k) out[source_axes[k]] = index[target_axes[k]];
    return out;
  }
  // Through the flat (row-major) position of the element.
  Expr flat;
  for (size_t axis : target_axes) {
    flat = flat.defined() ? flat * Expr(target_shape[axis]) + index[axis] : Expr(index[axis]);
  }
  if (!flat.defined()) return out;
  int64_t stride = 1;
  for (size_t k = source_axes.size(); k-- > 0;) {
    size_t axis = source_axes[k];
    Expr value = stride == 1 ? flat : ir::FloorDiv(flat, Expr(stride));
    if (k != 0) value = ir::FloorMod(value, Expr(source_shape[axis]));
    out[axis] = value;
    stride *= source_shape[axis];
  }
  return out;
}

ir::DataType MathType(ir::DataType dtype) {
  switch (dtype) {
    case ir::DataType::kFloat32:
    case ir::DataType::kFloat64:
      return dtype;
    case ir::DataType::kFloat16:
      return ir::DataType::kFloat32;
    default:
      return ir::DataType::kFloat64;
  }
}

Expr Constant(ir::DataType dtype, double value) {
  if (ir::IsFloat(dtype)) return ir::FloatImm(value, dtype);
  if (dtype == ir::DataType::kBool) return ir::IntImm(value != 0 ? 1 : 0, dtype);
  if (std::isnan(value)) return ir::IntImm(0, dtype);
  double low = -9.2233720368547758e18;
  double high = 9.2233720368547758e18;
  switch (dtype) {
    case ir::DataType::kInt8:
      low = -128, high = 127;
      break;
    case ir::DataType::kUInt8:
      low = 0, high = 255;
      break;
    case ir::DataType::kInt32:
      low = -2147483648.0, high = 2147483647.0;
      break;
    default:
      break;
  }
  double clamped = std::trunc(std::min(std::max(value, low), high));
  if (clamped >= 9.2233720368547758e18)
    return ir::IntImm(std::numeric_limits<int64_t>::max(), dtype);
  return ir::IntImm(static_cast<int64_t>(clamped), dtype);
}

Expr AddConst(const Expr& e, int64_t c) {
  if (c == 0) return e;
  return c > 0 ? e + Expr(c) : e - Expr(-c);
}

Expr MulConst(const Expr& e, int64_t c) {
  return c == 1 ? e : e * Expr(c);
}

Expr All(const std::vector<Expr>& conditions) {
  Expr all;
  for (const Expr& c : conditions) all = all.defined() ? (all && c) : c;
  return all;
}

ir::Error LoweringError(const std::string& op, const std::string& message) {
  return ir::Error(fmt::format("cannot lower {}: {}", op, message), ir::ErrorLocation{.op = op});
}

Expr CheckedIndex(const Expr& value, int64_t extent) {
  Expr index = value->dtype == ir::DataType::kInt64 ? value : ir::Cast(ir::DataType::kInt64, value);
  return ir::Call("checked_index", {index, ir::IntImm(extent)}, ir::DataType::kInt64);
}

}  // namespace tandem::kernels
