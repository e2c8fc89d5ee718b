// Expressions of the kernel IR.
//
// Kernel IR is a loop/block IR in the style of TensorIR: kernel functions over buffers, loops,
// blocks with iterators and read/write regions. This header holds its expressions: immutable
// trees shared through Expr handles. Index arithmetic is int64 (`i64`), values are any DataType.
// Variables are compared by identity (two Vars with the same name hint are different
// variables); every other node by structure (ir/kernel/kernel_structural.h).
//
// Division semantics: kFloorDiv/kFloorMod round toward negative infinity (what split/fuse index
// arithmetic needs); kDiv is true division for floats.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/type.h"

namespace tandem::ir {

// A multi-dimensional array that kernels read and write. Shapes are static. `scope` is
// "global" for function parameters and intermediate tensors, "local" for small per-thread
// scratch buffers created by cache_read/cache_write/rfactor, "shared" for a GPU thread block's
// staging buffers (cache_read/cache_write into on-chip memory that every thread of the block
// sees). Buffers are compared by identity.
struct BufferNode {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Shape shape;
  std::string scope = "global";
};
using Buffer = std::shared_ptr<const BufferNode>;
Buffer MakeBuffer(std::string name, DataType dtype, Shape shape, std::string scope = "global");

enum class ExprKind {
  kIntImm, kFloatImm, kVar,
  kAdd, kSub, kMul, kDiv, kFloorDiv, kFloorMod, kMin, kMax,
  kEQ, kNE, kLT, kLE, kGT, kGE, kAnd, kOr, kNot,
  kSelect,  // operands: condition, true value, false value
  kCast,    // operands: value; dtype is the target type
  kLoad,    // buffer[operands...]
  kCall,    // pure intrinsic `name`(operands...): exp, log, sqrt, erf, tanh, sigmoid, pow, abs,
            // floor, ceil, round, checked_index (a gather's bounds check: kernel_interpreter.h)
};

std::string ToString(ExprKind kind);
bool IsBinary(ExprKind kind);
bool IsComparison(ExprKind kind);

class ExprNode;

// A handle to an immutable expression (nullable).
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  // Integer constants convert implicitly so index arithmetic reads naturally: `i * 4 + j`.
  Expr(int64_t value);  // NOLINT(google-explicit-constructor)
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  const ExprNode& operator*() const { return *node_; }
  bool same_as(const Expr& other) const { return node_ == other.node_; }
  const std::shared_ptr<const ExprNode>& shared() const { return node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

// A variable is an Expr of kind kVar; the alias documents intent.
using Var = Expr;

class ExprNode {
 public:
  ExprKind kind = ExprKind::kIntImm;
  DataType dtype = DataType::kInt64;
  int64_t int_value = 0;        // kIntImm
  double float_value = 0;       // kFloatImm
  std::string name;             // kVar: name hint; kCall: intrinsic name
  std::vector<Expr> operands;
  Buffer buffer;                // kLoad

  bool is_const_int() const { return kind == ExprKind::kIntImm; }
  bool is_const_int(int64_t v) const { return kind == ExprKind::kIntImm && int_value == v; }
};

Expr IntImm(int64_t value, DataType dtype = DataType::kInt64);
Expr FloatImm(double value, DataType dtype = DataType::kFloat32);
// A constant of `dtype` with the value `value` (IntImm for integer types, FloatImm otherwise).
Expr MakeConst(DataType dtype, double value);
Var MakeVar(std::string name, DataType dtype = DataType::kInt64);

// Builders. They check operand dtypes (Error on mismatch) but do not simplify; use
// Simplify (ir/kernel/simplify.h) for that.
Expr Binary(ExprKind kind, Expr a, Expr b);
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // true division (floats)
Expr FloorDiv(Expr a, Expr b);
Expr FloorMod(Expr a, Expr b);
Expr Min(Expr a, Expr b);
Expr Max(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);
Expr Select(Expr condition, Expr true_value, Expr false_value);
Expr Cast(DataType dtype, Expr value);
Expr Load(Buffer buffer, std::vector<Expr> indices);
Expr Call(std::string intrinsic, std::vector<Expr> args, DataType dtype);

// The constant value when `e` is an IntImm.
bool AsConstInt(const Expr& e, int64_t* value);

}  // namespace tandem::ir
