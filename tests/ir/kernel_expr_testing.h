// Helpers for kernel-IR expression tests: a debugging printer, structural equality and an
// integer evaluator (the real kernel printer and structural equality live elsewhere).
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/kernel/bound.h"
#include "ir/kernel/expr.h"

namespace tandem::ir::kernel_testing {

inline int Precedence(ExprKind kind) {
  switch (kind) {
    case ExprKind::kOr:
      return 1;
    case ExprKind::kAnd:
      return 2;
    case ExprKind::kAdd:
    case ExprKind::kSub:
      return 4;
    case ExprKind::kMul:
    case ExprKind::kDiv:
      return 5;
    default:
      return IsComparison(kind) ? 3 : 6;
  }
}

// Prints with the fewest parentheses that keep the tree unambiguous (operators associate to
// the left), so two printed strings are equal only for equal trees (given distinct var names).
inline std::string Str(const Expr& e) {
  const ExprNode& n = *e;
  auto child = [&](size_t i, bool right) {
    std::string s = Str(n.operands[i]);
    int mine = Precedence(n.kind), theirs = Precedence(n.operands[i]->kind);
    bool parens = right || IsComparison(n.kind) ? theirs <= mine : theirs < mine;
    return parens && theirs < 6 ? "(" + s + ")" : s;
  };
  auto call = [&](const std::string& name) {
    std::string s = name + "(";
    for (size_t i = 0; i < n.operands.size(); ++i) s += (i ? ", " : "") + Str(n.operands[i]);
    return s + ")";
  };
  switch (n.kind) {
    case ExprKind::kIntImm:
      if (n.dtype == DataType::kBool) return n.int_value ? "true" : "false";
      return std::to_string(n.int_value) + (n.dtype == DataType::kInt64 ? "" : ToString(n.dtype));
    case ExprKind::kFloatImm:
      return fmt::format("{}{}", n.float_value,
                         n.dtype == DataType::kFloat32   ? "f"
                         : n.dtype == DataType::kFloat16 ? "h"
                                                         : "d");
    case ExprKind::kVar:
      return n.name;
    case ExprKind::kMul:
    case ExprKind::kDiv:
      return child(0, false) + ToString(n.kind) + child(1, true);
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kSelect:
      return call(ToString(n.kind));
    case ExprKind::kNot:
      return "!" + child(0, true);
    case ExprKind::kCast:
      return call(ToString(n.dtype));
    case ExprKind::kLoad: {
      std::string s = call(n.buffer->name);
      return s.replace(n.buffer->name.size(), 1, "[").replace(s.size() - 1, 1, "]");
    }
    case ExprKind::kCall:
      return call(n.name);
    default:
      return child(0, false) + " " + ToString(n.kind) + " " + child(1, true);
  }
}

inline bool SameExpr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (a->kind != b->kind || a->dtype != b->dtype || a->operands.size() != b->operands.size()) {
    return false;
  }
  if (a->kind == ExprKind::kVar || a->buffer != b->buffer || a->name != b->name) return false;
  if (a->int_value != b->int_value || a->float_value != b->float_value) return false;
  for (size_t i = 0; i < a->operands.size(); ++i) {
    if (!SameExpr(a->operands[i], b->operands[i])) return false;
  }
  return true;
}

using Values = std::unordered_map<const ExprNode*, int64_t>;

inline int64_t FloorDivRef(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
}

// Evaluates an integer/bool expression (bools as 0/1); nullopt on division by zero. i64 is
// evaluated without overflow checks; narrower integer types wrap like generated code.
inline std::optional<int64_t> EvalUnwrapped(const Expr& e, const Values& values);

inline std::optional<int64_t> Eval(const Expr& e, const Values& values) {
  std::optional<int64_t> v = EvalUnwrapped(e, values);
  if (!v) return v;
  switch (e->dtype) {
    case DataType::kInt32:
      return static_cast<int32_t>(*v);
    case DataType::kInt8:
      return static_cast<int8_t>(*v);
    case DataType::kUInt8:
      return static_cast<uint8_t>(*v);
    default:
      return v;
  }
}

inline std::optional<int64_t> EvalUnwrapped(const Expr& e, const Values& values) {
  const ExprNode& n = *e;
  if (n.kind == ExprKind::kIntImm) return n.int_value;
  if (n.kind == ExprKind::kVar) return values.at(e.get());
  std::vector<int64_t> v;
  for (const Expr& o : n.operands) {
    std::optional<int64_t> x = Eval(o, values);
    if (!x) return std::nullopt;
    v.push_back(*x);
  }
  switch (n.kind) {
    case ExprKind::kAdd:
      return v[0] + v[1];
    case ExprKind::kSub:
      return v[0] - v[1];
    case ExprKind::kMul:
      return v[0] * v[1];
    case ExprKind::kFloorDiv:
      if (v[1] == 0) return std::nullopt;
      return FloorDivRef(v[0], v[1]);
    case ExprKind::kFloorMod:
      if (v[1] == 0) return std::nullopt;
      return v[0] - FloorDivRef(v[0], v[1]) * v[1];
    case ExprKind::kMin:
      return std::min(v[0], v[1]);
    case ExprKind::kMax:
      return std::max(v[0], v[1]);
    case ExprKind::kEQ:
      return v[0] == v[1];
    case ExprKind::kNE:
      return v[0] != v[1];
    case ExprKind::kLT:
      return v[0] < v[1];
    case ExprKind::kLE:
      return v[0] <= v[1];
    case ExprKind::kGT:
      return v[0] > v[1];
    case ExprKind::kGE:
      return v[0] >= v[1];
    case ExprKind::kAnd:
      return v[0] != 0 && v[1] != 0;
    case ExprKind::kOr:
      return v[0] != 0 || v[1] != 0;
    case ExprKind::kNot:
      return v[0] == 0;
    case ExprKind::kSelect:
      return v[0] != 0 ? v[1] : v[2];
    case ExprKind::kCast:
      return n.dtype == DataType::kBool ? v[0] != 0 : v[0];
    default:
      ADD_FAILURE() << "cannot evaluate " << Str(e);
      return std::nullopt;
  }
}

inline VarRanges Ranges(std::initializer_list<std::pair<Var, IntInterval>> list) {
  VarRanges r;
  for (const auto& [var, range] : list) r[var.get()] = range;
  return r;
}

}  // namespace tandem::ir::kernel_testing
