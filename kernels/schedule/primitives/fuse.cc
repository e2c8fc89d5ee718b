// fuse: perfectly nested loops into one loop over the product of their extents.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Expr;
using ir::Stmt;

ir::KernelFunction Fuse(const ir::KernelFunction& fn, const std::vector<ir::Var>& loops,
                        ir::Var* fused_out) {
  if (loops.size() < 2) throw ScheduleError("fuse needs at least two loops");
  std::vector<const ir::ForNode*> nodes;
  StmtPath outer_path = GetLoopPath(fn, loops[0]);
  nodes.push_back(ir::As<ir::ForNode>(outer_path.target));
  for (size_t i = 1; i < loops.size(); ++i) {
    const ir::ForNode* parent = nodes.back();
    const auto* child = ir::As<ir::ForNode>(parent->body);
    if (child == nullptr || !child->loop_var.same_as(loops[i])) {
      throw ScheduleError(
          fmt::format("fuse: loop '{}' is not the only statement in the body of loop '{}' "
                      "(loops to fuse must be perfectly nested, outermost first)",
                      loops[i]->name, parent->loop_var->name));
    }
    nodes.push_back(child);
  }
  int64_t total = 1;
  std::string name;
  for (const ir::ForNode* n : nodes) {
    if (n->extent != 0 && total > (int64_t{1} << 40) / n->extent) {
      throw ScheduleError("fuse: the fused extent is too large");
    }
    total *= n->extent;
    name += (name.empty() ? "" : "_") + n->loop_var->name;
  }
  ir::Var fused = ir::MakeVar(name + "_fused");
  ir::VarMap map;
  int64_t inner = 1;
  for (size_t i = nodes.size(); i-- > 0;) {
    Expr value = inner == 1 ? Expr(fused) : ir::FloorDiv(fused, ir::IntImm(inner));
    if (i > 0) value = ir::FloorMod(value, ir::IntImm(nodes[i]->extent));
    map[nodes[i]->loop_var.get()] = value;
    inner *= nodes[i]->extent;
  }
  Stmt body = ir::Substitute(nodes.back()->body, map);
  ir::VarRanges ranges;
  for (const ir::ForNode* outer : EnclosingLoops(outer_path)) {
    ranges[outer->loop_var.get()] = ir::IntInterval{0, outer->extent - 1};
  }
  Stmt loop = ir::Simplify(ir::MakeFor(fused, total, ir::ForKind::kSerial, body), ranges);
  if (fused_out) *fused_out = fused;
  return WithBody(fn, ReplaceStmt(fn.body, outer_path.target.get(), loop));
}

}  // namespace tandem::kernels::primitive
