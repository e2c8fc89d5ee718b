// The one place where every built-in graph op is registered.
#include "ir/op_registry.h"

namespace tandem::ir {
namespace ops {
void RegisterConvolutionOps(OpRegistry& registry);    // conv_ops.cc
void RegisterMatmulOps(OpRegistry& registry);         // matmul_ops.cc
void RegisterNormalizationOps(OpRegistry& registry);  // normalization_ops.cc
void RegisterPoolingOps(OpRegistry& registry);        // pooling_ops.cc
void RegisterElementwiseOps(OpRegistry& registry);    // elementwise_ops.cc
void RegisterActivationOps(OpRegistry& registry);     // activation_ops.cc
void RegisterReductionOps(OpRegistry& registry);      // reduction_ops.cc
void RegisterAxisOps(OpRegistry& registry);           // axis_ops.cc
void RegisterTopKOps(OpRegistry& registry);           // topk_ops.cc
void RegisterShapeOps(OpRegistry& registry);          // shape_ops.cc
void RegisterGatherOps(OpRegistry& registry);         // gather_ops.cc
void RegisterScatterNDOps(OpRegistry& registry);      // scatter_nd_ops.cc
void RegisterLogicalOps(OpRegistry& registry);        // logical_ops.cc
void RegisterLayoutOps(OpRegistry& registry);         // layout_ops.cc
void RegisterWinogradOps(OpRegistry& registry);       // winograd_ops.cc
}  // namespace ops

void RegisterAllOps(OpRegistry& registry) {
  ops::RegisterConvolutionOps(registry);
  ops::RegisterMatmulOps(registry);
  ops::RegisterNormalizationOps(registry);
  ops::RegisterPoolingOps(registry);
  ops::RegisterElementwiseOps(registry);
  ops::RegisterActivationOps(registry);
  ops::RegisterReductionOps(registry);
  ops::RegisterAxisOps(registry);
  ops::RegisterTopKOps(registry);
  ops::RegisterShapeOps(registry);
  ops::RegisterGatherOps(registry);
  ops::RegisterScatterNDOps(registry);
  ops::RegisterLogicalOps(registry);
  ops::RegisterLayoutOps(registry);
  ops::RegisterWinogradOps(registry);
}

}  // namespace tandem::ir
