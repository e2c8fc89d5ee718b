// Gathers on run-time indices: one spatial block over the result that loads the index, checks it
// with the intrinsic "checked_index" (negative indices wrap; one outside [-extent, extent) is
// reported by the compiled kernel and reads position 0 instead of memory out of bounds) and
// loads the addressed element of data.
#include "ir/ops/op_util.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

size_t GatherAxis(const OpCall& call) {
  return static_cast<size_t>(ir::ops::NormalizeAxis(
      call.attrs.GetInt("axis"), static_cast<int64_t>(call.input_types[0].shape.size())));
}

}  // namespace

void LowerGather(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& indices = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  size_t axis = GatherAxis(call);
  size_t index_rank = indices->shape.size();
  builder.Compute("gather", out, AxisNames(out->shape.size()), [&](const std::vector<Var>& i) {
    std::vector<Expr> index_position(i.begin() + static_cast<int64_t>(axis),
                                     i.begin() + static_cast<int64_t>(axis + index_rank));
    std::vector<Expr> position(i.begin(), i.begin() + static_cast<int64_t>(axis));
    position.push_back(CheckedIndex(ir::Load(indices, index_position), data->shape[axis]));
    position.insert(position.end(), i.begin() + static_cast<int64_t>(axis + index_rank), i.end());
    return ir::Load(data, position);
  });
}

void LowerGatherElements(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& indices = call.inputs[1];
  const ir::Buffer& out = call.outputs[0];
  size_t axis = GatherAxis(call);
  builder.Compute("gather_elements", out, AxisNames(out->shape.size()),
                  [&](const std::vector<Var>& i) {
                    std::vector<Expr> position(i.begin(), i.end());
                    position[axis] = CheckedIndex(ir::Load(indices, i), data->shape[axis]);
                    return ir::Load(data, position);
                  });
}

}  // namespace tandem::kernels
