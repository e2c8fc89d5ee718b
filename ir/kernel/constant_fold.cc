#include "ir/kernel/constant_fold.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "ir/kernel/bound.h"

namespace tandem::ir {
namespace {

__extension__ typedef __int128 Wide;

// Two's complement wrap of `v` to an integer type (bool: non-zero is 1).
int64_t Wrap(int64_t v, DataType dtype) {
  switch (dtype) {
    case DataType::kInt32:
      return static_cast<int32_t>(v);
    case DataType::kInt8:
      return static_cast<int8_t>(v);
    case DataType::kUInt8:
      return static_cast<uint8_t>(v);
    case DataType::kBool:
      return v != 0 ? 1 : 0;
    default:
      return v;
  }
}

std::optional<bool> Compare(ExprKind kind, auto a, auto b) {
  switch (kind) {
    case ExprKind::kEQ:
      return a == b;
    case ExprKind::kNE:
      return a != b;
    case ExprKind::kLT:
      return a < b;
    case ExprKind::kLE:
      return a <= b;
    case ExprKind::kGT:
      return a > b;
    case ExprKind::kGE:
      return a >= b;
    default:
      return std::nullopt;
  }
}

Expr FoldInt(ExprKind kind, int64_t a, int64_t b, DataType dtype) {
  if (std::optional<bool> c = Compare(kind, a, b)) return IntImm(*c ? 1 : 0, DataType::kBool);
  if (kind == ExprKind::kAnd) return IntImm(a != 0 && b != 0 ? 1 : 0, DataType::kBool);
  if (kind == ExprKind::kOr) return IntImm(a != 0 || b != 0 ? 1 : 0, DataType::kBool);
  bool ring = kind == ExprKind::kAdd || kind == ExprKind::kSub || kind == ExprKind::kMul;
  Wide r = 0;
  switch (kind) {
    case ExprKind::kAdd:
      r = Wide{a} + b;
      break;
    case ExprKind::kSub:
      r = Wide{a} - b;
      break;
    case ExprKind::kMul:
      r = Wide{a} * b;
      break;
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod: {
      if (b == 0 || dtype == DataType::kBool) return Expr();
      Wide q = Wide{a} / b;
      if (q * b != a && ((a < 0) != (b < 0))) --q;
      r = kind == ExprKind::kFloorDiv ? q : Wide{a} - q * b;
      break;
    }
    case ExprKind::kDiv:  // integer kDiv truncates toward zero, as the backends do
      if (b == 0 || dtype == DataType::kBool) return Expr();
      r = Wide{a} / b;
      break;
    case ExprKind::kMin:
      r = std::min(a, b);
      break;
    case ExprKind::kMax:
      r = std::max(a, b);
      break;
    default:
      return Expr();
  }
  if (ring && dtype == DataType::kBool) return Expr();
  if (dtype == DataType::kInt64) {
    if (r < INT64_MIN || r > INT64_MAX) return Expr();
    return IntImm(static_cast<int64_t>(r), dtype);
  }
  if (ring) return IntImm(Wrap(static_cast<int64_t>(r), dtype), dtype);
  IntInterval range = DataTypeRange(dtype);
  if (r < range.min || r > range.max) return Expr();
  return IntImm(static_cast<int64_t>(r), dtype);
}

template <typename T>
Expr FoldFloatIn(ExprKind kind, T a, T b, DataType dtype) {
  T r = 0;
  switch (kind) {
    case ExprKind::kAdd:
      r = a + b;
      break;
    case ExprKind::kSub:
      r = a - b;
      break;
    case ExprKind::kMul:
      r = a * b;
      break;
    case ExprKind::kDiv:
      if (b == 0) return Expr();
      r = a / b;
      break;
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod: {
      if (b == 0) return Expr();
      T q = std::floor(a / b);
      r = kind == ExprKind::kFloorDiv ? q : a - q * b;
      break;
    }
    case ExprKind::kMin:
    case ExprKind::kMax:
      if (std::isnan(a) || std::isnan(b)) return Expr();
      r = kind == ExprKind::kMin ? std::min(a, b) : std::max(a, b);
      break;
    default:
      return Expr();
  }
  return FloatImm(static_cast<double>(r), dtype);
}

// The value of a float constant in its own precision (FloatImm holds a double); nullopt for f16.
std::optional<double> FloatValue(const Expr& c) {
  if (c->dtype == DataType::kFloat32) return static_cast<float>(c->float_value);
  if (c->dtype == DataType::kFloat64) return c->float_value;
  return std::nullopt;
}

Expr FoldFloat(ExprKind kind, const Expr& a, const Expr& b, DataType dtype) {
  std::optional<double> x = FloatValue(a), y = FloatValue(b);
  if (!x || !y) return Expr();  // f16 is not folded
  if (std::optional<bool> c = Compare(kind, *x, *y)) return IntImm(*c ? 1 : 0, DataType::kBool);
  if (dtype == DataType::kFloat32) {
    return FoldFloatIn<float>(kind, static_cast<float>(*x), static_cast<float>(*y), dtype);
  }
  return FoldFloatIn<double>(kind, *x, *y, dtype);
}

Expr FloatConst(double value, DataType dtype) {
  if (dtype == DataType::kFloat32) return FloatImm(static_cast<float>(value), dtype);
  if (dtype == DataType::kFloat64) return FloatImm(value, dtype);
  return Expr();
}

}  // namespace

Expr FoldBinary(ExprKind kind, const Expr& a, const Expr& b, DataType dtype) {
  if (a->kind == ExprKind::kIntImm && b->kind == ExprKind::kIntImm) {
    return FoldInt(kind, a->int_value, b->int_value, dtype);
  }
  if (a->kind == ExprKind::kFloatImm && b->kind == ExprKind::kFloatImm) {
    return FoldFloat(kind, a, b, dtype);
  }
  return Expr();
}

Expr FoldCast(const Expr& value, DataType dtype) {
  if (value->kind == ExprKind::kIntImm) {
    int64_t v = value->int_value;
    if (IsFloat(dtype)) return FloatConst(static_cast<double>(v), dtype);
    return IntImm(Wrap(v, dtype), dtype);
  }
  if (value->kind != ExprKind::kFloatImm) return Expr();
  std::optional<double> source = FloatValue(value);
  if (!source) return Expr();
  double v = *source;
  if (IsFloat(dtype)) return FloatConst(v, dtype);
  if (dtype == DataType::kBool) return IntImm(v != 0 ? 1 : 0, dtype);
  if (std::isnan(v)) return Expr();
  double t = std::trunc(v);
  // 2^63 is exactly representable; every double below it converts to int64 without overflow.
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return Expr();
  int64_t i = static_cast<int64_t>(t);
  IntInterval range = DataTypeRange(dtype);
  if (dtype != DataType::kInt64 && (i < range.min || i > range.max)) return Expr();
  return IntImm(i, dtype);
}

}  // namespace tandem::ir
