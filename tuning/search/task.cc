#include "tuning/search/task.h"

#include <fmt/format.h>

#include <map>

#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_structural.h"
#include "ir/structural.h"
#include "kernels/legalize.h"

namespace tandem::tuning {

namespace {

int64_t CountFloatOps(const ir::Expr& e) {
  int64_t count = 0;
  ir::VisitExprTree(e, [&](const ir::Expr& x) {
    if (!ir::IsFloat(x->dtype)) return;
    switch (x->kind) {
      case ir::ExprKind::kAdd:
      case ir::ExprKind::kSub:
      case ir::ExprKind::kMul:
      case ir::ExprKind::kDiv:
      case ir::ExprKind::kMin:
      case ir::ExprKind::kMax:
      case ir::ExprKind::kCall:
      case ir::ExprKind::kSelect:
        ++count;
        break;
      default:
        break;
    }
  });
  return count;
}

void CountStmt(const ir::Stmt& s, double scale, double& total) {
  if (!s) return;
  if (const auto* loop = ir::As<ir::ForNode>(s)) {
    CountStmt(loop->body, scale * static_cast<double>(loop->extent), total);
  } else if (const auto* seq = ir::As<ir::SeqNode>(s)) {
    for (const ir::Stmt& child : seq->stmts) CountStmt(child, scale, total);
  } else if (const auto* store = ir::As<ir::StoreNode>(s)) {
    total += scale * static_cast<double>(CountFloatOps(store->value));
  } else if (const auto* branch = ir::As<ir::IfThenElseNode>(s)) {
    CountStmt(branch->then_case, scale, total);
    CountStmt(branch->else_case, scale, total);
  } else if (const auto* realize = ir::As<ir::BlockRealizeNode>(s)) {
    CountStmt(realize->block->body, scale, total);  // the init runs once per output: ignored
  }
}

}  // namespace

std::string KernelWorkloadHash(const ir::KernelFunction& unscheduled) {
  ir::KernelFunction unnamed = unscheduled;
  unnamed.name = "";
  return ir::HashToHex(ir::StructuralHash(unnamed));
}

double EstimateFlops(const ir::KernelFunction& kernel) {
  double total = 0;
  CountStmt(kernel.body, 1.0, total);
  return total;
}

ir::IRModule SingleKernelModule(const ir::KernelFunction& kernel) {
  ir::GraphBuilder b("main");
  std::vector<ir::ValueId> inputs;
  size_t num_inputs = kernel.params.size() - static_cast<size_t>(kernel.num_outputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    const ir::BufferNode& buffer = *kernel.params[i];
    inputs.push_back(
        b.Input(fmt::format("in{}", i), ir::TensorType{buffer.shape, buffer.dtype, ""}));
  }
  ir::IRModule module;
  module.Add(b.Finish(b.CallKernel(kernel, inputs, "kernel")));
  module.AddKernel(kernel);
  return module;
}

std::vector<TuningTask> ExtractTasks(const ir::IRModule& module) {
  kernels::LegalizeOptions options;
  options.apply_default_schedule = false;
  ir::IRModule lowered = kernels::Legalize(module, options);
  std::map<std::string, size_t> index_of;  // kernel name -> task
  std::map<std::string, size_t> by_hash;
  std::vector<TuningTask> tasks;
  for (const auto& [name, function] : lowered.graph_functions()) {
    for (const ir::Node& node : function->nodes) {
      if (node.kind != ir::NodeKind::kCallKernel) continue;
      auto known = index_of.find(node.callee);
      if (known == index_of.end()) {
        const ir::KernelFunction& kernel = lowered.GetKernel(node.callee);
        std::string hash = KernelWorkloadHash(kernel);
        auto [it, inserted] = by_hash.try_emplace(hash, tasks.size());
        if (inserted) {
          tasks.push_back(TuningTask{hash, kernel.name, kernel, 0, EstimateFlops(kernel)});
        }
        known = index_of.emplace(node.callee, it->second).first;
      }
      ++tasks[known->second].weight;
    }
  }
  return tasks;
}

}  // namespace tandem::tuning
