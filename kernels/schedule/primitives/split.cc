// split: one loop into nested loops whose extents multiply to (at least) the original extent.
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

namespace {

// Adds `condition` to the predicate of every block realized under `body` that is not nested
// in another block; stores outside any block are guarded by an IfThenElse.
class PredicateAdder : public ir::StmtMutator {
 public:
  explicit PredicateAdder(Expr condition) : condition_(std::move(condition)) {}
  Expr VisitExpr(const Expr& e) override { return e; }

 protected:
  Stmt VisitBlockRealize(const ir::BlockRealizeNode* op, const Stmt& s) override {
    auto n = std::make_shared<ir::BlockRealizeNode>(*op);
    int64_t always = 0;
    n->predicate = ir::AsConstInt(op->predicate, &always) && always != 0
                       ? condition_
                       : (op->predicate && condition_);
    return n;
  }
  Stmt VisitStore(const ir::StoreNode* op, const Stmt& s) override {
    return ir::MakeIfThenElse(condition_, s);
  }

 private:
  Expr condition_;
};

}  // namespace

ir::KernelFunction Split(const ir::KernelFunction& fn, const ir::Var& loop_var,
                         const std::vector<int64_t>& factors, std::vector<ir::Var>* new_loops) {
  StmtPath path = GetLoopPath(fn, loop_var);
  const auto* loop = ir::As<ir::ForNode>(path.target);
  auto fail = [&](const std::string& why) -> ScheduleError {
    return ScheduleError(fmt::format("split of loop '{}' (extent {}) by [{}]: {}", loop_var->name,
                                     loop->extent, fmt::join(factors, ", "), why));
  };
  if (factors.size() < 2) throw fail("needs at least two factors");
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < factors.size(); ++i) {
    if (factors[i] == -1) {
      if (inferred >= 0) throw fail("at most one factor may be -1");
      inferred = static_cast<int>(i);
    } else if (factors[i] <= 0) {
      throw fail("factors must be positive (or -1 for one inferred factor)");
    } else {
      if (known > (int64_t{1} << 40) / factors[i]) throw fail("the factors are too large");
      known *= factors[i];
    }
  }
  std::vector<int64_t> extents = factors;
  if (inferred >= 0) extents[static_cast<size_t>(inferred)] = (loop->extent + known - 1) / known;
  int64_t product = 1;
  for (int64_t e : extents) product *= e;
  if (product < loop->extent) {
    throw fail(fmt::format("the factors multiply to {}, less than the extent", product));
  }

  std::vector<ir::Var> vars;
  for (size_t i = 0; i < extents.size(); ++i) {
    vars.push_back(ir::MakeVar(fmt::format("{}_{}", loop_var->name, i)));
  }
  Expr fused = vars[0];
  for (size_t i = 1; i < vars.size(); ++i) fused = fused * ir::IntImm(extents[i]) + vars[i];
  ir::VarMap map{{loop_var.get(), fused}};
  Stmt body = ir::Substitute(loop->body, map);
  if (product > loop->extent) {
    PredicateAdder adder(fused < ir::IntImm(loop->extent));
    body = adder.VisitStmt(body);
  }
  for (size_t i = vars.size(); i-- > 0;) {
    body = ir::MakeFor(vars[i], extents[i], ir::ForKind::kSerial, body);
  }
  ir::VarRanges ranges;
  for (const ir::ForNode* outer : EnclosingLoops(path)) {
    ranges[outer->loop_var.get()] = ir::IntInterval{0, outer->extent - 1};
  }
  body = ir::Simplify(body, ranges);
  if (new_loops) *new_loops = vars;
  return WithBody(fn, ReplaceStmt(fn.body, path.target.get(), body));
}

}  // namespace tandem::kernels::primitive
