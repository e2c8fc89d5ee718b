// Expressions, casts, loads and stores of the kernel code generator.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include "backends/llvm/codegen_internal.h"
#include "ir/error.h"

#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>

namespace tandem::backends::codegen {

using ir::DataType;
using ir::Error;
using ir::Expr;
using ir::ExprKind;
using Form = CgValue::Form;

namespace {

// uint8 and bool values are zero-extended; every other integer type is signed.
bool IsUnsigned(DataType dtype) {
  return dtype == DataType::kUInt8 || dtype == DataType::kBool;
}

// `type` (a scalar or a vector) with its element type replaced by `element`.
llvm::Type* WithElement(llvm::Type* type, llvm::Type* element) {
  if (auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    return llvm::FixedVectorType::get(element, vector->getNumElements());
  }
  return element;
}

void CheckOperands(const Expr& e, size_t count) {
  if (e->operands.size() != count) {
    throw Error(fmt::format("'{}' expression has {} operands instead of {}", ir::ToString(e->kind),
                            e->operands.size(), count));
  }
  for (const Expr& operand : e->operands) {
    if (!operand.defined()) {
      throw Error(fmt::format("'{}' expression has an undefined operand", ir::ToString(e->kind)));
    }
  }
}

// Loads an arm of a select may make without a branch around it: beyond that,
// a branch skipping the unselected arm's loads costs less than making them.
constexpr int kMaxSpeculatedLoads = 4;

// Whether `arm` may be evaluated where its select does not pick it, once its loads are guarded:
// no intrinsic calls (a gather's bounds check reports errors), no integer division by a
// non-constant, at most kMaxSpeculatedLoads loads.
bool IsSpeculatable(const Expr& arm) {
  bool speculatable = true;
  int loads = 0;
  ir::VisitExprTree(arm, [&](const Expr& x) {
    if (x->kind == ExprKind::kLoad) ++loads;
    if (x->kind == ExprKind::kCall) speculatable = false;
    bool integer_division = (x->kind == ExprKind::kDiv || x->kind == ExprKind::kFloorDiv ||
                             x->kind == ExprKind::kFloorMod) &&
                            !ir::IsFloat(x->dtype);
    if (integer_division && x->operands.size() == 2 && x->operands[1]->kind != ExprKind::kIntImm) {
      speculatable = false;
    }
  });
  return speculatable && loads <= kMaxSpeculatedLoads;
}

// The constant (or splat constant) integer value of `v`, if any.
const llvm::ConstantInt* ConstantIntOf(llvm::Value* v) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v)) return c;
  if (auto* c = llvm::dyn_cast<llvm::Constant>(v)) {
    return llvm::dyn_cast_or_null<llvm::ConstantInt>(c->getSplatValue());
  }
  return nullptr;
}

}  // namespace

// ---- types and values

llvm::Type* KernelCodegen::ScalarType(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return builder_.getFloatTy();
    case DataType::kFloat64:
      return builder_.getDoubleTy();
    case DataType::kFloat16:
      return builder_.getHalfTy();
    case DataType::kInt8:
    case DataType::kUInt8:
      return builder_.getInt8Ty();
    case DataType::kInt32:
      return builder_.getInt32Ty();
    case DataType::kInt64:
      return builder_.getInt64Ty();
    case DataType::kBool:
      return builder_.getInt1Ty();
  }
  throw Error(fmt::format("unsupported dtype {}", static_cast<int>(dtype)));
}

llvm::Type* KernelCodegen::MemoryType(DataType dtype) {
  return dtype == DataType::kBool ? builder_.getInt8Ty() : ScalarType(dtype);
}

llvm::Type* KernelCodegen::TypeOf(DataType dtype) {
  llvm::Type* scalar = ScalarType(dtype);
  return width_ > 0 ? llvm::FixedVectorType::get(scalar, width_) : scalar;
}

llvm::Value* KernelCodegen::Splat(llvm::Value* scalar) {
  return builder_.CreateVectorSplat(static_cast<unsigned>(width_), scalar);
}

llvm::Value* KernelCodegen::LaneIndices() {
  std::vector<llvm::Constant*> lanes;
  for (int lane = 0; lane < width_; ++lane) lanes.push_back(builder_.getInt64(lane));
  return llvm::ConstantVector::get(lanes);
}

llvm::Value* KernelCodegen::AllLanesMask() {
  return llvm::Constant::getAllOnesValue(
      llvm::FixedVectorType::get(builder_.getInt1Ty(), static_cast<unsigned>(width_)));
}

llvm::Value* KernelCodegen::MaskAnd(llvm::Value* lanes) {
  return mask_ ? builder_.CreateAnd(mask_, lanes) : lanes;
}

llvm::Value* KernelCodegen::Materialize(const CgValue& v) {
  if (width_ == 0) return v.value;
  switch (v.form) {
    case Form::kVector:
      return v.value;
    case Form::kUniform:
      return Splat(v.value);
    case Form::kAffine: {
      llvm::Value* steps = builder_.CreateMul(LaneIndices(), Splat(builder_.getInt64(v.stride)));
      return builder_.CreateAdd(Splat(v.value), steps);
    }
  }
  return v.value;
}

CgValue KernelCodegen::Uniform(llvm::Value* v, DataType dtype) const {
  return CgValue{Form::kUniform, v, 0, dtype};
}

CgValue KernelCodegen::Vector(llvm::Value* v, DataType dtype) const {
  return CgValue{Form::kVector, v, 0, dtype};
}

CgValue KernelCodegen::Apply(
    const std::vector<CgValue>& args, DataType result,
    const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& fn) {
  bool all_uniform = true;
  for (const CgValue& a : args) all_uniform = all_uniform && a.uniform();
  std::vector<llvm::Value*> values;
  for (const CgValue& a : args) values.push_back(all_uniform ? a.value : Materialize(a));
  llvm::Value* out = fn(values);
  return all_uniform ? Uniform(out, result) : Vector(out, result);
}

// ---- expressions

CgValue KernelCodegen::Eval(const Expr& e) {
  if (!e.defined()) throw Error("undefined expression");
  switch (e->kind) {
    case ExprKind::kIntImm:
      if (ir::IsFloat(e->dtype)) {
        return Uniform(
            llvm::ConstantFP::get(ScalarType(e->dtype), static_cast<double>(e->int_value)),
            e->dtype);
      }
      if (e->dtype == DataType::kBool)
        return Uniform(builder_.getInt1(e->int_value != 0), e->dtype);
      return Uniform(
          llvm::ConstantInt::get(ScalarType(e->dtype), static_cast<uint64_t>(e->int_value),
                                 /*isSigned=*/true),
          e->dtype);
    case ExprKind::kFloatImm:
      if (ir::IsFloat(e->dtype)) {
        return Uniform(llvm::ConstantFP::get(ScalarType(e->dtype), e->float_value), e->dtype);
      }
      return Cast(Uniform(llvm::ConstantFP::get(builder_.getDoubleTy(), e->float_value),
                          DataType::kFloat64),
                  e->dtype);
    case ExprKind::kVar:
      return EvalVar(e);
    case ExprKind::kLoad:
      return EvalLoad(e);
    case ExprKind::kCast:
      CheckOperands(e, 1);
      return Cast(Eval(e->operands[0]), e->dtype);
    case ExprKind::kNot: {
      CheckOperands(e, 1);
      CgValue b = ToBool(Eval(e->operands[0]));
      return Apply({b}, DataType::kBool,
                   [&](const std::vector<llvm::Value*>& v) { return builder_.CreateNot(v[0]); });
    }
    case ExprKind::kSelect:
      return EvalSelect(e);
    case ExprKind::kCall:
      return EvalCall(e);
    default:
      break;
  }
  if (!ir::IsBinary(e->kind)) {
    throw Error(
        fmt::format("cannot generate code for expression kind '{}'", ir::ToString(e->kind)));
  }
  CheckOperands(e, 2);
  CgValue a = Eval(e->operands[0]);
  CgValue b = Eval(e->operands[1]);
  return Binary(e->kind, a, b);
}

CgValue KernelCodegen::EvalVar(const Expr& e) {
  auto it = vars_.find(e.get());
  if (it == vars_.end()) throw Error(fmt::format("variable '{}' is not bound here", e->name));
  return it->second;
}

CgValue KernelCodegen::Binary(ExprKind kind, const CgValue& a, const CgValue& b) {
  if (a.dtype != b.dtype) {
    throw Error(fmt::format("operands of '{}' have different types {} and {}", ir::ToString(kind),
                            ir::ToString(a.dtype), ir::ToString(b.dtype)));
  }
  DataType dtype = a.dtype;
  // Index arithmetic (i64): what stays affine in the lane index, and known divisibility.
  if (dtype == DataType::kInt64 && a.form != Form::kVector && b.form != Form::kVector) {
    std::optional<CgValue> index = IndexArithmetic(kind, a, b);
    if (index) return *index;
  }
  if (kind == ExprKind::kAnd || kind == ExprKind::kOr) {
    return Apply({ToBool(a), ToBool(b)}, DataType::kBool, [&](const std::vector<llvm::Value*>& v) {
      return kind == ExprKind::kAnd ? builder_.CreateAnd(v[0], v[1])
                                    : builder_.CreateOr(v[0], v[1]);
    });
  }
  DataType result = ir::IsComparison(kind) ? DataType::kBool : dtype;
  return Apply({a, b}, result, [&](const std::vector<llvm::Value*>& v) {
    return BinaryOp(kind, dtype, v[0], v[1]);
  });
}

namespace {

// A number `v`'s lane-0 value is known to be a multiple of; 0 when it is known to be 0.
int64_t KnownMultiple(const CgValue& v) {
  if (const llvm::ConstantInt* c = ConstantIntOf(v.value)) {
    int64_t value = c->getSExtValue();
    if (value == std::numeric_limits<int64_t>::min()) return 1;
    return std::abs(value);
  }
  return v.multiple;
}

// A multiple of x * y given multiples of x and y (1 when the product is out of range).
int64_t ProductMultiple(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return 1;
  return product <= (int64_t{1} << 40) ? product : 1;
}

}  // namespace

std::optional<CgValue> KernelCodegen::IndexArithmetic(ExprKind kind, const CgValue& a,
                                                      const CgValue& b) {
  const DataType dtype = DataType::kInt64;
  int64_t ma = KnownMultiple(a), mb = KnownMultiple(b);
  auto make = [&](llvm::Value* base, int64_t stride, int64_t multiple) {
    CgValue v = stride == 0 ? Uniform(base, dtype) : CgValue{Form::kAffine, base, stride, dtype};
    v.multiple = multiple;
    return v;
  };
  bool uniform = a.uniform() && b.uniform();
  if (kind == ExprKind::kAdd || kind == ExprKind::kSub) {
    llvm::Value* base = kind == ExprKind::kAdd ? builder_.CreateAdd(a.value, b.value)
                                               : builder_.CreateSub(a.value, b.value);
    int64_t stride = kind == ExprKind::kAdd ? a.stride + b.stride : a.stride - b.stride;
    return make(base, stride, std::gcd(ma, mb));
  }
  if (kind == ExprKind::kMul) {
    const CgValue& factor = b.uniform() ? b : a;
    const CgValue& other = b.uniform() ? a : b;
    const llvm::ConstantInt* c = factor.uniform() ? ConstantIntOf(factor.value) : nullptr;
    if (uniform || c) {
      int64_t scale = c ? c->getSExtValue() : 0;
      return make(builder_.CreateMul(other.value, factor.value), other.stride * scale,
                  ProductMultiple(ma, mb));
    }
    return std::nullopt;
  }
  if (kind == ExprKind::kFloorDiv || kind == ExprKind::kFloorMod) {
    // x = base + stride * lane with base a multiple of g = gcd(multiple of base, c) and every
    // lane within [base, base + g): no lane crosses a multiple of c (those are multiples of g
    // too), so floordiv(x, c) = floordiv(base, c) for all lanes and floormod(x, c) =
    // floormod(base, c) + stride * lane. (A panel-packed operand b[j / 16, k, j % 16] read by
    // 8 lanes at j = 16 t + 8.)
    const llvm::ConstantInt* divisor = b.uniform() ? ConstantIntOf(b.value) : nullptr;
    if (!divisor || divisor->getSExtValue() <= 0) return std::nullopt;
    int64_t c = divisor->getSExtValue();
    int64_t span = a.stride * std::max(0, width_ - 1);
    int64_t g = ma == 0 ? c : std::gcd(ma, c);
    if (a.stride < 0 || span >= g) return std::nullopt;
    if (ma % c == 0) {
      if (kind == ExprKind::kFloorMod) return make(builder_.getInt64(0), a.stride, 0);
      return make(builder_.CreateSDiv(a.value, b.value, "", /*isExact=*/true), 0, ma / c);
    }
    llvm::Value* quotient = BinaryOp(ExprKind::kFloorDiv, dtype, a.value, b.value);
    if (kind == ExprKind::kFloorDiv) return make(quotient, 0, 1);
    llvm::Value* remainder = builder_.CreateSub(a.value, builder_.CreateMul(quotient, b.value));
    return make(remainder, a.stride, g);
  }
  if (kind == ExprKind::kLT || kind == ExprKind::kGE || kind == ExprKind::kLE ||
      kind == ExprKind::kGT) {
    // x = base + lane (stride 1) against a constant c, with base a multiple of the width:
    // lanes cover [base, base + width) and never cross a multiple of the width. x < c and
    // x >= c change between c - 1 and c, x <= c and x > c between c and c + 1: when that point
    // is a multiple of the width too, every lane compares as lane 0 does (a concat's part
    // selected per vector).
    const llvm::ConstantInt* limit = b.uniform() ? ConstantIntOf(b.value) : nullptr;
    if (!limit || a.form != Form::kAffine || a.stride != 1 || ma <= 0 || width_ <= 1 ||
        ma % width_ != 0) {
      return std::nullopt;
    }
    int64_t change =
        limit->getSExtValue() + (kind == ExprKind::kLE || kind == ExprKind::kGT ? 1 : 0);
    if (change % width_ != 0) return std::nullopt;
    return Uniform(BinaryOp(kind, dtype, a.value, b.value), DataType::kBool);
  }
  return std::nullopt;
}

llvm::Value* KernelCodegen::BinaryOp(ExprKind kind, DataType dtype, llvm::Value* a,
                                     llvm::Value* b) {
  auto& B = builder_;
  if (dtype == DataType::kBool && !ir::IsComparison(kind)) {
    // Arithmetic on bools happens on 0/1 integers; the result is normalized to a bool.
    llvm::Type* wide = WithElement(a->getType(), B.getInt64Ty());
    llvm::Value* r = BinaryOp(kind, DataType::kInt64, B.CreateZExt(a, wide), B.CreateZExt(b, wide));
    return B.CreateICmpNE(r, llvm::Constant::getNullValue(wide));
  }
  if (ir::IsFloat(dtype)) {
    switch (kind) {
      case ExprKind::kAdd:
        return B.CreateFAdd(a, b);
      case ExprKind::kSub:
        return B.CreateFSub(a, b);
      case ExprKind::kMul:
        return B.CreateFMul(a, b);
      case ExprKind::kDiv:
        return B.CreateFDiv(a, b);
      case ExprKind::kFloorDiv:
        return B.CreateUnaryIntrinsic(llvm::Intrinsic::floor, B.CreateFDiv(a, b));
      case ExprKind::kFloorMod: {
        llvm::Value* q = B.CreateUnaryIntrinsic(llvm::Intrinsic::floor, B.CreateFDiv(a, b));
        return B.CreateFSub(a, B.CreateFMul(q, b));
      }
      // std::min / std::max, NaN handling included.
      case ExprKind::kMin:
        return B.CreateSelect(B.CreateFCmpOLT(b, a), b, a);
      case ExprKind::kMax:
        return B.CreateSelect(B.CreateFCmpOLT(a, b), b, a);
      case ExprKind::kEQ:
        return B.CreateFCmpOEQ(a, b);
      case ExprKind::kNE:
        return B.CreateFCmpUNE(a, b);
      case ExprKind::kLT:
        return B.CreateFCmpOLT(a, b);
      case ExprKind::kLE:
        return B.CreateFCmpOLE(a, b);
      case ExprKind::kGT:
        return B.CreateFCmpOGT(a, b);
      case ExprKind::kGE:
        return B.CreateFCmpOGE(a, b);
      default:
        break;
    }
  } else {
    bool is_signed = !IsUnsigned(dtype);
    switch (kind) {
      case ExprKind::kAdd:
        return B.CreateAdd(a, b);
      case ExprKind::kSub:
        return B.CreateSub(a, b);
      case ExprKind::kMul:
        return B.CreateMul(a, b);
      case ExprKind::kDiv:
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
        return IntegerDivision(kind, is_signed, a, b);
      case ExprKind::kMin:
        return B.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a,
                                       b);
      case ExprKind::kMax:
        return B.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a,
                                       b);
      case ExprKind::kEQ:
        return B.CreateICmpEQ(a, b);
      case ExprKind::kNE:
        return B.CreateICmpNE(a, b);
      case ExprKind::kLT:
        return is_signed ? B.CreateICmpSLT(a, b) : B.CreateICmpULT(a, b);
      case ExprKind::kLE:
        return is_signed ? B.CreateICmpSLE(a, b) : B.CreateICmpULE(a, b);
      case ExprKind::kGT:
        return is_signed ? B.CreateICmpSGT(a, b) : B.CreateICmpUGT(a, b);
      case ExprKind::kGE:
        return is_signed ? B.CreateICmpSGE(a, b) : B.CreateICmpUGE(a, b);
      default:
        break;
    }
  }
  throw Error(
      fmt::format("cannot generate code for '{}' on {}", ir::ToString(kind), ir::ToString(dtype)));
}

llvm::Value* KernelCodegen::IntegerDivision(ExprKind kind, bool is_signed, llvm::Value* a,
                                            llvm::Value* b) {
  auto& B = builder_;
  llvm::Type* type = a->getType();
  llvm::Constant* zero = llvm::Constant::getNullValue(type);
  llvm::Constant* one = llvm::ConstantInt::get(type, 1);
  const llvm::ConstantInt* constant = ConstantIntOf(b);
  bool floor = kind != ExprKind::kDiv;
  if (constant && constant->getValue().isStrictlyPositive() && constant->getValue().isPowerOf2() &&
      floor) {
    // Floor division by a power of two: a shift and a mask, whatever the sign of `a`.
    unsigned shift = constant->getValue().logBase2();
    if (kind == ExprKind::kFloorDiv) {
      return is_signed ? B.CreateAShr(a, shift) : B.CreateLShr(a, shift);
    }
    return B.CreateAnd(a, llvm::ConstantInt::get(type, constant->getValue() - 1));
  }
  llvm::Value* divisor = b;
  llvm::Value* minus_one = nullptr;
  bool safe = constant && !constant->isZero() && !(is_signed && constant->isMinusOne());
  if (!safe) {
    // Never trap: division by zero yields an unspecified value and x / -1 is computed as -x.
    llvm::Value* bad = B.CreateICmpEQ(b, zero);
    if (is_signed) {
      minus_one = B.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(type));
      bad = B.CreateOr(bad, minus_one);
    }
    divisor = B.CreateSelect(bad, one, b);
  }
  llvm::Value* q = is_signed ? B.CreateSDiv(a, divisor) : B.CreateUDiv(a, divisor);
  llvm::Value* r = is_signed ? B.CreateSRem(a, divisor) : B.CreateURem(a, divisor);
  if (minus_one) {
    q = B.CreateSelect(minus_one, B.CreateNeg(a), q);
    r = B.CreateSelect(minus_one, zero, r);
  }
  if (kind == ExprKind::kDiv || !is_signed) return kind == ExprKind::kFloorMod ? r : q;
  // Round toward negative infinity: adjust when the remainder and the divisor differ in sign.
  llvm::Value* adjust =
      B.CreateAnd(B.CreateICmpNE(r, zero), B.CreateICmpSLT(B.CreateXor(r, divisor), zero));
  if (kind == ExprKind::kFloorDiv) return B.CreateSub(q, B.CreateZExt(adjust, type));
  return B.CreateAdd(r, B.CreateSelect(adjust, divisor, zero));
}

CgValue KernelCodegen::Cast(const CgValue& v, DataType to) {
  if (v.dtype == to) return v;
  DataType from = v.dtype;
  return Apply({v}, to, [&](const std::vector<llvm::Value*>& x) { return CastOp(from, to, x[0]); });
}

llvm::Value* KernelCodegen::CastOp(DataType from, DataType to, llvm::Value* v) {
  auto& B = builder_;
  llvm::Type* target = WithElement(v->getType(), ScalarType(to));
  llvm::Type* f32 = WithElement(v->getType(), B.getFloatTy());
  if (to == DataType::kBool) {
    llvm::Constant* zero = llvm::Constant::getNullValue(v->getType());
    return ir::IsFloat(from) ? B.CreateFCmpUNE(v, zero) : B.CreateICmpNE(v, zero);
  }
  if (ir::IsFloat(to)) {
    if (ir::IsFloat(from)) {
      // The interpreter rounds through f32 on the way to f16.
      if (to == DataType::kFloat16 && from == DataType::kFloat64) v = B.CreateFPTrunc(v, f32);
      return B.CreateFPCast(v, target);
    }
    // Integers convert through f64 (to f32) or f32 (to f16), as the interpreter does.
    llvm::Type* via =
        to == DataType::kFloat16
            ? f32
            : (from == DataType::kInt64 ? WithElement(v->getType(), B.getDoubleTy()) : target);
    llvm::Value* converted = IsUnsigned(from) ? B.CreateUIToFP(v, via) : B.CreateSIToFP(v, via);
    return via == target ? converted : B.CreateFPTrunc(converted, target);
  }
  if (ir::IsFloat(from)) {
    // Truncation toward zero, saturating, NaN -> 0 (Tensor::SetDouble's rules).
    if (from == DataType::kFloat16) v = B.CreateFPExt(v, f32);
    llvm::Intrinsic::ID id =
        to == DataType::kUInt8 ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return B.CreateIntrinsic(id, {target, v->getType()}, {v});
  }
  return B.CreateIntCast(v, target, !IsUnsigned(from));
}

CgValue KernelCodegen::ToBool(const CgValue& v) {
  if (v.dtype == DataType::kBool) return v;
  DataType from = v.dtype;
  return Apply({v}, DataType::kBool, [&](const std::vector<llvm::Value*>& x) -> llvm::Value* {
    if (ir::IsFloat(from)) {
      // Non-zero after truncation toward zero.
      llvm::Value* magnitude = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x[0]);
      return builder_.CreateFCmpUGE(magnitude, llvm::ConstantFP::get(x[0]->getType(), 1.0));
    }
    return builder_.CreateICmpNE(x[0], llvm::Constant::getNullValue(x[0]->getType()));
  });
}

CgValue KernelCodegen::EvalSelect(const Expr& e) {
  CheckOperands(e, 3);
  CgValue condition = ToBool(Eval(e->operands[0]));
  if (e->operands[1]->dtype != e->operands[2]->dtype) {
    throw Error(fmt::format("select branches have different types {} and {}",
                            ir::ToString(e->operands[1]->dtype),
                            ir::ToString(e->operands[2]->dtype)));
  }
  if (!ir::HasLoad(e->operands[1]) && !ir::HasLoad(e->operands[2])) {
    CgValue t = Eval(e->operands[1]);
    CgValue f = Eval(e->operands[2]);
    return Apply({condition, t, f}, t.dtype, [&](const std::vector<llvm::Value*>& v) {
      return builder_.CreateSelect(v[0], v[1], v[2]);
    });
  }
  // A load in an arm runs only where that arm is selected (it may be out of bounds elsewhere).
  if (condition.uniform()) {
    if (const llvm::ConstantInt* c = ConstantIntOf(condition.value)) {
      return Eval(e->operands[c->isOne() ? 1 : 2]);
    }
    // Cheap arms (a padded input's load) are both evaluated, their loads guarded, and selected:
    // straight-line code that keeps a register tile in registers, where a branch per load
    // splits it into blocks.
    if (IsSpeculatable(e->operands[1]) && IsSpeculatable(e->operands[2])) {
      CgValue t = EvalGuarded(e->operands[1], condition.value);
      CgValue f = EvalGuarded(e->operands[2], builder_.CreateNot(condition.value));
      return Apply({condition, t, f}, t.dtype, [&](const std::vector<llvm::Value*>& v) {
        return builder_.CreateSelect(v[0], v[1], v[2]);
      });
    }
    llvm::Function* fn = function_;
    auto* then_block = llvm::BasicBlock::Create(context_, "select.true", fn);
    auto* else_block = llvm::BasicBlock::Create(context_, "select.false", fn);
    PendingBlock pending_merge(context_, "select.end", fn);
    llvm::BasicBlock* merge = pending_merge.get();
    builder_.CreateCondBr(condition.value, then_block, else_block);
    builder_.SetInsertPoint(then_block);
    CgValue t = Eval(e->operands[1]);
    llvm::BasicBlock* then_end = builder_.GetInsertBlock();
    builder_.SetInsertPoint(else_block);
    CgValue f = Eval(e->operands[2]);
    llvm::BasicBlock* else_end = builder_.GetInsertBlock();
    bool vector = !t.uniform() || !f.uniform();
    builder_.SetInsertPoint(then_end);
    llvm::Value* tv = vector ? Materialize(t) : t.value;
    builder_.CreateBr(merge);
    builder_.SetInsertPoint(else_end);
    llvm::Value* fv = vector ? Materialize(f) : f.value;
    builder_.CreateBr(merge);
    pending_merge.Insert();
    builder_.SetInsertPoint(merge);
    llvm::PHINode* phi = builder_.CreatePHI(tv->getType(), 2);
    phi->addIncoming(tv, then_end);
    phi->addIncoming(fv, else_end);
    return vector ? Vector(phi, t.dtype) : Uniform(phi, t.dtype);
  }
  llvm::Value* lanes = Materialize(condition);
  llvm::Value* saved = mask_;
  mask_ = MaskAnd(lanes);
  CgValue t = Eval(e->operands[1]);
  mask_ = saved;
  mask_ = MaskAnd(builder_.CreateNot(lanes));
  CgValue f = Eval(e->operands[2]);
  mask_ = saved;
  return Vector(builder_.CreateSelect(lanes, Materialize(t), Materialize(f)), t.dtype);
}

CgValue KernelCodegen::EvalGuarded(const Expr& arm, llvm::Value* wanted) {
  llvm::Value* saved = load_guard_;
  load_guard_ = saved ? builder_.CreateAnd(saved, wanted) : wanted;
  CgValue value = Eval(arm);
  load_guard_ = saved;
  return value;
}

// ---- memory

llvm::Value* KernelCodegen::BufferPointer(const ir::Buffer& buffer) {
  if (!buffer) throw Error("access to a null buffer");
  auto it = buffers_.find(buffer.get());
  if (it == buffers_.end()) {
    throw Error(fmt::format(
        "buffer '{}' is neither a parameter of the kernel nor allocated by an enclosing block",
        buffer->name));
  }
  return it->second;
}

bool KernelCodegen::AddToIndexSum(const Expr& e, int64_t scale, IndexSum* sum) {
  if (e->dtype == DataType::kInt64) {
    switch (e->kind) {
      case ExprKind::kIntImm: {
        int64_t scaled = 0;
        return !__builtin_mul_overflow(e->int_value, scale, &scaled) &&
               !__builtin_add_overflow(sum->constant, scaled, &sum->constant);
      }
      case ExprKind::kVar: {
        auto unrolled = unrolled_values_.find(e.get());
        if (unrolled != unrolled_values_.end()) return AddToIndexSum(unrolled->second, scale, sum);
        auto bound = iterator_bindings_.find(e.get());
        if (bound != iterator_bindings_.end()) return AddToIndexSum(bound->second, scale, sum);
        break;
      }
      case ExprKind::kAdd:
      case ExprKind::kSub:
        if (e->operands.size() != 2) break;
        return AddToIndexSum(e->operands[0], scale, sum) &&
               AddToIndexSum(e->operands[1], e->kind == ExprKind::kAdd ? scale : -scale, sum);
      case ExprKind::kMul:
        if (e->operands.size() != 2) break;
        for (int k = 0; k < 2; ++k) {
          if (e->operands[k]->kind != ExprKind::kIntImm) continue;
          int64_t product = 0;
          if (__builtin_mul_overflow(e->operands[k]->int_value, scale, &product)) return false;
          return AddToIndexSum(e->operands[1 - k], product, sum);
        }
        break;
      default:
        break;
    }
  }
  for (auto& [term, coefficient] : sum->terms) {
    if (term.get() == e.get()) {
      return !__builtin_add_overflow(coefficient, scale, &coefficient);
    }
  }
  sum->terms.emplace_back(e, scale);
  return true;
}

CgValue KernelCodegen::FlatOffset(const ir::Buffer& buffer, const std::vector<Expr>& indices) {
  if (indices.size() != buffer->shape.size()) {
    throw Error(fmt::format("access to buffer '{}' (rank {}) with {} indices", buffer->name,
                            buffer->shape.size(), indices.size()));
  }
  for (size_t k = 0; k < indices.size(); ++k) {
    if (ir::IsFloat(indices[k]->dtype)) {
      throw Error(fmt::format("index {} of buffer '{}' is a {} expression", k, buffer->name,
                              ir::ToString(indices[k]->dtype)));
    }
  }
  // 1. The flat index sum(index_k * stride_k) as one sum over the loop variables and opaque
  //    terms, looking through block iterators and the counters of replicated loops: accesses
  //    of different unrolled copies, or of neighbouring elements, then differ only in the
  //    constant, which is added last so that LLVM shares the rest and folds the constant
  //    into the address.
  std::vector<int64_t> strides(indices.size(), 1);
  bool linear = true;
  for (size_t k = indices.size(); k-- > 1 && linear;) {
    linear = !__builtin_mul_overflow(strides[k], buffer->shape[k], &strides[k - 1]);
  }
  IndexSum sum;
  for (size_t k = 0; k < indices.size() && linear; ++k) {
    linear = AddToIndexSum(indices[k], strides[k], &sum);
  }
  if (linear) {
    // 2. The terms in order of first appearance (outer indices first), then the constant.
    std::optional<CgValue> offset;
    for (const auto& [term, coefficient] : sum.terms) {
      if (coefficient == 0) continue;
      CgValue value = Cast(Eval(term), DataType::kInt64);
      if (coefficient != 1) {
        value = Binary(ExprKind::kMul, value,
                       Uniform(builder_.getInt64(coefficient), DataType::kInt64));
      }
      offset = offset ? Binary(ExprKind::kAdd, *offset, value) : value;
    }
    CgValue constant = Uniform(builder_.getInt64(sum.constant), DataType::kInt64);
    if (!offset) return constant;
    return sum.constant == 0 ? *offset : Binary(ExprKind::kAdd, *offset, constant);
  }
  // 3. Coefficients that overflow i64: the index in Horner form.
  CgValue offset = Uniform(builder_.getInt64(0), DataType::kInt64);
  for (size_t k = 0; k < indices.size(); ++k) {
    CgValue index = Cast(Eval(indices[k]), DataType::kInt64);
    if (k == 0) {
      offset = index;
    } else {
      CgValue extent = Uniform(builder_.getInt64(buffer->shape[k]), DataType::kInt64);
      offset = Binary(ExprKind::kAdd, Binary(ExprKind::kMul, offset, extent), index);
    }
  }
  return offset;
}

CgValue KernelCodegen::EvalLoad(const Expr& e) {
  if (!e->buffer) throw Error("load of a null buffer");
  if (e->dtype != e->buffer->dtype) {
    throw Error(fmt::format("load of {} from buffer '{}' of {}", ir::ToString(e->dtype),
                            e->buffer->name, ir::ToString(e->buffer->dtype)));
  }
  for (const Expr& index : e->operands) {
    if (!index.defined())
      throw Error(fmt::format("undefined index of buffer '{}'", e->buffer->name));
  }
  if (llvm::Value* hoisted = HoistedParameterLoad(e)) return Uniform(hoisted, e->dtype);
  return LoadElements(e->buffer, FlatOffset(e->buffer, e->operands));
}

llvm::Value* KernelCodegen::HoistedParameterLoad(const Expr& load) {
  if (gpu_ || load_guard_ != nullptr || mask_ != nullptr) return nullptr;
  const ir::BufferNode* buffer = load->buffer.get();
  if (!IsReadOnlyParameter(buffer)) return nullptr;
  // 1. A constant element inside the buffer.
  int64_t flat = 0;
  for (size_t axis = 0; axis < load->operands.size(); ++axis) {
    int64_t index = 0;
    if (axis >= buffer->shape.size() || !ir::AsConstInt(load->operands[axis], &index) ||
        index < 0 || index >= buffer->shape[axis]) {
      return nullptr;
    }
    flat = flat * buffer->shape[axis] + index;
  }
  // 2. Read once per function, in its entry block.
  auto key = std::make_tuple(function_, buffer, flat);
  auto it = hoisted_loads_.find(key);
  if (it != hoisted_loads_.end()) return it->second;
  llvm::IRBuilder<> entry(entry_block_->getTerminator());
  llvm::Type* type = ScalarType(load->dtype);
  llvm::Value* address = entry.CreateGEP(type, BufferPointer(load->buffer), entry.getInt64(flat));
  llvm::Value* value = entry.CreateLoad(type, address, buffer->name);
  hoisted_loads_[key] = value;
  return value;
}

bool KernelCodegen::InStackArray(const ir::Buffer& buffer, const CgValue& offset) {
  if (!llvm::isa<llvm::AllocaInst>(BufferPointer(buffer))) return false;
  const llvm::ConstantInt* first = ConstantIntOf(offset.value);
  if (!first || offset.form != Form::kAffine || offset.stride != 1) return false;
  int64_t begin = first->getSExtValue();
  return begin >= 0 && begin + width_ <= ir::NumElements(buffer->shape);
}

CgValue KernelCodegen::LoadElements(const ir::Buffer& buffer, const CgValue& offset) {
  if (load_guard_ != nullptr) {
    // An unwanted load reads element 0 (a scalar, or a vector when the buffer holds one), or
    // no lane at all (a mask), instead of its own element.
    llvm::Value* guard = load_guard_;
    load_guard_ = nullptr;
    int64_t elements = ir::NumElements(buffer->shape);
    bool scalar = width_ == 0 || (offset.uniform() && mask_ == nullptr);
    bool contiguous = !scalar && mask_ == nullptr && offset.form == Form::kAffine &&
                      offset.stride == 1 && elements >= width_;
    CgValue loaded;
    if ((scalar && elements > 0) || contiguous) {
      CgValue wanted_offset = offset;
      wanted_offset.value = builder_.CreateSelect(guard, offset.value, builder_.getInt64(0));
      loaded = LoadElements(buffer, wanted_offset);
    } else {
      llvm::Value* saved = mask_;
      if (width_ > 0) mask_ = MaskAnd(Splat(guard));
      loaded = LoadElements(buffer, offset);
      mask_ = saved;
    }
    load_guard_ = guard;
    return loaded;
  }
  DataType dtype = buffer->dtype;
  llvm::Type* memory = MemoryType(dtype);
  llvm::Value* base = BufferPointer(buffer);
  llvm::Align align(static_cast<uint64_t>(ir::SizeOf(dtype)));
  auto to_value = [&](llvm::Value* loaded) -> llvm::Value* {
    if (dtype != DataType::kBool) return loaded;
    return builder_.CreateICmpNE(loaded, llvm::Constant::getNullValue(loaded->getType()));
  };
  if (width_ == 0 || (offset.uniform() && mask_ == nullptr)) {
    llvm::Value* pointer = builder_.CreateInBoundsGEP(memory, base, offset.value);
    return Uniform(to_value(builder_.CreateAlignedLoad(memory, pointer, align)), dtype);
  }
  if (offset.uniform() && ir::NumElements(buffer->shape) > 0) {
    // The same element for every active lane: one scalar load, of element 0 (always valid)
    // when no lane is active.
    llvm::Value* any = builder_.CreateOrReduce(mask_);
    llvm::Value* index = builder_.CreateSelect(any, offset.value, builder_.getInt64(0));
    llvm::Value* pointer = builder_.CreateInBoundsGEP(memory, base, index);
    return Uniform(to_value(builder_.CreateAlignedLoad(memory, pointer, align)), dtype);
  }
  auto* vector_type = llvm::FixedVectorType::get(memory, static_cast<unsigned>(width_));
  llvm::Constant* zeros = llvm::Constant::getNullValue(vector_type);
  max_vector_bits_ = std::max<int64_t>(max_vector_bits_, width_ * ir::SizeOf(dtype) * 8);
  if (offset.form == Form::kAffine && offset.stride == 1) {
    llvm::Value* pointer = builder_.CreateInBoundsGEP(memory, base, offset.value);
    // Inactive lanes of a stack array may be read (its whole span is in bounds): a plain load
    // keeps a register tile promotable to registers where a masked one would not.
    llvm::Value* loaded = mask_ && !InStackArray(buffer, offset)
                              ? static_cast<llvm::Value*>(builder_.CreateMaskedLoad(
                                    vector_type, pointer, align, mask_, zeros))
                              : builder_.CreateAlignedLoad(vector_type, pointer, align);
    return Vector(to_value(loaded), dtype);
  }
  if (ir::NumElements(buffer->shape) == 0) return Vector(to_value(zeros), dtype);  // never read
  if (offset.form == Form::kAffine && offset.stride >= 2 && offset.stride <= kMaxStridedLoad &&
      width_ * offset.stride <= 2 * kMaxVectorWidth) {
    // A small constant stride (strided convolutions, pooling): one contiguous masked load of
    // the span the lanes cover, then a shuffle picking every stride-th element. Only the
    // elements the lanes read are loaded (the mask), so nothing outside the buffer is touched.
    auto stride = static_cast<int>(offset.stride);
    int span = width_ * stride;
    auto* span_type = llvm::FixedVectorType::get(memory, static_cast<unsigned>(span));
    std::vector<int> spread(static_cast<size_t>(span)), pick(static_cast<size_t>(width_));
    for (int j = 0; j < span; ++j)
      spread[static_cast<size_t>(j)] = j % stride == 0 ? j / stride : width_;
    for (int l = 0; l < width_; ++l) pick[static_cast<size_t>(l)] = l * stride;
    llvm::Value* lanes = mask_ ? mask_ : AllLanesMask();
    llvm::Value* span_mask =
        builder_.CreateShuffleVector(lanes, llvm::Constant::getNullValue(lanes->getType()), spread);
    llvm::Value* pointer = builder_.CreateInBoundsGEP(memory, base, offset.value);
    llvm::Value* loaded = builder_.CreateMaskedLoad(span_type, pointer, align, span_mask,
                                                    llvm::Constant::getNullValue(span_type));
    return Vector(to_value(builder_.CreateShuffleVector(loaded, pick)), dtype);
  }
  // Gathers are never masked: inactive lanes read element 0 (always valid) and their values are
  // ignored. LLVM 16 can miscompile masked gathers whose width is not a power of two (an index
  // register reused as the destination, #UD at run time;
  // tests/backends/llvm/codegen_gather_test.cc).
  llvm::Value* offsets = Materialize(offset);
  if (mask_) {
    offsets =
        builder_.CreateSelect(mask_, offsets, llvm::Constant::getNullValue(offsets->getType()));
  }
  llvm::Value* pointers = builder_.CreateInBoundsGEP(memory, base, offsets);
  llvm::Value* loaded =
      builder_.CreateMaskedGather(vector_type, pointers, align, AllLanesMask(), zeros);
  return Vector(to_value(loaded), dtype);
}

void KernelCodegen::StoreElements(const ir::Buffer& buffer, const CgValue& offset,
                                  const CgValue& value) {
  DataType dtype = buffer->dtype;
  if (value.dtype != dtype) {
    throw Error(fmt::format("store of a {} value to buffer '{}' of {}", ir::ToString(value.dtype),
                            buffer->name, ir::ToString(dtype)));
  }
  llvm::Type* memory = MemoryType(dtype);
  llvm::Value* base = BufferPointer(buffer);
  llvm::Align align(static_cast<uint64_t>(ir::SizeOf(dtype)));
  auto to_memory = [&](llvm::Value* v) -> llvm::Value* {
    if (dtype != DataType::kBool) return v;
    return builder_.CreateZExt(v, WithElement(v->getType(), builder_.getInt8Ty()));
  };
  if (width_ == 0 || (offset.uniform() && value.uniform() && mask_ == nullptr)) {
    // In vector code: every lane stores the same value to the same element.
    llvm::Value* pointer = builder_.CreateInBoundsGEP(memory, base, offset.value);
    builder_.CreateAlignedStore(to_memory(value.value), pointer, align);
    return;
  }
  llvm::Value* lanes = to_memory(Materialize(value));
  max_vector_bits_ = std::max<int64_t>(max_vector_bits_, width_ * ir::SizeOf(dtype) * 8);
  if (offset.form == Form::kAffine && offset.stride == 1) {
    llvm::Value* pointer = builder_.CreateInBoundsGEP(memory, base, offset.value);
    if (mask_ && InStackArray(buffer, offset)) {
      // A private stack array: inactive lanes keep their values through a blend.
      llvm::Value* old = builder_.CreateAlignedLoad(lanes->getType(), pointer, align);
      builder_.CreateAlignedStore(builder_.CreateSelect(mask_, lanes, old), pointer, align);
    } else if (mask_) {
      builder_.CreateMaskedStore(lanes, pointer, align, mask_);
    } else {
      builder_.CreateAlignedStore(lanes, pointer, align);
    }
    return;
  }
  // Scatter: lanes that hit the same element store in lane order, as a serial loop would.
  llvm::Value* pointers = builder_.CreateInBoundsGEP(memory, base, Materialize(offset));
  builder_.CreateMaskedScatter(lanes, pointers, align, mask_ ? mask_ : AllLanesMask());
}

}  // namespace tandem::backends::codegen
