// Matrix products: one reduction block each, spatial iterators over the result (batch axes
// "b"/"b0".., rows "i", columns "j") and the reduction iterator "k".
#include <fmt/format.h>

#include "ir/error.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

void LowerDense(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& weight = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  size_t rank = out->shape.size();
  std::vector<std::string> names = rank == 2 ? std::vector<std::string>{"i"} : AxisNames(rank - 1);
  names.push_back("j");
  builder.Reduce("dense", out, names, {ReduceAxis{"k", weight->shape[1]}}, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   std::vector<Expr> row(s.begin(), s.end() - 1);
                   row.push_back(r[0]);
                   return ir::Load(data, row) * ir::Load(weight, {s.back(), r[0]});
                 });
}

void LowerMatmul(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& a = call.inputs[0];
  const ir::Buffer& b = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  bool a_vector = a->shape.size() == 1;
  bool b_vector = b->shape.size() == 1;
  size_t batch_rank = out->shape.size() - (a_vector ? 0 : 1) - (b_vector ? 0 : 1);
  ir::Shape batch(out->shape.begin(), out->shape.begin() + static_cast<int64_t>(batch_rank));
  int64_t k_extent = a->shape.back();
  std::vector<std::string> names = AxisNames(batch_rank, "b");
  if (!a_vector) names.push_back("i");
  if (!b_vector) names.push_back("j");
  // Indices into an operand: its (broadcast) batch axes, then its two matrix axes.
  auto operand_index = [&](const ir::Buffer& operand, const std::vector<Var>& s,
                           std::vector<Expr> matrix) {
    ir::Shape operand_batch(operand->shape.begin(), operand->shape.end() - 2);
    std::vector<Var> batch_vars(s.begin(), s.begin() + static_cast<int64_t>(batch_rank));
    std::vector<Expr> index = BroadcastIndex(batch_vars, batch, operand_batch);
    index.insert(index.end(), matrix.begin(), matrix.end());
    return index;
  };
  builder.Reduce("matmul", out, names, {ReduceAxis{"k", k_extent}}, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   const Expr& k = r[0];
                   Expr i = a_vector ? Expr() : s[batch_rank];
                   Expr j = b_vector ? Expr() : s.back();
                   Expr x = a_vector ? ir::Load(a, {k}) : ir::Load(a, operand_index(a, s, {i, k}));
                   Expr y = b_vector ? ir::Load(b, {k}) : ir::Load(b, operand_index(b, s, {k, j}));
                   return x * y;
                 });
}

// b is packed [..., N / nb, K, nb]: element (k, j) of a matrix is b[..., j / nb, k, j % nb], which
// the schedule's split of j into nb-aligned tiles simplifies to a contiguous panel row.
void LowerPackedMatmul(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& a = call.inputs[0];
  const ir::Buffer& b = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  size_t batch_rank = out->shape.size() - 2;
  ir::Shape batch(out->shape.begin(), out->shape.begin() + static_cast<int64_t>(batch_rank));
  int64_t k_extent = a->shape.back();
  int64_t block = b->shape.back();
  std::vector<std::string> names = AxisNames(batch_rank, "b");
  names.push_back("i");
  names.push_back("j");
  builder.Reduce(
      "matmul", out, names, {ReduceAxis{"k", k_extent}}, Reducer::kSum,
      [&](const std::vector<Var>& s, const std::vector<Var>& r) {
        std::vector<Var> batch_vars(s.begin(), s.begin() + static_cast<int64_t>(batch_rank));
        const Expr& k = r[0];
        const Expr& j = s.back();
        std::vector<Expr> a_index =
            BroadcastIndex(batch_vars, batch, ir::Shape(a->shape.begin(), a->shape.end() - 2));
        a_index.push_back(s[batch_rank]);
        a_index.push_back(k);
        std::vector<Expr> b_index =
            BroadcastIndex(batch_vars, batch, ir::Shape(b->shape.begin(), b->shape.end() - 3));
        b_index.push_back(ir::FloorDiv(j, ir::IntImm(block)));
        b_index.push_back(k);
        b_index.push_back(ir::FloorMod(j, ir::IntImm(block)));
        return ir::Load(a, a_index) * ir::Load(b, b_index);
      });
}

void LowerBatchMatmul(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& a = call.inputs[0];
  const ir::Buffer& b = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  bool transpose_a = call.attrs.GetInt("transpose_a") == 1;
  bool transpose_b = call.attrs.GetInt("transpose_b") == 1;
  int64_t batch = out->shape[0];
  int64_t k_extent = a->shape[transpose_a ? 1 : 2];
  builder.Reduce(
      "batch_matmul", out, {"b", "i", "j"}, {ReduceAxis{"k", k_extent}}, Reducer::kSum,
      [&](const std::vector<Var>& s, const std::vector<Var>& r) {
        const Expr& k = r[0];
        Expr a_batch = a->shape[0] == 1 && batch != 1 ? Expr(0) : s[0];
        Expr b_batch = b->shape[0] == 1 && batch != 1 ? Expr(0) : s[0];
        Expr x = transpose_a ? ir::Load(a, {a_batch, k, s[1]}) : ir::Load(a, {a_batch, s[1], k});
        Expr y = transpose_b ? ir::Load(b, {b_batch, s[2], k}) : ir::Load(b, {b_batch, k, s[2]});
        return x * y;
      });
}

}  // namespace tandem::kernels
