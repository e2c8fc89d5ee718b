// scatter_nd as gathers over the update rows, since a block writes its own positions only. One
// reduction block over the rows r of the indices matches each position's leading k coordinates
// against every row (each index checked with the intrinsic "checked_index", which reports one
// outside [-extent, extent) as gathers do); a spatial block then combines with data.
//   none: the block keeps the last matching row (max of r, -1 for none) and the result takes
//         that row's update where there is one, data elsewhere;
//   add / mul / max / min: the block reduces the matching updates (sum, product, max, min) and
//         the result combines them with data.
#include "ir/ops/op_util.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

void LowerScatterND(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& indices = call.inputs[1];
  const ir::Buffer& updates = call.inputs[2];
  const ir::Buffer& out = call.outputs[0];
  const std::string& reduction = call.attrs.GetString("reduction");
  const ir::Shape& shape = data->shape;
  size_t k = static_cast<size_t>(indices->shape.back());
  ir::Shape row_shape(indices->shape.begin(), indices->shape.end() - 1);
  int64_t rows = ir::NumElements(row_shape);
  std::vector<std::string> names = AxisNames(shape.size());
  if (rows == 0) {
    builder.Compute("scatter_nd", out, names,
                    [&](const std::vector<Var>& i) { return ir::Load(data, i); });
    return;
  }
  // Row `r` (flat) of the indices addresses the leading coordinates of `i`.
  auto matches = [&](const std::vector<Var>& i, const Var& r) {
    std::vector<Expr> row = ReshapeIndex({r}, {rows}, row_shape);
    std::vector<Expr> conditions;
    for (size_t d = 0; d < k; ++d) {
      std::vector<Expr> at = row;
      at.push_back(ir::IntImm(static_cast<int64_t>(d)));
      conditions.push_back(CheckedIndex(ir::Load(indices, at), shape[d]) == i[d]);
    }
    return All(conditions);
  };
  // The element of `updates` for row `r` at the trailing coordinates of `i`.
  auto update = [&](const std::vector<Var>& i, const Expr& r) {
    std::vector<Expr> at = ReshapeIndex({r}, {rows}, row_shape);
    at.insert(at.end(), i.begin() + static_cast<int64_t>(k), i.end());
    return ir::Load(updates, at);
  };
  std::vector<ReduceAxis> along = {ReduceAxis{"r", rows}};
  if (reduction == "none") {
    ir::Shape lead(shape.begin(), shape.begin() + static_cast<int64_t>(k));
    ir::Buffer last = builder.AddIntermediate(data->name + "_row", ir::DataType::kInt64, lead);
    builder.Reduce("scatter_nd_row", last, AxisNames(k), along, Reducer::kMax,
                   [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                     return ir::Select(matches(s, r[0]), ir::Cast(ir::DataType::kInt64, r[0]),
                                       ir::IntImm(-1));
                   });
    builder.Compute("scatter_nd", out, names, [&](const std::vector<Var>& i) {
      Expr row = ir::Load(last, std::vector<Expr>(i.begin(), i.begin() + static_cast<int64_t>(k)));
      // A row of -1 (no update) wraps to a valid row whose value is not selected.
      return ir::Select(row >= ir::IntImm(0), update(i, CheckedIndex(row, rows)),
                        ir::Load(data, i));
    });
    return;
  }
  Reducer reducer = reduction == "add"   ? Reducer::kSum
                    : reduction == "mul" ? Reducer::kProd
                    : reduction == "max" ? Reducer::kMax
                    : reduction == "min"
                        ? Reducer::kMin
                        : throw LoweringError(call.op, "unknown reduction '" + reduction + "'");
  ir::Buffer combined = builder.AddIntermediate(data->name + "_updates", data->dtype, shape);
  builder.Reduce("scatter_nd_" + reduction, combined, names, along, reducer,
                 [&](const std::vector<Var>& i, const std::vector<Var>& r) {
                   return ir::Select(matches(i, r[0]), update(i, r[0]),
                                     ReducerIdentity(reducer, data->dtype));
                 });
  builder.Compute("scatter_nd", out, names, [&](const std::vector<Var>& i) {
    Expr a = ir::Load(data, i), b = ir::Load(combined, i);
    switch (reducer) {
      case Reducer::kSum:
        return a + b;
      case Reducer::kProd:
        return a * b;
      case Reducer::kMax:
        return ir::Max(a, b);
      default:
        return ir::Min(a, b);
    }
  });
}

}  // namespace tandem::kernels
