// What the per-op compute definitions share: the description of one op call being lowered, the
// table entry type, the family entry points and small index helpers.
//
// A compute definition receives the buffers holding its operands and the buffers it must write
// (one per result tensor; the caller decides whether they are kernel parameters or root
// intermediates) and adds its blocks to a ComputeBuilder. It may add intermediate buffers of its
// own (padding, partial sums). It throws ir::Error for an attribute combination it cannot lower.
#pragma once

#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/error.h"
#include "ir/kernel/expr.h"
#include "ir/type.h"
#include "kernels/compute/compute_builder.h"

namespace tandem::kernels {

struct OpCall {
  std::string op;
  ir::Attrs attrs;  // normalized (every declared attribute present)
  std::vector<ir::TensorType> input_types;
  std::vector<ir::TensorType> output_types;  // one per result tensor
  std::vector<ir::Buffer> inputs;
  std::vector<ir::Buffer> outputs;
};

using ComputeFunction = void (*)(ComputeBuilder& builder, const OpCall& call);

struct ComputeDef {
  std::string op;
  ComputeFunction lower = nullptr;
  // Names of the operand buffers when the op is lowered alone ("data", "weight", ...); a
  // variadic op repeats its last name with a position suffix.
  std::vector<std::string> operand_names;
};

// The table of every compute definition (register_all_computes.cc); nullptr when `op` has none.
const ComputeDef* FindCompute(const std::string& op);
std::vector<std::string> ComputeOpNames();

// Family entry points, one per *_compute.cc file.
void LowerConvolution(ComputeBuilder& builder, const OpCall& call);  // conv1d/2d/3d
void LowerConvolutionTranspose(ComputeBuilder& builder, const OpCall& call);
void LowerWinogradWeightTransform(ComputeBuilder& builder, const OpCall& call);
void LowerWinogradInputTransform(ComputeBuilder& builder, const OpCall& call);
void LowerWinogradOutputTransform(ComputeBuilder& builder, const OpCall& call);
void LowerDense(ComputeBuilder& builder, const OpCall& call);
void LowerMatmul(ComputeBuilder& builder, const OpCall& call);
void LowerPackedMatmul(ComputeBuilder& builder, const OpCall& call);
void LowerBatchMatmul(ComputeBuilder& builder, const OpCall& call);
void LowerBinary(ComputeBuilder& builder, const OpCall& call);  // add, ..., pow, maximum,
                                                                // minimum, prelu
void LowerUnary(ComputeBuilder& builder, const OpCall& call);   // relu, ..., gelu, clip,
                                                                // leaky_relu, elu
void LowerCast(ComputeBuilder& builder, const OpCall& call);
void LowerReduction(ComputeBuilder& builder, const OpCall& call);   // sum, mean, max, min, prod
void LowerArgExtreme(ComputeBuilder& builder, const OpCall& call);  // argmax, argmin
void LowerCumsum(ComputeBuilder& builder, const OpCall& call);
void LowerTopK(ComputeBuilder& builder, const OpCall& call);
void LowerBatchNorm(ComputeBuilder& builder, const OpCall& call);
void LowerLayerNorm(ComputeBuilder& builder, const OpCall& call);
void LowerSoftmax(ComputeBuilder& builder, const OpCall& call);
void LowerPool(ComputeBuilder& builder, const OpCall& call);  // max/avg_pool2d
void LowerGlobalAvgPool(ComputeBuilder& builder, const OpCall& call);
void LowerReshapeLike(ComputeBuilder& builder, const OpCall& call);  // reshape, flatten,
                                                                     // squeeze, expand_dims
void LowerTranspose(ComputeBuilder& builder, const OpCall& call);
void LowerConcat(ComputeBuilder& builder, const OpCall& call);
void LowerSplit(ComputeBuilder& builder, const OpCall& call);
void LowerStridedSlice(ComputeBuilder& builder, const OpCall& call);
void LowerPad(ComputeBuilder& builder, const OpCall& call);
void LowerLayoutTransform(ComputeBuilder& builder, const OpCall& call);
void LowerGather(ComputeBuilder& builder, const OpCall& call);
void LowerGatherElements(ComputeBuilder& builder, const OpCall& call);
void LowerScatterND(ComputeBuilder& builder, const OpCall& call);
void LowerCompare(ComputeBuilder& builder, const OpCall& call);  // equal, less, greater,
                                                                 // less_equal, greater_equal,
                                                                 // logical_and/or/xor
void LowerLogicalNot(ComputeBuilder& builder, const OpCall& call);
void LowerWhere(ComputeBuilder& builder, const OpCall& call);

// Indices into an operand of `operand_shape` for a broadcast op whose result index is `index`
// (numpy rules: right-aligned; an extent-1 axis against a larger one reads index 0).
std::vector<ir::Expr> BroadcastIndex(const std::vector<ir::Var>& index,
                                     const ir::Shape& result_shape, const ir::Shape& operand_shape);

// Indices into a tensor of `source_shape` holding the element at position `index` of the same
// data viewed with `target_shape` (row-major). Axes of extent 1 are skipped; when the remaining
// extents agree the mapping is axis by axis, otherwise it goes through the flat index with
// floordiv/floormod.
std::vector<ir::Expr> ReshapeIndex(const std::vector<ir::Var>& index, const ir::Shape& target_shape,
                                   const ir::Shape& source_shape);

// The dtype in which elementwise math on `dtype` is carried out: the dtype itself for f32/f64,
// f32 for f16 and f64 for integer types (whose results are cast back, truncating like the
// reference semantics).
ir::DataType MathType(ir::DataType dtype);

// A constant of `dtype` with `value`; for integer types the conversion truncates and saturates
// like a store of `value` would.
ir::Expr Constant(ir::DataType dtype, double value);

// Index arithmetic that leaves out neutral terms: e + c (e - |c| for c < 0; e for 0), e * c
// (e for 1), and the conjunction of `conditions` (undefined when there are none).
ir::Expr AddConst(const ir::Expr& e, int64_t c);
ir::Expr MulConst(const ir::Expr& e, int64_t c);
ir::Expr All(const std::vector<ir::Expr>& conditions);

// The position on an axis of `extent` that run-time index `value` (i64 or i32) addresses,
// through the intrinsic "checked_index": negative indices wrap, and one outside
// [-extent, extent) is reported by the compiled kernel (as the reference interpreter reports it)
// and addresses position 0 instead of memory out of bounds. Used by gathers and scatters.
ir::Expr CheckedIndex(const ir::Expr& value, int64_t extent);

// An Error about lowering `op`.
ir::Error LoweringError(const std::string& op, const std::string& message);

}  // namespace tandem::kernels
