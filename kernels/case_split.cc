#include "kernels/case_split.h"

#include <algorithm>

#include "ir/kernel/functor.h"

namespace tandem::kernels {

namespace {

// Adds the iterator positions `condition` tests (a conjunction of `iterator == constant`) to
// `axes`; false when it is anything else.
bool CollectConditionAxes(const ir::Block& block, const ir::Expr& condition,
                          std::vector<int>& axes) {
  if (condition->kind == ir::ExprKind::kAnd) {
    return CollectConditionAxes(block, condition->operands[0], axes) &&
           CollectConditionAxes(block, condition->operands[1], axes);
  }
  if (condition->kind != ir::ExprKind::kEQ) return false;
  const ir::Expr& var = condition->operands[0];
  if (var->kind != ir::ExprKind::kVar || !condition->operands[1]->is_const_int()) return false;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    if (block->iter_vars[k].var.same_as(var)) {
      if (block->iter_vars[k].kind != ir::IterKind::kSpatial) return false;
      axes.push_back(static_cast<int>(k));
      return true;
    }
  }
  return false;
}

}  // namespace

ir::Expr MakeCaseSplit(const std::vector<ir::Expr>& selectors, const std::vector<int64_t>& extents,
                       const std::vector<ir::Expr>& arms) {
  ir::Expr value = arms.back();
  for (int64_t k = static_cast<int64_t>(arms.size()) - 2; k >= 0; --k) {
    std::vector<ir::Expr> tests(selectors.size());
    int64_t rest = k;
    for (size_t d = selectors.size(); d-- > 0;) {
      tests[d] = selectors[d] == ir::Expr(rest % extents[d]);
      rest /= extents[d];
    }
    ir::Expr condition = tests.front();
    for (size_t d = 1; d < tests.size(); ++d) condition = condition && tests[d];
    value = ir::Select(condition, arms[static_cast<size_t>(k)], value);
  }
  return value;
}

std::vector<int> CaseSplitAxes(const ir::Block& block) {
  const auto* store = ir::As<ir::StoreNode>(block->body);
  if (!store || block->init) return {};
  std::vector<int> axes;
  std::vector<ir::Expr> arms;
  ir::Expr value = store->value;
  while (value->kind == ir::ExprKind::kSelect) {
    if (!CollectConditionAxes(block, value->operands[0], axes)) return {};
    arms.push_back(value->operands[1]);
    value = value->operands[2];
  }
  arms.push_back(value);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  for (const ir::Expr& arm : arms) {
    for (int axis : axes) {
      if (ir::UsesVar(arm, block->iter_vars[static_cast<size_t>(axis)].var)) return {};
    }
  }
  return axes;
}

}  // namespace tandem::kernels
