#include "kernels/schedule/tree_util.h"

#include <fmt/format.h>

#include <functional>
#include <set>

#include "ir/error.h"
#include "ir/kernel/functor.h"

namespace tandem::kernels {

using ir::Stmt;
using ir::StmtKind;

namespace {

// Depth-first search for the first statement satisfying `match`, recording the ancestors.
bool Search(const Stmt& s, const std::function<bool(const Stmt&)>& match, std::vector<Stmt>& stack,
            StmtPath& out) {
  if (!s) return false;
  if (match(s)) {
    out.ancestors = stack;
    out.target = s;
    return true;
  }
  stack.push_back(s);
  bool found = false;
  switch (s->kind) {
    case StmtKind::kFor:
      found = Search(ir::As<ir::ForNode>(s)->body, match, stack, out);
      break;
    case StmtKind::kSeq:
      for (const Stmt& c : ir::As<ir::SeqNode>(s)->stmts) {
        if ((found = Search(c, match, stack, out))) break;
      }
      break;
    case StmtKind::kIfThenElse: {
      const auto* branch = ir::As<ir::IfThenElseNode>(s);
      found = Search(branch->then_case, match, stack, out) ||
              Search(branch->else_case, match, stack, out);
      break;
    }
    case StmtKind::kBlockRealize: {
      const auto& block = ir::As<ir::BlockRealizeNode>(s)->block;
      found = Search(block->init, match, stack, out) || Search(block->body, match, stack, out);
      break;
    }
    case StmtKind::kStore:
      break;
  }
  stack.pop_back();
  return found;
}

}  // namespace

std::optional<StmtPath> FindLoop(const ir::KernelFunction& fn, const ir::Var& loop_var) {
  std::vector<Stmt> stack;
  StmtPath out;
  auto match = [&](const Stmt& s) {
    const auto* loop = ir::As<ir::ForNode>(s);
    return loop != nullptr && loop->loop_var.same_as(loop_var);
  };
  if (Search(fn.body, match, stack, out)) return out;
  return std::nullopt;
}

std::optional<StmtPath> FindBlock(const ir::KernelFunction& fn, const std::string& name) {
  std::vector<Stmt> stack;
  StmtPath out;
  auto match = [&](const Stmt& s) {
    const auto* realize = ir::As<ir::BlockRealizeNode>(s);
    return realize != nullptr && realize->block->name == name;
  };
  if (Search(fn.body, match, stack, out)) return out;
  return std::nullopt;
}

StmtPath GetLoopPath(const ir::KernelFunction& fn, const ir::Var& loop_var) {
  auto path = FindLoop(fn, loop_var);
  if (!path) {
    throw ir::Error(
        fmt::format("kernel '{}' has no loop '{}' (it may have been transformed by an "
                    "earlier primitive)",
                    fn.name, loop_var.defined() ? loop_var->name : "?"));
  }
  return *path;
}

StmtPath GetBlockPath(const ir::KernelFunction& fn, const std::string& name) {
  auto path = FindBlock(fn, name);
  if (!path) throw ir::Error(fmt::format("kernel '{}' has no block '{}'", fn.name, name));
  return *path;
}

std::vector<const ir::ForNode*> EnclosingLoops(const StmtPath& path) {
  std::vector<const ir::ForNode*> loops;
  for (auto it = path.ancestors.rbegin(); it != path.ancestors.rend(); ++it) {
    if ((*it)->kind == StmtKind::kBlockRealize) break;
    if (const auto* loop = ir::As<ir::ForNode>(*it)) loops.insert(loops.begin(), loop);
  }
  return loops;
}

std::vector<const ir::IfThenElseNode*> EnclosingConditions(const StmtPath& path) {
  std::vector<const ir::IfThenElseNode*> conditions;
  for (auto it = path.ancestors.rbegin(); it != path.ancestors.rend(); ++it) {
    if ((*it)->kind == StmtKind::kBlockRealize) break;
    if (const auto* branch = ir::As<ir::IfThenElseNode>(*it)) {
      conditions.insert(conditions.begin(), branch);
    }
  }
  return conditions;
}

const ir::BlockRealizeNode* EnclosingBlock(const StmtPath& path) {
  for (auto it = path.ancestors.rbegin(); it != path.ancestors.rend(); ++it) {
    if (const auto* realize = ir::As<ir::BlockRealizeNode>(*it)) return realize;
  }
  return nullptr;
}

namespace {
class Replacer : public ir::StmtMutator {
 public:
  Replacer(const ir::StmtNode* old_stmt, Stmt replacement)
      : old_(old_stmt), replacement_(std::move(replacement)) {}
  Stmt VisitStmt(const Stmt& s) override {
    if (s.get() == old_) {
      found_ = true;
      return replacement_;
    }
    return StmtMutator::VisitStmt(s);
  }
  ir::Expr VisitExpr(const ir::Expr& e) override { return e; }  // statements only
  bool found() const { return found_; }

 protected:
  Stmt VisitSeq(const ir::SeqNode* op, const Stmt& s) override {
    bool changed = false;
    std::vector<Stmt> stmts;
    for (const Stmt& child : op->stmts) {
      Stmt m = VisitStmt(child);
      changed = changed || m != child;
      if (m) stmts.push_back(std::move(m));
    }
    if (!changed) return s;
    if (stmts.empty()) return nullptr;
    return ir::MakeSeq(std::move(stmts));
  }
  Stmt VisitFor(const ir::ForNode* op, const Stmt& s) override {
    Stmt body = VisitStmt(op->body);
    if (body == op->body) return s;
    if (!body) return nullptr;  // a loop whose whole body was removed disappears with it
    auto n = std::make_shared<ir::ForNode>(*op);
    n->body = std::move(body);
    return n;
  }

 private:
  const ir::StmtNode* old_;
  Stmt replacement_;
  bool found_ = false;
};
}  // namespace

Stmt ReplaceStmt(const Stmt& root, const ir::StmtNode* old_stmt, Stmt replacement) {
  Replacer replacer(old_stmt, std::move(replacement));
  Stmt out = replacer.VisitStmt(root);
  if (!replacer.found()) throw ir::Error("internal: the statement to replace is not in the tree");
  return out;
}

ir::KernelFunction WithBody(const ir::KernelFunction& fn, Stmt body) {
  ir::KernelFunction out = fn;
  out.body = std::move(body);
  return out;
}

std::vector<const ir::BlockRealizeNode*> AllBlocks(const ir::KernelFunction& fn) {
  std::vector<const ir::BlockRealizeNode*> blocks;
  ir::VisitStmtTree(fn.body, [&](const Stmt& s) {
    if (const auto* realize = ir::As<ir::BlockRealizeNode>(s)) blocks.push_back(realize);
  });
  return blocks;
}

std::string FreshBlockName(const ir::KernelFunction& fn, const std::string& base) {
  std::set<std::string> names;
  for (const auto* b : AllBlocks(fn)) names.insert(b->block->name);
  if (!names.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = fmt::format("{}_{}", base, i);
    if (!names.count(candidate)) return candidate;
  }
}

bool IsParam(const ir::KernelFunction& fn, const ir::Buffer& buffer) {
  for (const ir::Buffer& p : fn.params) {
    if (p == buffer) return true;
  }
  return false;
}

namespace {
std::vector<const ir::BlockRealizeNode*> BlocksTouching(const ir::KernelFunction& fn,
                                                        const ir::Buffer& buffer, bool reads) {
  std::vector<const ir::BlockRealizeNode*> out;
  for (const auto* b : AllBlocks(fn)) {
    const auto& regions = reads ? b->block->reads : b->block->writes;
    for (const ir::BufferRegion& r : regions) {
      if (r.buffer == buffer) {
        out.push_back(b);
        break;
      }
    }
  }
  return out;
}
}  // namespace

std::vector<const ir::BlockRealizeNode*> BlocksReading(const ir::KernelFunction& fn,
                                                       const ir::Buffer& buffer) {
  return BlocksTouching(fn, buffer, true);
}

std::vector<const ir::BlockRealizeNode*> BlocksWriting(const ir::KernelFunction& fn,
                                                       const ir::Buffer& buffer) {
  return BlocksTouching(fn, buffer, false);
}

}  // namespace tandem::kernels
