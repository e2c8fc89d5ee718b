// The one table mapping op names to their compute definitions.
#include <map>

#include "kernels/compute/op_compute.h"

namespace tandem::kernels {
namespace {

std::map<std::string, ComputeDef> BuildTable() {
  const std::vector<std::string> data_weight = {"data", "weight"};
  const std::vector<std::string> binary = {"a", "b"};
  const std::vector<std::string> unary = {"x"};
  std::vector<ComputeDef> defs = {
      {"conv1d", LowerConvolution, data_weight},
      {"conv2d", LowerConvolution, data_weight},
      {"conv3d", LowerConvolution, data_weight},
      {"conv2d_transpose", LowerConvolutionTranspose, data_weight},
      {"winograd_weight_transform", LowerWinogradWeightTransform, {"weight"}},
      {"winograd_input_transform", LowerWinogradInputTransform, {"data"}},
      {"winograd_output_transform", LowerWinogradOutputTransform, {"y"}},
      {"dense", LowerDense, data_weight},
      {"matmul", LowerMatmul, binary},
      {"packed_matmul", LowerPackedMatmul, binary},
      {"batch_matmul", LowerBatchMatmul, binary},
      {"add", LowerBinary, binary},
      {"subtract", LowerBinary, binary},
      {"multiply", LowerBinary, binary},
      {"divide", LowerBinary, binary},
      {"pow", LowerBinary, binary},
      {"maximum", LowerBinary, binary},
      {"minimum", LowerBinary, binary},
      {"prelu", LowerBinary, {"x", "slope"}},
      {"relu", LowerUnary, unary},
      {"sigmoid", LowerUnary, unary},
      {"tanh", LowerUnary, unary},
      {"exp", LowerUnary, unary},
      {"log", LowerUnary, unary},
      {"sqrt", LowerUnary, unary},
      {"erf", LowerUnary, unary},
      {"abs", LowerUnary, unary},
      {"floor", LowerUnary, unary},
      {"ceil", LowerUnary, unary},
      {"round", LowerUnary, unary},
      {"leaky_relu", LowerUnary, unary},
      {"elu", LowerUnary, unary},
      {"gelu", LowerUnary, unary},
      {"clip", LowerUnary, unary},
      {"cast", LowerCast, unary},
      {"batch_norm", LowerBatchNorm, {"data", "gamma", "beta", "mean", "variance"}},
      {"layer_norm", LowerLayerNorm, {"data", "gamma", "beta"}},
      {"softmax", LowerSoftmax, unary},
      {"max_pool2d", LowerPool, {"data"}},
      {"avg_pool2d", LowerPool, {"data"}},
      {"global_avg_pool2d", LowerGlobalAvgPool, {"data"}},
      {"sum", LowerReduction, unary},
      {"mean", LowerReduction, unary},
      {"max", LowerReduction, unary},
      {"min", LowerReduction, unary},
      {"prod", LowerReduction, unary},
      {"argmax", LowerArgExtreme, unary},
      {"argmin", LowerArgExtreme, unary},
      {"cumsum", LowerCumsum, unary},
      {"topk", LowerTopK, unary},
      {"reshape", LowerReshapeLike, unary},
      {"flatten", LowerReshapeLike, unary},
      {"squeeze", LowerReshapeLike, unary},
      {"expand_dims", LowerReshapeLike, unary},
      {"transpose", LowerTranspose, unary},
      {"concat", LowerConcat, {"x"}},
      {"split", LowerSplit, unary},
      {"strided_slice", LowerStridedSlice, unary},
      {"pad", LowerPad, unary},
      {"layout_transform", LowerLayoutTransform, unary},
      {"gather", LowerGather, {"data", "indices"}},
      {"gather_elements", LowerGatherElements, {"data", "indices"}},
      {"scatter_nd", LowerScatterND, {"data", "indices", "updates"}},
      {"equal", LowerCompare, binary},
      {"less", LowerCompare, binary},
      {"greater", LowerCompare, binary},
      {"less_equal", LowerCompare, binary},
      {"greater_equal", LowerCompare, binary},
      {"logical_and", LowerCompare, binary},
      {"logical_or", LowerCompare, binary},
      {"logical_xor", LowerCompare, binary},
      {"logical_not", LowerLogicalNot, unary},
      {"where", LowerWhere, {"condition", "x", "y"}},
  };
  std::map<std::string, ComputeDef> table;
  for (ComputeDef& def : defs) table.emplace(def.op, std::move(def));
  return table;
}

const std::map<std::string, ComputeDef>& Table() {
  static const std::map<std::string, ComputeDef> table = BuildTable();
  return table;
}

}  // namespace

const ComputeDef* FindCompute(const std::string& op) {
  auto it = Table().find(op);
  return it == Table().end() ? nullptr : &it->second;
}

std::vector<std::string> ComputeOpNames() {
  std::vector<std::string> names;
  for (const auto& [name, def] : Table()) names.push_back(name);
  return names;
}

}  // namespace tandem::kernels
