#include "ir/kernel/expr.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace tandem::ir {

Buffer MakeBuffer(std::string name, DataType dtype, Shape shape, std::string scope) {
  for (int64_t d : shape) {
    if (d < 0) throw Error(fmt::format("buffer '{}' has a negative extent in {}", name, ShapeToString(shape)));
  }
  auto b = std::make_shared<BufferNode>();
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = std::move(scope);
  return b;
}

std::string ToString(ExprKind kind) {
  switch (kind) {
    case ExprKind::kIntImm: return "int";
    case ExprKind::kFloatImm: return "float";
    case ExprKind::kVar: return "var";
    case ExprKind::kAdd: return "+";
    case ExprKind::kSub: return "-";
    case ExprKind::kMul: return "*";
    case ExprKind::kDiv: return "/";
    case ExprKind::kFloorDiv: return "floordiv";
    case ExprKind::kFloorMod: return "floormod";
    case ExprKind::kMin: return "min";
    case ExprKind::kMax: return "max";
    case ExprKind::kEQ: return "==";
    case ExprKind::kNE: return "!=";
    case ExprKind::kLT: return "<";
    case ExprKind::kLE: return "<=";
    case ExprKind::kGT: return ">";
    case ExprKind::kGE: return ">=";
    case ExprKind::kAnd: return "&&";
    case ExprKind::kOr: return "||";
    case ExprKind::kNot: return "!";
    case ExprKind::kSelect: return "select";
    case ExprKind::kCast: return "cast";
    case ExprKind::kLoad: return "load";
    case ExprKind::kCall: return "call";
  }
  return "?";
}

bool IsBinary(ExprKind k) {
  return k == ExprKind::kAdd || k == ExprKind::kSub || k == ExprKind::kMul || k == ExprKind::kDiv ||
         k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod || k == ExprKind::kMin ||
         k == ExprKind::kMax || IsComparison(k) || k == ExprKind::kAnd || k == ExprKind::kOr;
}

bool IsComparison(ExprKind k) {
  return k == ExprKind::kEQ || k == ExprKind::kNE || k == ExprKind::kLT || k == ExprKind::kLE ||
         k == ExprKind::kGT || k == ExprKind::kGE;
}

namespace {
Expr Make(ExprNode node) { return Expr(std::make_shared<const ExprNode>(std::move(node))); }
}  // namespace

Expr::Expr(int64_t value) : node_(IntImm(value).shared()) {}

Expr IntImm(int64_t value, DataType dtype) {
  ExprNode n;
  n.kind = ExprKind::kIntImm;
  n.dtype = dtype;
  n.int_value = value;
  return Make(std::move(n));
}

Expr FloatImm(double value, DataType dtype) {
  ExprNode n;
  n.kind = ExprKind::kFloatImm;
  n.dtype = dtype;
  n.float_value = value;
  return Make(std::move(n));
}

Expr MakeConst(DataType dtype, double value) {
  if (IsFloat(dtype)) return FloatImm(value, dtype);
  return IntImm(static_cast<int64_t>(value), dtype);
}

Var MakeVar(std::string name, DataType dtype) {
  ExprNode n;
  n.kind = ExprKind::kVar;
  n.dtype = dtype;
  n.name = std::move(name);
  return Make(std::move(n));
}

Expr Binary(ExprKind kind, Expr a, Expr b) {
  if (!a.defined() || !b.defined()) throw Error(fmt::format("'{}' of an undefined expression", ToString(kind)));
  if (a->dtype != b->dtype) {
    throw Error(fmt::format("operands of '{}' have different types {} and {}", ToString(kind),
                            ToString(a->dtype), ToString(b->dtype)));
  }
  ExprNode n;
  n.kind = kind;
  n.dtype = IsComparison(kind) || kind == ExprKind::kAnd || kind == ExprKind::kOr ? DataType::kBool
                                                                                 : a->dtype;
  n.operands = {std::move(a), std::move(b)};
  return Make(std::move(n));
}

Expr operator+(Expr a, Expr b) { return Binary(ExprKind::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Binary(ExprKind::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Binary(ExprKind::kMul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Binary(ExprKind::kDiv, std::move(a), std::move(b)); }
Expr FloorDiv(Expr a, Expr b) { return Binary(ExprKind::kFloorDiv, std::move(a), std::move(b)); }
Expr FloorMod(Expr a, Expr b) { return Binary(ExprKind::kFloorMod, std::move(a), std::move(b)); }
Expr Min(Expr a, Expr b) { return Binary(ExprKind::kMin, std::move(a), std::move(b)); }
Expr Max(Expr a, Expr b) { return Binary(ExprKind::kMax, std::move(a), std::move(b)); }
Expr operator==(Expr a, Expr b) { return Binary(ExprKind::kEQ, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return Binary(ExprKind::kNE, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return Binary(ExprKind::kLT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return Binary(ExprKind::kLE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return Binary(ExprKind::kGT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return Binary(ExprKind::kGE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return Binary(ExprKind::kAnd, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return Binary(ExprKind::kOr, std::move(a), std::move(b)); }

Expr operator!(Expr a) {
  ExprNode n;
  n.kind = ExprKind::kNot;
  n.dtype = DataType::kBool;
  n.operands = {std::move(a)};
  return Make(std::move(n));
}

Expr Select(Expr condition, Expr true_value, Expr false_value) {
  if (true_value->dtype != false_value->dtype) {
    throw Error(fmt::format("select branches have different types {} and {}",
                            ToString(true_value->dtype), ToString(false_value->dtype)));
  }
  ExprNode n;
  n.kind = ExprKind::kSelect;
  n.dtype = true_value->dtype;
  n.operands = {std::move(condition), std::move(true_value), std::move(false_value)};
  return Make(std::move(n));
}

Expr Cast(DataType dtype, Expr value) {
  if (value->dtype == dtype) return value;
  ExprNode n;
  n.kind = ExprKind::kCast;
  n.dtype = dtype;
  n.operands = {std::move(value)};
  return Make(std::move(n));
}

Expr Load(Buffer buffer, std::vector<Expr> indices) {
  if (indices.size() != buffer->shape.size()) {
    throw Error(fmt::format("load of buffer '{}' (rank {}) with {} indices", buffer->name,
                            buffer->shape.size(), indices.size()));
  }
  ExprNode n;
  n.kind = ExprKind::kLoad;
  n.dtype = buffer->dtype;
  n.buffer = std::move(buffer);
  n.operands = std::move(indices);
  return Make(std::move(n));
}

Expr Call(std::string intrinsic, std::vector<Expr> args, DataType dtype) {
  ExprNode n;
  n.kind = ExprKind::kCall;
  n.dtype = dtype;
  n.name = std::move(intrinsic);
  n.operands = std::move(args);
  return Make(std::move(n));
}

bool AsConstInt(const Expr& e, int64_t* value) {
  if (!e.defined() || e->kind != ExprKind::kIntImm) return false;
  *value = e->int_value;
  return true;
}

}  // namespace tandem::ir
