#include "ir/kernel/bound.h"

#include <algorithm>

#include "ir/kernel/canonical_form.h"
#include "ir/kernel/simplify.h"

namespace tandem::ir {
namespace {

__extension__ typedef __int128 Wide;
// Stands for an infinite endpoint; its square still fits in 128 bits.
constexpr Wide kBig = Wide{1} << 63;

Wide Widen(int64_t v) {
  if (v == IntInterval::kNegInf) return -kBig;
  if (v == IntInterval::kPosInf) return kBig;
  return v;
}

int64_t Narrow(Wide v) {
  if (v <= IntInterval::kNegInf) return IntInterval::kNegInf;
  if (v >= IntInterval::kPosInf) return IntInterval::kPosInf;
  return static_cast<int64_t>(v);
}

Wide FloorDivWide(Wide a, Wide b) {
  Wide q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) --q;
  return q;
}

IntInterval FromCorners(std::initializer_list<Wide> values) {
  return {Narrow(std::min(values)), Narrow(std::max(values))};
}

// Whether a value in `b` is surely non-zero (1), surely zero (0) or unknown (-1).
int Truth(const IntInterval& b) {
  if (b.min == 0 && b.max == 0) return 0;
  if (b.min > 0 || b.max < 0) return 1;
  return -1;
}

IntInterval FromTruth(int truth) {
  return truth < 0 ? IntInterval{0, 1} : IntInterval::Single(truth);
}

// `b` when every value of it fits `dtype`, else the full range of `dtype`.
IntInterval FitType(const IntInterval& b, DataType dtype) {
  IntInterval range = DataTypeRange(dtype);
  if (b.min >= range.min && b.max <= range.max) return b;
  return range;
}

IntInterval Bound(const Expr& e, const VarRanges& ranges);

IntInterval Operand(const Expr& e, size_t i, const VarRanges& ranges) {
  return Bound(e->operands[i], ranges);
}

IntInterval Bound(const Expr& e, const VarRanges& ranges) {
  const ExprNode& n = *e;
  if (IsFloat(n.dtype)) return IntInterval::Everything();
  switch (n.kind) {
    case ExprKind::kIntImm:
      return IntInterval::Single(n.int_value);
    case ExprKind::kVar: {
      auto it = ranges.find(e.get());
      return it == ranges.end() ? DataTypeRange(n.dtype) : it->second;
    }
    case ExprKind::kAdd:
      return FitType(IntervalAdd(Operand(e, 0, ranges), Operand(e, 1, ranges)), n.dtype);
    case ExprKind::kSub:
      return FitType(IntervalSub(Operand(e, 0, ranges), Operand(e, 1, ranges)), n.dtype);
    case ExprKind::kMul:
      return FitType(IntervalMul(Operand(e, 0, ranges), Operand(e, 1, ranges)), n.dtype);
    case ExprKind::kFloorDiv:
      return FitType(IntervalFloorDiv(Operand(e, 0, ranges), Operand(e, 1, ranges)), n.dtype);
    case ExprKind::kFloorMod:
      return FitType(IntervalFloorMod(Operand(e, 0, ranges), Operand(e, 1, ranges)), n.dtype);
    case ExprKind::kMin: {
      IntInterval a = Operand(e, 0, ranges), b = Operand(e, 1, ranges);
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    }
    case ExprKind::kMax: {
      IntInterval a = Operand(e, 0, ranges), b = Operand(e, 1, ranges);
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    }
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
      if (IsFloat(n.operands[0]->dtype)) return {0, 1};
      return FromTruth(canonical::CompareByDifference(
          n.kind, IntervalSub(Operand(e, 0, ranges), Operand(e, 1, ranges))));
    case ExprKind::kAnd: {
      int a = Truth(Operand(e, 0, ranges)), b = Truth(Operand(e, 1, ranges));
      if (a == 0 || b == 0) return IntInterval::Single(0);
      return FromTruth(a == 1 && b == 1 ? 1 : -1);
    }
    case ExprKind::kOr: {
      int a = Truth(Operand(e, 0, ranges)), b = Truth(Operand(e, 1, ranges));
      if (a == 1 || b == 1) return IntInterval::Single(1);
      return FromTruth(a == 0 && b == 0 ? 0 : -1);
    }
    case ExprKind::kNot: {
      int a = Truth(Operand(e, 0, ranges));
      return FromTruth(a < 0 ? -1 : 1 - a);
    }
    case ExprKind::kSelect: {
      int c = Truth(Operand(e, 0, ranges));
      if (c == 1) return Operand(e, 1, ranges);
      if (c == 0) return Operand(e, 2, ranges);
      return IntervalUnion(Operand(e, 1, ranges), Operand(e, 2, ranges));
    }
    case ExprKind::kCast: {
      const Expr& value = n.operands[0];
      if (IsFloat(value->dtype)) return DataTypeRange(n.dtype);
      IntInterval b = Bound(value, ranges);
      if (n.dtype == DataType::kBool) return FromTruth(Truth(b));
      return FitType(b, n.dtype);
    }
    default:
      return DataTypeRange(n.dtype);
  }
}

}  // namespace

IntInterval IntervalAdd(const IntInterval& a, const IntInterval& b) {
  return {Narrow(Widen(a.min) + Widen(b.min)), Narrow(Widen(a.max) + Widen(b.max))};
}

IntInterval IntervalSub(const IntInterval& a, const IntInterval& b) {
  return {Narrow(Widen(a.min) - Widen(b.max)), Narrow(Widen(a.max) - Widen(b.min))};
}

IntInterval IntervalMul(const IntInterval& a, const IntInterval& b) {
  Wide a0 = Widen(a.min), a1 = Widen(a.max), b0 = Widen(b.min), b1 = Widen(b.max);
  return FromCorners({a0 * b0, a0 * b1, a1 * b0, a1 * b1});
}

IntInterval IntervalFloorDiv(const IntInterval& a, const IntInterval& b) {
  if (b.min <= 0 && b.max >= 0) return IntInterval::Everything();
  if (b.is_const()) {
    // Keep infinite endpoints infinite: a finite quotient of an unbounded side would be wrong.
    Wide c = b.min;
    if (c > 0) {
      return {Narrow(a.has_lower() ? FloorDivWide(a.min, c) : -kBig),
              Narrow(a.has_upper() ? FloorDivWide(a.max, c) : kBig)};
    }
    return {Narrow(a.has_upper() ? FloorDivWide(a.max, c) : -kBig),
            Narrow(a.has_lower() ? FloorDivWide(a.min, c) : kBig)};
  }
  if (!a.has_lower() || !a.has_upper()) return IntInterval::Everything();
  Wide a0 = a.min, a1 = a.max, b0 = Widen(b.min), b1 = Widen(b.max);
  return FromCorners(
      {FloorDivWide(a0, b0), FloorDivWide(a0, b1), FloorDivWide(a1, b0), FloorDivWide(a1, b1)});
}

IntInterval IntervalFloorMod(const IntInterval& a, const IntInterval& b) {
  if (b.min > 0) {
    if (a.has_lower() && a.has_upper() && b.is_const()) {
      Wide c = b.min;
      Wide block = FloorDivWide(a.min, c);
      if (block == FloorDivWide(a.max, c)) {
        return {Narrow(a.min - block * c), Narrow(a.max - block * c)};
      }
    }
    if (a.min >= 0 && a.max < b.min) return a;
    return {0, b.has_upper() ? b.max - 1 : IntInterval::kPosInf};
  }
  if (b.max < 0) {
    if (a.max <= 0 && a.min > b.max) return a;
    return {b.has_lower() ? b.min + 1 : IntInterval::kNegInf, 0};
  }
  return IntInterval::Everything();
}

IntInterval IntervalUnion(const IntInterval& a, const IntInterval& b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}

IntInterval DataTypeRange(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return {0, 1};
    case DataType::kInt8:
      return {-128, 127};
    case DataType::kUInt8:
      return {0, 255};
    case DataType::kInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      return IntInterval::Everything();
  }
}

IntInterval ConstIntBound(const Expr& e, const VarRanges& ranges) {
  if (!e.defined()) return IntInterval::Everything();
  return Bound(e, ranges);
}

bool CanProve(const Expr& condition, const VarRanges& ranges) {
  if (!condition.defined() || IsFloat(condition->dtype)) return false;
  Expr simplified = Simplify(condition, ranges);
  int64_t value = 0;
  if (AsConstInt(simplified, &value)) return value != 0;
  return Truth(ConstIntBound(simplified, ranges)) == 1;
}

}  // namespace tandem::ir
