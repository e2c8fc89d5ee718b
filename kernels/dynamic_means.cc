#include "kernels/dynamic_means.h"

#include "ir/kernel/functor.h"
#include "kernels/dynamic_access.h"

namespace tandem::kernels {

namespace {

using ir::Expr;
using ir::ExprKind;

// Whether `name` is `base` or that made unique in a fused group ("mean_sum_2").
bool IsBlockNamed(const std::string& name, const std::string& base) {
  if (name.rfind(base, 0) != 0) return false;
  if (name.size() == base.size()) return true;
  if (name[base.size()] != '_' || name.size() == base.size() + 1) return false;
  for (size_t k = base.size() + 1; k < name.size(); ++k) {
    if (name[k] < '0' || name[k] > '9') return false;
  }
  return true;
}

// Whether `name` is a block name the compute definition of `mean` or `global_avg_pool2d` gives
// its sum.
bool IsMeanSumBlock(const std::string& name) {
  return IsBlockNamed(name, "mean_sum") || IsBlockNamed(name, "global_avg_pool2d_sum");
}

// Steps of DivideMeansByValidCount: each division, children first.
class MeanDivisionRewriter : public ir::ExprMutator {
 public:
  MeanDivisionRewriter(const MeanOfBuffer& means,
                       const std::function<Expr(const AxisExtent&)>& limit,
                       std::map<std::string, int>& rewritten)
      : means_(means), limit_(limit), rewritten_(rewritten) {}

  Expr VisitExpr(const Expr& e) override {
    Expr visited = VisitChildren(e);
    if (visited->kind != ExprKind::kDiv) return visited;
    const Expr& sum = visited->operands[0];
    const Expr& divisor = visited->operands[1];
    if (sum->kind != ExprKind::kLoad || divisor->kind != ExprKind::kFloatImm) return visited;
    auto found = means_.find(sum->buffer->name);
    if (found == means_.end()) return visited;
    const MeanCount& mean = *found->second;
    if (divisor->float_value != static_cast<double>(mean.count_at_bound)) return visited;
    Expr count = Expr(mean.static_count);
    for (const AxisExtent& extent : mean.dynamic) count = count * limit_(extent);
    ++rewritten_[mean.block];
    return sum / ir::Cast(visited->dtype, count);
  }

 private:
  const MeanOfBuffer& means_;
  const std::function<Expr(const AxisExtent&)>& limit_;
  std::map<std::string, int>& rewritten_;
};

}  // namespace

std::vector<MeanCount> PlanMeanCounts(const ir::KernelFunction& kernel,
                                      const std::vector<DynamicIterator>& iterators) {
  std::vector<MeanCount> means;
  for (const ir::BlockRealizeNode* realize : dynamic_access::LeafBlocks(kernel.body)) {
    const ir::BlockNode& block = *realize->block;
    if (!IsMeanSumBlock(block.name) || block.writes.size() != 1) continue;
    MeanCount mean{block.name, block.writes[0].buffer->name};
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      if (block.iter_vars[k].kind != ir::IterKind::kReduction) continue;
      int64_t domain = block.iter_vars[k].extent;
      mean.count_at_bound *= domain;
      const DynamicIterator* dynamic = nullptr;
      for (const DynamicIterator& it : iterators) {
        if (it.block == block.name && it.iterator == k && it.reduction) dynamic = &it;
      }
      if (dynamic != nullptr) {
        mean.dynamic.push_back(dynamic->extent);
      } else {
        mean.static_count *= domain;
      }
    }
    if (!mean.dynamic.empty()) means.push_back(std::move(mean));
  }
  return means;
}

MeanOfBuffer MeansByBuffer(const std::vector<MeanCount>& means, const ir::Stmt& scheduled_body) {
  MeanOfBuffer by_buffer;
  for (const MeanCount& mean : means) by_buffer[mean.buffer] = &mean;
  for (const ir::BlockRealizeNode* realize : dynamic_access::LeafBlocks(scheduled_body)) {
    for (const MeanCount& mean : means) {
      if (realize->block->name != mean.block) continue;
      for (const ir::BufferRegion& write : realize->block->writes) {
        by_buffer[write.buffer->name] = &mean;
      }
    }
  }
  return by_buffer;
}

Expr DivideMeansByValidCount(const Expr& e, const MeanOfBuffer& means,
                             const std::function<Expr(const AxisExtent&)>& limit,
                             std::map<std::string, int>& rewritten) {
  if (means.empty()) return e;
  return MeanDivisionRewriter(means, limit, rewritten).VisitExpr(e);
}

}  // namespace tandem::kernels
