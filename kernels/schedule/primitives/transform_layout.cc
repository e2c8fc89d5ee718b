// transform_layout: change the layout of a buffer allocated inside the kernel (e.g. pack a
// weight copy or an intermediate so that the inner loop reads contiguous memory).
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/layout.h"
#include "kernels/schedule/access.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels::primitive {

using ir::Error;
using ir::Expr;
using ir::Stmt;

namespace {

class BufferRelayout : public ir::StmtMutator {
 public:
  BufferRelayout(ir::Buffer from, ir::Buffer to,
                 std::function<std::vector<Expr>(const std::vector<Expr>&)> map)
      : from_(std::move(from)), to_(std::move(to)), map_(std::move(map)) {}
  Expr VisitExpr(const Expr& e) override {
    Expr v = VisitChildren(e);
    if (v->kind == ir::ExprKind::kLoad && v->buffer == from_)
      return ir::Load(to_, map_(v->operands));
    return v;
  }

 protected:
  Stmt VisitStore(const ir::StoreNode* op, const Stmt& s) override {
    Stmt v = StmtMutator::VisitStore(op, s);
    const auto* store = ir::As<ir::StoreNode>(v);
    if (store->buffer == from_) return ir::MakeStore(to_, map_(store->indices), store->value);
    return v;
  }
  ir::Block VisitBlock(const ir::Block& block) override {
    ir::Block v = StmtMutator::VisitBlock(block);
    bool allocates = false;
    for (const ir::Buffer& b : v->alloc_buffers) allocates = allocates || b == from_;
    if (v == block && !allocates) return block;
    auto n = std::make_shared<ir::BlockNode>(*v);
    for (ir::Buffer& b : n->alloc_buffers) {
      if (b == from_) b = to_;
    }
    return WithRecomputedRegions(n);
  }

 private:
  ir::Buffer from_, to_;
  std::function<std::vector<Expr>(const std::vector<Expr>&)> map_;
};

}  // namespace

ir::KernelFunction TransformLayout(const ir::KernelFunction& fn, const std::string& block_name,
                                   int buffer_index, bool is_write, const std::string& src_layout,
                                   const std::string& dst_layout) {
  StmtPath path = GetBlockPath(fn, block_name);
  const ir::Block& block = ir::As<ir::BlockRealizeNode>(path.target)->block;
  const auto& regions = is_write ? block->writes : block->reads;
  auto fail = [&](const std::string& why) {
    return ScheduleError(fmt::format(
        "transform_layout of {} buffer {} of block '{}' from '{}' to '{}': {}",
        is_write ? "written" : "read", buffer_index, block_name, src_layout, dst_layout, why));
  };
  if (buffer_index < 0 || buffer_index >= static_cast<int>(regions.size())) {
    throw fail(
        fmt::format("the block {} {} buffers", is_write ? "writes" : "reads", regions.size()));
  }
  const ir::Buffer& buffer = regions[static_cast<size_t>(buffer_index)].buffer;
  if (IsParam(fn, buffer)) {
    throw fail(
        fmt::format("'{}' is a kernel parameter; only buffers allocated in the kernel can "
                    "change layout (use cache_read/cache_write first)",
                    buffer->name));
  }
  ir::Layout from(src_layout), to(dst_layout);
  for (const ir::Layout::Axis& a : from.axes()) {
    if (!a.is_primal()) throw fail("the source layout must name plain axes only");
  }
  if (from.rank() != static_cast<int64_t>(buffer->shape.size())) {
    throw fail(fmt::format("the buffer has rank {}", buffer->shape.size()));
  }
  ir::Shape shape;
  try {
    shape = ir::ConvertShape(buffer->shape, from, to);
  } catch (const Error& e) {
    throw fail(e.message());
  }
  ir::Buffer relaid = ir::MakeBuffer(buffer->name, buffer->dtype, shape, buffer->scope);
  auto map = [from, to](const std::vector<Expr>& old_indices) {
    std::vector<Expr> out;
    for (const ir::Layout::Axis& a : to.axes()) {
      char primal = static_cast<char>(std::toupper(static_cast<unsigned char>(a.name)));
      const Expr& p = old_indices[static_cast<size_t>(from.IndexOf(primal))];
      int64_t factor = to.SplitFactor(primal);
      if (a.is_primal()) {
        out.push_back(factor > 1 ? ir::FloorDiv(p, ir::IntImm(factor)) : p);
      } else {
        out.push_back(ir::FloorMod(p, ir::IntImm(a.factor)));
      }
    }
    return out;
  };
  BufferRelayout relayout(buffer, relaid, map);
  return WithBody(fn, ir::Simplify(relayout.VisitStmt(fn.body)));
}

}  // namespace tandem::kernels::primitive
