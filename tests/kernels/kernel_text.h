// A readable text of a kernel function, for test failure messages (the canonical form of
// ir/kernel/kernel_structural.h is one token per line and hard to read).
#pragma once

#include <fmt/format.h>

#include <string>

#include "ir/kernel/stmt.h"

namespace tandem::kernels::testing {

inline std::string ExprText(const ir::Expr& e) {
  using ir::ExprKind;
  if (!e.defined()) return "<null>";
  auto operand = [&](size_t i) { return ExprText(e->operands[i]); };
  switch (e->kind) {
    case ExprKind::kIntImm:
      return std::to_string(e->int_value);
    case ExprKind::kFloatImm:
      return fmt::format("{}f", e->float_value);
    case ExprKind::kVar:
      return e->name;
    case ExprKind::kAdd:
      return fmt::format("({} + {})", operand(0), operand(1));
    case ExprKind::kSub:
      return fmt::format("({} - {})", operand(0), operand(1));
    case ExprKind::kMul:
      return fmt::format("{}*{}", operand(0), operand(1));
    case ExprKind::kDiv:
      return fmt::format("({} / {})", operand(0), operand(1));
    case ExprKind::kFloorDiv:
      return fmt::format("({} // {})", operand(0), operand(1));
    case ExprKind::kFloorMod:
      return fmt::format("({} % {})", operand(0), operand(1));
    case ExprKind::kMin:
      return fmt::format("min({}, {})", operand(0), operand(1));
    case ExprKind::kMax:
      return fmt::format("max({}, {})", operand(0), operand(1));
    case ExprKind::kEQ:
      return fmt::format("({} == {})", operand(0), operand(1));
    case ExprKind::kNE:
      return fmt::format("({} != {})", operand(0), operand(1));
    case ExprKind::kLT:
      return fmt::format("({} < {})", operand(0), operand(1));
    case ExprKind::kLE:
      return fmt::format("({} <= {})", operand(0), operand(1));
    case ExprKind::kGT:
      return fmt::format("({} > {})", operand(0), operand(1));
    case ExprKind::kGE:
      return fmt::format("({} >= {})", operand(0), operand(1));
    case ExprKind::kAnd:
      return fmt::format("({} && {})", operand(0), operand(1));
    case ExprKind::kOr:
      return fmt::format("({} || {})", operand(0), operand(1));
    case ExprKind::kNot:
      return fmt::format("!{}", operand(0));
    case ExprKind::kSelect:
      return fmt::format("select({}, {}, {})", operand(0), operand(1), operand(2));
    case ExprKind::kCast:
      return fmt::format("cast<{}>({})", ir::ToString(e->dtype), operand(0));
    case ExprKind::kLoad:
    case ExprKind::kCall: {
      std::string args;
      for (size_t i = 0; i < e->operands.size(); ++i) args += (i ? ", " : "") + operand(i);
      return e->kind == ExprKind::kLoad ? fmt::format("{}[{}]", e->buffer->name, args)
                                        : fmt::format("{}({})", e->name, args);
    }
  }
  return "?";
}

inline std::string RegionText(const std::vector<ir::BufferRegion>& regions) {
  std::string out;
  for (const ir::BufferRegion& r : regions) {
    out += (out.empty() ? "" : ", ") + r.buffer->name + "[";
    for (size_t d = 0; d < r.region.size(); ++d) {
      out += fmt::format("{}{}:+{}", d ? ", " : "", ExprText(r.region[d].min),
                         ExprText(r.region[d].extent));
    }
    out += "]";
  }
  return out;
}

inline void StmtText(const ir::Stmt& s, int indent, std::string& out) {
  if (!s) return;
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  if (const auto* loop = ir::As<ir::ForNode>(s)) {
    std::string kind =
        loop->for_kind == ir::ForKind::kSerial ? "" : ir::ToString(loop->for_kind) + " ";
    out += fmt::format("{}{}for {} in {}:\n", pad, kind, loop->loop_var->name, loop->extent);
    StmtText(loop->body, indent + 1, out);
  } else if (const auto* seq = ir::As<ir::SeqNode>(s)) {
    for (const ir::Stmt& c : seq->stmts) StmtText(c, indent, out);
  } else if (const auto* store = ir::As<ir::StoreNode>(s)) {
    std::string index;
    for (size_t i = 0; i < store->indices.size(); ++i) {
      index += (i ? ", " : "") + ExprText(store->indices[i]);
    }
    out += fmt::format("{}{}[{}] = {}\n", pad, store->buffer->name, index, ExprText(store->value));
  } else if (const auto* branch = ir::As<ir::IfThenElseNode>(s)) {
    out += fmt::format("{}if {}:\n", pad, ExprText(branch->condition));
    StmtText(branch->then_case, indent + 1, out);
    if (branch->else_case) {
      out += pad + "else:\n";
      StmtText(branch->else_case, indent + 1, out);
    }
  } else if (const auto* realize = ir::As<ir::BlockRealizeNode>(s)) {
    const ir::Block& b = realize->block;
    std::string iters;
    for (size_t k = 0; k < b->iter_vars.size(); ++k) {
      iters += fmt::format("{}{}{}<{}>={}", k ? ", " : "", b->iter_vars[k].var->name,
                           b->iter_vars[k].kind == ir::IterKind::kReduction ? "(r)" : "",
                           b->iter_vars[k].extent, ExprText(realize->iter_values[k]));
    }
    out +=
        fmt::format("{}block {}({}) where {}\n", pad, b->name, iters, ExprText(realize->predicate));
    out +=
        fmt::format("{}  reads {} writes {}\n", pad, RegionText(b->reads), RegionText(b->writes));
    for (const ir::Buffer& a : b->alloc_buffers) {
      out +=
          fmt::format("{}  alloc {}{} {}\n", pad, a->name, ir::ShapeToString(a->shape), a->scope);
    }
    if (b->init) {
      out += pad + "  init:\n";
      StmtText(b->init, indent + 2, out);
    }
    StmtText(b->body, indent + 1, out);
  }
}

inline std::string KernelText(const ir::KernelFunction& fn) {
  std::string out = "kernel " + fn.name + "\n";
  StmtText(fn.body, 1, out);
  return out;
}

}  // namespace tandem::kernels::testing
