// Intrinsic calls of the kernel code generator, and Tandem's own vectorizable approximations.
//
// f32 approximations; the bounds are relative errors for results that are normal f32 numbers,
// checked by tests/backends/llvm/intrinsics_test.cc against double-precision libm (measured maxima
// in parentheses):
//   exp      2^n * e^r with n = round(x / ln 2), |r| <= ln2 / 2 (Cody-Waite split of ln 2),
//            e^r by its degree-7 Taylor polynomial: < 3e-7 (7e-8).
//   sigmoid  e = exp(-|x|) (never above 1, so 2^n is one exponent field and a degree-6 Taylor
//            polynomial suffices), then 1 / (1 + e) for x >= 0 and e / (1 + e) below:
//            < 5e-7 (2.5e-7).
//   tanh     |x| < 0.55: odd Taylor series to x^15; else 1 - 2 / (exp(2|x|) + 1) with the sign
//            of x: < 5e-7 (1.5e-7).
//   erf      x clamped to [-4, 4] (beyond, erf is 1 in f32), x P(x^2) / Q(x^2) with P of degree
//            6 and Q of degree 5, fitted here for the least largest relative error (weighted
//            least squares iterated towards minimax on [0, 4]), the result clamped to [-1, 1]:
//            < 5e-7 (3.6e-7). One division and 11 FMAs: GELU's erf was a tenth of BERT's time
//            with a Taylor branch and an exp-based branch both computed in every vector.
// Results below the normal range are within 1e-37 absolute; NaN and infinities propagate as
// in libm.
// f64 erf and tanh call libm (lane by lane in vector code); every other function maps to an
// LLVM intrinsic (llvm.exp, llvm.log, llvm.sqrt, llvm.pow, llvm.fabs, llvm.floor, llvm.ceil, and
// llvm.rint for round: the default rounding mode rounds halves to even).
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <cmath>
#include <map>

#include "backends/llvm/codegen_internal.h"
#include "ir/error.h"

namespace tandem::backends::codegen {

using ir::DataType;
using ir::Error;
using ir::Expr;

namespace {

const std::map<std::string, size_t>& IntrinsicArity() {
  static const std::map<std::string, size_t> arity = {
      {"exp", 1}, {"log", 1}, {"sqrt", 1},  {"erf", 1},  {"tanh", 1}, {"sigmoid", 1},
      {"pow", 2}, {"abs", 1}, {"floor", 1}, {"ceil", 1}, {"round", 1}};
  return arity;
}

// i32 with the shape of `type` (a scalar or a vector of as many lanes): the integer view of f32
// values for building exponent fields and testing sign bits.
llvm::Type* Int32Like(llvm::Type* type) {
  llvm::Type* i32 = llvm::Type::getInt32Ty(type->getContext());
  if (auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    return llvm::FixedVectorType::get(i32, vector->getNumElements());
  }
  return i32;
}

}  // namespace

CgValue KernelCodegen::EvalCall(const Expr& e) {
  if (e->name == "checked_index") return CheckedIndex(e);
  auto it = IntrinsicArity().find(e->name);
  if (it == IntrinsicArity().end()) throw Error(fmt::format("unknown intrinsic '{}'", e->name));
  if (e->operands.size() != it->second) {
    throw Error(fmt::format("intrinsic '{}' takes {} arguments but has {}", e->name, it->second,
                            e->operands.size()));
  }
  std::vector<CgValue> args;
  for (const Expr& operand : e->operands) {
    if (!operand.defined())
      throw Error(fmt::format("intrinsic '{}' has an undefined argument", e->name));
    args.push_back(Eval(operand));
  }
  DataType result = e->dtype;
  bool same_type = true;
  for (const CgValue& a : args) same_type = same_type && a.dtype == result;
  if (!ir::IsFloat(result) && same_type) {
    const std::string& name = e->name;
    bool is_unsigned = result == DataType::kUInt8 || result == DataType::kBool;
    if (name == "floor" || name == "ceil" || name == "round" || (name == "abs" && is_unsigned)) {
      return args[0];
    }
    if (name == "abs") {
      // |x| saturates for the most negative value, as the interpreter's conversion does.
      return Apply(args, result, [&](const std::vector<llvm::Value*>& v) {
        llvm::Value* magnitude =
            builder_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, v[0], builder_.getFalse());
        llvm::Value* wrapped =
            builder_.CreateICmpSLT(magnitude, llvm::Constant::getNullValue(v[0]->getType()));
        auto* type = llvm::cast<llvm::IntegerType>(v[0]->getType()->getScalarType());
        llvm::Constant* largest = llvm::ConstantInt::get(
            v[0]->getType(), llvm::APInt::getSignedMaxValue(type->getBitWidth()));
        return builder_.CreateSelect(wrapped, largest, magnitude);
      });
    }
  }
  // Computed in f32 for f32 and f16 results, in f64 otherwise (as the interpreter, which computes
  // in double and rounds to the result type).
  DataType compute = result == DataType::kFloat32 || result == DataType::kFloat16
                         ? DataType::kFloat32
                         : DataType::kFloat64;
  for (CgValue& a : args) a = Cast(a, compute);
  CgValue value = Apply(args, compute, [&](const std::vector<llvm::Value*>& v) {
    return MathFunction(e->name, compute, v);
  });
  return Cast(value, result);
}

llvm::Value* KernelCodegen::MathFunction(const std::string& name, DataType dtype,
                                         const std::vector<llvm::Value*>& args) {
  auto& B = builder_;
  llvm::Value* x = args[0];
  bool f32 = dtype == DataType::kFloat32;
  if (name == "exp") {
    if (f32 && x->getType()->isVectorTy()) return ExpF32(x);
    return B.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
  }
  if (name == "log") return B.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
  if (name == "sqrt") return B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  if (name == "abs") return B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  if (name == "floor") return B.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
  if (name == "ceil") return B.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
  if (name == "round") return B.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x);
  if (name == "pow") return B.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, args[1]);
  if (name == "erf") return f32 ? ErfF32(x) : LibmCall("erf", x);
  if (name == "tanh") return f32 ? TanhF32(x) : LibmCall("tanh", x);
  if (name == "sigmoid") {
    if (f32) return SigmoidF32(x);
    llvm::Value* e = B.CreateUnaryIntrinsic(llvm::Intrinsic::exp, B.CreateFNeg(x));
    llvm::Value* one = FloatConst(x->getType(), 1.0);
    return B.CreateFDiv(one, B.CreateFAdd(one, e));
  }
  throw Error(fmt::format("unknown intrinsic '{}'", name));
}

llvm::Value* KernelCodegen::FloatConst(llvm::Type* type, double value) {
  return llvm::ConstantFP::get(type, value);
}

llvm::Value* KernelCodegen::Polynomial(llvm::Value* x, const std::vector<double>& coefficients) {
  llvm::Type* type = x->getType();
  llvm::Value* r = FloatConst(type, coefficients.back());
  for (size_t k = coefficients.size() - 1; k-- > 0;) {
    r = builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type},
                                 {r, x, FloatConst(type, coefficients[k])});
  }
  return r;
}

llvm::Value* KernelCodegen::ExpF32(llvm::Value* x) {
  auto& B = builder_;
  llvm::Type* type = x->getType();
  llvm::Type* int_type = Int32Like(type);
  // Beyond these bounds the result is inf or rounds to 0.
  llvm::Value* clamped =
      B.CreateMaxNum(B.CreateMinNum(x, FloatConst(type, 89.0)), FloatConst(type, -105.0));
  llvm::Value* n = B.CreateUnaryIntrinsic(
      llvm::Intrinsic::floor,
      B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type},
                        {clamped, FloatConst(type, 1.44269504088896341), FloatConst(type, 0.5)}));
  // r = x - n ln2, with ln2 = 0.693359375 - 2.12194440e-4 (the first part has 9 bits: n * it
  // is exact).
  llvm::Value* r = B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type},
                                     {n, FloatConst(type, -0.693359375), clamped});
  r = B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type}, {n, FloatConst(type, 2.12194440e-4), r});
  llvm::Value* p =
      Polynomial(r, {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040});
  // 2^n as two factors 2^(n/2) so that n in [-152, 129] never leaves the exponent range.
  llvm::Value* ni = B.CreateFPToSI(n, int_type);
  llvm::Value* n1 = B.CreateAShr(ni, 1);
  llvm::Value* n2 = B.CreateSub(ni, n1);
  auto power_of_two = [&](llvm::Value* k) {
    llvm::Value* bits = B.CreateShl(B.CreateAdd(k, llvm::ConstantInt::get(int_type, 127)), 23);
    return B.CreateBitCast(bits, type);
  };
  llvm::Value* y = B.CreateFMul(B.CreateFMul(p, power_of_two(n1)), power_of_two(n2));
  return B.CreateSelect(B.CreateFCmpUNO(x, x), x, y);
}

// Steps:
//   1. a = min(|x|, 88), NaN kept: beyond 88, e^-a is below the smallest normal f32 and the
//      result is 1 or within 1e-37 of 0;
//   2. e = e^-a = 2^n e^r with n = round(-a / ln 2) in [-127, 0], |r| <= ln 2 / 2, e^r by its
//      degree-6 Taylor polynomial, 2^n built directly in the exponent field (n = -127 gives 0);
//   3. q = 1 / (1 + e), refined by a Newton step: the result for x >= 0; e q below (the sign
//      bit of x picks).
llvm::Value* KernelCodegen::SigmoidF32(llvm::Value* x) {
  auto& B = builder_;
  llvm::Type* type = x->getType();
  llvm::Type* int_type = Int32Like(type);
  // 1. The magnitude, clamped; a NaN fails the comparison and stays.
  llvm::Value* magnitude = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* limit = FloatConst(type, 88.0);
  llvm::Value* a = B.CreateSelect(B.CreateFCmpOGT(magnitude, limit), limit, magnitude);
  // 2. e^-a.
  llvm::Value* n = B.CreateUnaryIntrinsic(
      llvm::Intrinsic::floor,
      B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type},
                        {a, FloatConst(type, -1.44269504088896341), FloatConst(type, 0.5)}));
  // r = -a - n ln2, ln2 split as in ExpF32.
  llvm::Value* r = B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type},
                                     {n, FloatConst(type, -0.693359375), B.CreateFNeg(a)});
  r = B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type}, {n, FloatConst(type, 2.12194440e-4), r});
  llvm::Value* p = Polynomial(r, {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720});
  llvm::Value* bits = B.CreateShl(
      B.CreateAdd(B.CreateFPToSI(n, int_type), llvm::ConstantInt::get(int_type, 127)), 23);
  llvm::Value* e = B.CreateFMul(p, B.CreateBitCast(bits, type));
  // 3. The two branches of the logistic function.
  // The division may be a reciprocal estimate refined by a Newton step (LLVM does so for
  // vectors of an x86 target when the division allows a reciprocal and no infinities, as
  // 1 + e in [1, 2] does: rcpps or rcp14ps and two FMAs instead of a divider that takes up to
  // 16 cycles a vector). One more Newton step here makes the quotient exact where it matters
  // (sigmoid(0) = 0.5, sigmoid(large) = 1) and leaves an exact division's result as it was.
  llvm::Value* one = FloatConst(type, 1.0);
  llvm::Value* denominator = B.CreateFAdd(one, e);
  llvm::Value* q = B.CreateFDiv(one, denominator);
  if (auto* division = llvm::dyn_cast<llvm::Instruction>(q)) {
    division->setHasAllowReciprocal(true);
    division->setHasNoInfs(true);
  }
  llvm::Value* residual =
      B.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {B.CreateFNeg(denominator), q, one});
  q = B.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {q, residual, q});
  llvm::Value* negative =
      B.CreateICmpSLT(B.CreateBitCast(x, int_type), llvm::Constant::getNullValue(int_type));
  return B.CreateSelect(negative, B.CreateFMul(e, q), q);
}

llvm::Value* KernelCodegen::ErfF32(llvm::Value* x) {
  auto& B = builder_;
  llvm::Type* type = x->getType();
  llvm::Value* four = FloatConst(type, 4.0);
  llvm::Value* a = B.CreateBinaryIntrinsic(
      llvm::Intrinsic::maxnum, B.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, four),
      B.CreateFNeg(four));
  llvm::Value* z = B.CreateFMul(a, a);
  llvm::Value* numerator = Polynomial(
      z, {1.1283791678995128, 0.18355154635841847, 0.053480074809600125, 0.003704592882584947,
          0.0003512886321026566, 3.943316068830138e-06, -9.114759974560016e-09});
  llvm::Value* denominator =
      Polynomial(z, {1.0, 0.4960016880403176, 0.11272914884053928, 0.01506947935188481,
                     0.0012405885922673974, 5.61847077791347e-05});
  llvm::Value* y = B.CreateFMul(a, B.CreateFDiv(numerator, denominator));
  llvm::Value* one = FloatConst(type, 1.0);
  y = B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum,
                              B.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, y, one),
                              B.CreateFNeg(one));
  return B.CreateSelect(B.CreateFCmpUNO(x, x), x, y);
}

llvm::Value* KernelCodegen::TanhF32(llvm::Value* x) {
  auto& B = builder_;
  llvm::Type* type = x->getType();
  llvm::Value* a = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  static const std::vector<double> taylor = {
      1.0,         -1.0 / 3,         2.0 / 15,          -17.0 / 315,
      62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075, -929569.0 / 638512875};
  llvm::Value* small = B.CreateFMul(x, Polynomial(B.CreateFMul(x, x), taylor));
  llvm::Value* e = ExpF32(B.CreateFAdd(a, a));
  llvm::Value* one = FloatConst(type, 1.0);
  llvm::Value* large = B.CreateFSub(one, B.CreateFDiv(FloatConst(type, 2.0), B.CreateFAdd(e, one)));
  large = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large, x);
  return B.CreateSelect(B.CreateFCmpOLT(a, FloatConst(type, 0.55)), small, large);
}

CgValue KernelCodegen::CheckedIndex(const Expr& e) {
  if (e->operands.size() != 2) {
    throw Error(
        fmt::format("intrinsic 'checked_index' takes 2 arguments but has {}", e->operands.size()));
  }
  CgValue index = Cast(Eval(e->operands[0]), DataType::kInt64);
  CgValue extent = Cast(Eval(e->operands[1]), DataType::kInt64);
  llvm::Value* active_mask = mask_;  // null when every lane is active
  return Apply({index, extent}, DataType::kInt64, [&](const std::vector<llvm::Value*>& v) {
    auto& B = builder_;
    llvm::Value* zero = llvm::Constant::getNullValue(v[0]->getType());
    // 1. Wrap negative indices; every index still outside [0, extent) is bad (unsigned compare).
    llvm::Value* wrapped =
        B.CreateSelect(B.CreateICmpSLT(v[0], zero), B.CreateAdd(v[0], v[1]), v[0]);
    llvm::Value* bad = B.CreateICmpUGE(wrapped, v[1]);
    if (gpu_ == nullptr) {
      // 2. On a CPU, a bad index of an active lane is reported once per lane, off the hot path.
      auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(v[0]->getType());
      llvm::Value* reported = bad;
      if (active_mask != nullptr) {
        // A uniform index counts when any lane is active, a vector one in its active lanes.
        reported = B.CreateAnd(bad, vector ? active_mask : B.CreateOrReduce(active_mask));
      }
      llvm::Value* any = vector ? B.CreateOrReduce(reported) : reported;
      auto* report_block = llvm::BasicBlock::Create(context_, "index.bad", function_);
      auto* continue_block = llvm::BasicBlock::Create(context_, "index.ok", function_);
      llvm::MDBuilder weights(context_);
      B.CreateCondBr(any, report_block, continue_block, weights.createBranchWeights(1, 1 << 20));
      B.SetInsertPoint(report_block);
      llvm::Type* i64 = B.getInt64Ty();
      llvm::FunctionCallee report =
          module_.getOrInsertFunction("tandem_index_error", B.getVoidTy(), i64, i64, i64);
      if (auto* declaration = llvm::dyn_cast<llvm::Function>(report.getCallee())) {
        declaration->setDoesNotThrow();
        declaration->addFnAttr(llvm::Attribute::Cold);
      }
      unsigned lanes = vector ? vector->getNumElements() : 1;
      for (unsigned lane = 0; lane < lanes; ++lane) {
        auto at = [&](llvm::Value* x) { return vector ? B.CreateExtractElement(x, lane) : x; };
        llvm::Value* flag = B.CreateZExt(at(reported), i64);
        B.CreateCall(report, {flag, at(v[0]), at(v[1])});
      }
      B.CreateBr(continue_block);
      B.SetInsertPoint(continue_block);
    }
    // 3. A bad index reads position 0 (in bounds whenever the axis has elements).
    return B.CreateSelect(bad, zero, wrapped);
  });
}

llvm::Value* KernelCodegen::LibmCall(const std::string& function, llvm::Value* x) {
  auto& B = builder_;
  llvm::Type* f64 = B.getDoubleTy();
  llvm::FunctionCallee callee = module_.getOrInsertFunction(function, f64, f64);
  if (auto* declaration = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    declaration->setDoesNotThrow();
    declaration->setDoesNotAccessMemory();
  }
  auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (!vector) return B.CreateCall(callee, {x});
  llvm::Value* out = llvm::PoisonValue::get(vector);
  for (unsigned lane = 0; lane < vector->getNumElements(); ++lane) {
    llvm::Value* y = B.CreateCall(callee, {B.CreateExtractElement(x, lane)});
    out = B.CreateInsertElement(out, y, lane);
  }
  return out;
}

}  // namespace tandem::backends::codegen
