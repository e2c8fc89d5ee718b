// The structure of lowered kernels (blocks, iterators, regions, init) and the lowering of fused
// graph functions with LowerGraphFunction.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "ir/kernel/kernel_structural.h"
#include "ir/op_registry.h"
#include "kernels/compute/compute_builder.h"
#include "kernels/compute/lower.h"
#include "tests/kernels/compute_test_util.h"

namespace tandem::kernels {
namespace {

using ir::Attrs;
using ir::DataType;
using ir::TensorType;
using testing::BlockNames;
using testing::Blocks;
using testing::FindBlock;
using testing::FoundBlock;
using Ints = std::vector<int64_t>;
using Names = std::vector<std::string>;

TensorType F32(ir::Shape shape) {
  return TensorType{std::move(shape), DataType::kFloat32, ""};
}

// Lowers one call, inferring its result type.
ir::KernelFunction Lower(const std::string& op, const std::vector<TensorType>& inputs,
                         Attrs attrs = {}) {
  std::vector<ir::Type> types(inputs.begin(), inputs.end());
  ir::Type result = ir::InferCallType(op, types, attrs);
  ir::KernelFunction kernel = LowerOpCall(op + "_kernel", op, attrs, inputs, result);
  testing::ExpectWellFormed(kernel);
  return kernel;
}

Names IteratorNames(const ir::BlockNode& block) {
  Names names;
  for (const ir::IterVar& iv : block.iter_vars) names.push_back(iv.var->name);
  return names;
}

int CountReductionIterators(const ir::BlockNode& block) {
  int count = 0;
  for (const ir::IterVar& iv : block.iter_vars) count += iv.kind == ir::IterKind::kReduction;
  return count;
}

bool UsesKind(const ir::Expr& e, ir::ExprKind kind) {
  bool found = false;
  ir::VisitExprTree(e, [&](const ir::Expr& x) { found = found || x->kind == kind; });
  return found;
}

const ir::Expr& StoredValue(const ir::BlockNode& block) {
  return ir::As<ir::StoreNode>(block.body)->value;
}

TEST(ComputeStructure, PaddedConv2dHasPadAndConvBlocks) {
  ir::KernelFunction kernel =
      Lower("conv2d", {F32({1, 3, 7, 7}), F32({4, 3, 3, 3})}, {{"padding", Ints{1, 1, 1, 1}}});
  EXPECT_EQ(BlockNames(kernel), (Names{"pad", "conv2d"}));
  ASSERT_EQ(kernel.params.size(), 3u);
  const ir::Buffer& data = kernel.params[0];
  const ir::Buffer& weight = kernel.params[1];
  const ir::Buffer& output = kernel.params[2];
  EXPECT_EQ(data->name, "data");
  EXPECT_EQ(weight->name, "weight");
  EXPECT_EQ(output->name, "output");
  EXPECT_EQ(kernel.num_outputs, 1);

  const ir::BlockNode* root = testing::RootBlock(kernel);
  ASSERT_EQ(root->alloc_buffers.size(), 1u);
  const ir::Buffer& padded = root->alloc_buffers[0];
  EXPECT_EQ(padded->shape, (ir::Shape{1, 3, 9, 9}));

  std::vector<FoundBlock> blocks = Blocks(kernel);
  const ir::BlockNode& pad = *blocks[0].block;
  EXPECT_EQ(IteratorNames(pad), (Names{"n", "c", "h", "w"}));
  EXPECT_EQ(CountReductionIterators(pad), 0);
  ASSERT_EQ(pad.reads.size(), 1u);
  EXPECT_EQ(pad.reads[0].buffer, data);
  EXPECT_EQ(pad.writes[0].buffer, padded);
  EXPECT_EQ(StoredValue(pad)->kind, ir::ExprKind::kSelect);

  const ir::BlockNode& conv = *blocks[1].block;
  EXPECT_EQ(IteratorNames(conv), (Names{"n", "co", "h", "w", "ci", "kh", "kw"}));
  EXPECT_EQ(CountReductionIterators(conv), 3);
  std::vector<int64_t> extents;
  for (const ir::IterVar& iv : conv.iter_vars) extents.push_back(iv.extent);
  EXPECT_EQ(extents, (Ints{1, 4, 7, 7, 3, 3, 3}));
  ASSERT_EQ(conv.reads.size(), 2u);
  EXPECT_EQ(conv.reads[0].buffer, padded);
  EXPECT_EQ(conv.reads[1].buffer, weight);
  ASSERT_EQ(conv.writes.size(), 1u);
  EXPECT_EQ(conv.writes[0].buffer, output);
  // weight[co, ci, kh, kw] is a point access in terms of the block iterators.
  const std::vector<ir::Range>& w = conv.reads[1].region;
  const int iterator_of_axis[4] = {1, 4, 5, 6};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_TRUE(w[k].min.same_as(conv.iter_vars[iterator_of_axis[k]].var)) << k;
    EXPECT_TRUE(w[k].extent->is_const_int(1));
  }
  // init: output = 0; body: output = output + value.
  const auto* init = ir::As<ir::StoreNode>(conv.init);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->value->kind, ir::ExprKind::kFloatImm);
  EXPECT_EQ(init->value->float_value, 0.0);
  const ir::Expr& update = StoredValue(conv);
  ASSERT_EQ(update->kind, ir::ExprKind::kAdd);
  EXPECT_EQ(update->operands[0]->kind, ir::ExprKind::kLoad);
  EXPECT_EQ(update->operands[0]->buffer, output);
}

TEST(ComputeStructure, UnpaddedConvHasOnlyTheConvBlock) {
  ir::KernelFunction kernel = Lower("conv1d", {F32({1, 3, 7}), F32({4, 3, 3})});
  EXPECT_EQ(BlockNames(kernel), (Names{"conv1d"}));
  EXPECT_TRUE(testing::RootBlock(kernel)->alloc_buffers.empty());
  EXPECT_EQ(IteratorNames(*Blocks(kernel)[0].block), (Names{"n", "co", "w", "ci", "kw"}));
}

TEST(ComputeStructure, DepthwiseConvHasNoChannelReduction) {
  ir::KernelFunction kernel =
      Lower("conv2d", {F32({1, 4, 7, 7}), F32({4, 1, 3, 3})}, {{"groups", int64_t{4}}});
  EXPECT_EQ(IteratorNames(*Blocks(kernel)[0].block), (Names{"n", "co", "h", "w", "kh", "kw"}));
}

TEST(ComputeStructure, Conv2dTransposeIsPadThenConvolution) {
  ir::KernelFunction kernel =
      Lower("conv2d_transpose", {F32({1, 2, 5, 5}), F32({2, 3, 3, 3})}, {{"strides", Ints{2, 2}}});
  EXPECT_EQ(BlockNames(kernel), (Names{"pad", "conv2d_transpose"}));
  const ir::BlockNode& conv = *Blocks(kernel)[1].block;
  EXPECT_EQ(IteratorNames(conv), (Names{"n", "co", "h", "w", "ci", "kh", "kw"}));
  EXPECT_FALSE(UsesKind(StoredValue(conv), ir::ExprKind::kSelect));
}

TEST(ComputeStructure, MultiBlockOpsNameTheirBlocks) {
  EXPECT_EQ(BlockNames(Lower("softmax", {F32({3, 5})})),
            (Names{"softmax_max", "softmax_exp", "softmax_exp_sum", "softmax"}));
  EXPECT_EQ(BlockNames(Lower("layer_norm", {F32({3, 5}), F32({5}), F32({5})})),
            (Names{"layer_norm_mean", "layer_norm_variance", "layer_norm"}));
  EXPECT_EQ(BlockNames(Lower("mean", {F32({3, 5})}, {{"axes", Ints{1}}})),
            (Names{"mean_sum", "mean"}));
  EXPECT_EQ(BlockNames(Lower("avg_pool2d", {F32({1, 2, 6, 6})},
                             {{"pool_size", Ints{3, 3}}, {"padding", Ints{1, 1, 1, 1}}})),
            (Names{"pad", "avg_pool2d_sum", "avg_pool2d"}));
  EXPECT_EQ(BlockNames(Lower("max_pool2d", {F32({1, 2, 6, 6})}, {{"pool_size", Ints{2, 2}}})),
            (Names{"max_pool2d"}));
  // A ceil_mode window past the end needs the pad block even without padding.
  EXPECT_EQ(BlockNames(Lower(
                "max_pool2d", {F32({1, 2, 8, 8})},
                {{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}})),
            (Names{"pad", "max_pool2d"}));
  EXPECT_EQ(BlockNames(Lower("global_avg_pool2d", {F32({1, 2, 5, 5})})),
            (Names{"global_avg_pool2d_sum", "global_avg_pool2d"}));
  EXPECT_EQ(
      BlockNames(Lower("batch_norm", {F32({2, 3, 4}), F32({3}), F32({3}), F32({3}), F32({3})})),
      (Names{"batch_norm"}));
}

TEST(ComputeStructure, ReductionInitIsTheIdentity) {
  ir::KernelFunction max = Lower("max", {F32({3, 5})}, {{"axes", Ints{1}}});
  const ir::BlockNode& block = *Blocks(max)[0].block;
  EXPECT_EQ(IteratorNames(block), (Names{"i0", "k0"}));
  const auto* init = ir::As<ir::StoreNode>(block.init);
  ASSERT_NE(init, nullptr);
  EXPECT_TRUE(std::isinf(init->value->float_value) && init->value->float_value < 0);
  EXPECT_EQ(StoredValue(block)->kind, ir::ExprKind::kMax);
  // Reads name the input only (not the accumulated output).
  ASSERT_EQ(block.reads.size(), 1u);
  EXPECT_EQ(block.reads[0].buffer, max.params[0]);
}

TEST(ComputeStructure, SplitWritesOneOutputPerPart) {
  ir::KernelFunction kernel =
      Lower("split", {F32({2, 6})}, {{"axis", int64_t{1}}, {"sections", Ints{1, 2, 3}}});
  EXPECT_EQ(kernel.num_outputs, 3);
  EXPECT_EQ(BlockNames(kernel), (Names{"split", "split_1", "split_2"}));
  EXPECT_EQ(kernel.params[1]->name, "output0");
  EXPECT_EQ(kernel.params[3]->name, "output2");
}

TEST(ComputeStructure, IndexRemapping) {
  // Regrouping goes through the flat index; dropping unit axes maps axis by axis.
  ir::KernelFunction reshape = Lower("reshape", {F32({2, 3, 4})}, {{"newshape", Ints{4, 6}}});
  EXPECT_TRUE(UsesKind(StoredValue(*Blocks(reshape)[0].block), ir::ExprKind::kFloorDiv));
  ir::KernelFunction squeeze = Lower("squeeze", {F32({1, 3, 1, 4})});
  EXPECT_FALSE(UsesKind(StoredValue(*Blocks(squeeze)[0].block), ir::ExprKind::kFloorDiv));
  ir::KernelFunction concat = Lower("concat", {F32({2, 3}), F32({4, 3})});
  EXPECT_EQ(StoredValue(*Blocks(concat)[0].block)->kind, ir::ExprKind::kSelect);
  EXPECT_EQ(Blocks(concat)[0].block->reads.size(), 2u);
}

TEST(ComputeStructure, LoweringIsDeterministic) {
  // Workloads are keyed by structural hash, so lowering the same call twice must give
  // structurally equal kernels; a different attribute must not.
  std::vector<TensorType> inputs = {F32({1, 3, 7, 7}), F32({4, 3, 3, 3})};
  ir::KernelFunction a = Lower("conv2d", inputs, {{"padding", Ints{1, 1, 1, 1}}});
  ir::KernelFunction b = Lower("conv2d", inputs, {{"padding", Ints{1, 1, 1, 1}}});
  ir::KernelFunction c =
      Lower("conv2d", inputs, {{"padding", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
  EXPECT_EQ(ir::StructuralDiff(a, b), "");
  EXPECT_EQ(ir::StructuralHash(a), ir::StructuralHash(b));
  EXPECT_FALSE(ir::StructuralEqual(a, c));
}

TEST(ComputeStructure, ReadRegionsCoverEveryAccess) {
  ir::Buffer a = ir::MakeBuffer("a", DataType::kFloat32, {4, 8});
  ir::Buffer c = ir::MakeBuffer("c", DataType::kFloat32, {6});
  ir::Var i = ir::MakeVar("i");
  ir::Var k = ir::MakeVar("k");
  ir::Expr value = ir::Load(a, {i, k}) + ir::Load(a, {i, k + ir::Expr(2)}) +
                   ir::Load(c, {ir::Expr(1)}) + ir::Load(c, {ir::Expr(4)}) + ir::Load(a, {i, k});
  std::vector<ir::BufferRegion> regions = ReadRegions(value, nullptr);
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0].buffer, a);
  EXPECT_TRUE(regions[0].region[0].min.same_as(i));
  EXPECT_TRUE(regions[0].region[0].extent->is_const_int(1));
  // Axis 1 is accessed at k and k + 2: the box [min(k, k+2), max(k, k+2) - min(k, k+2) + 1).
  EXPECT_EQ(regions[0].region[1].min->kind, ir::ExprKind::kMin);
  EXPECT_EQ(regions[0].region[1].extent->kind, ir::ExprKind::kAdd);
  EXPECT_EQ(regions[1].buffer, c);
  EXPECT_TRUE(regions[1].region[0].min->is_const_int(1));
  EXPECT_TRUE(regions[1].region[0].extent->is_const_int(4));
  EXPECT_TRUE(ReadRegions(value, a).size() == 1u && ReadRegions(value, a)[0].buffer == c);
}

TEST(ComputeErrors, NameTheOpAndTheReason) {
  EXPECT_FALSE(HasCompute("no_such_op"));
  EXPECT_THROW(LowerOpCall("k", "no_such_op", {}, {F32({2})}, F32({2})), ir::Error);
  try {
    LowerOpCall("k", "relu", {}, {F32({2, 3})}, F32({3, 2}));
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().op, "relu");
    EXPECT_NE(std::string(e.what()).find("f32[3,2]"), std::string::npos) << e.what();
  }
  try {
    LowerOpCall("k", "conv2d", {}, {F32({1, 3, 5, 5}), F32({4, 2, 3, 3})}, F32({1, 4, 3, 3}));
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().op, "conv2d");
  }
}

// ---- fused graph functions ----

void ExpectGraphMatches(const ir::GraphFunction& function, uint64_t seed = 3) {
  ir::Verify(function);
  std::vector<ir::Tensor> inputs = backends::RandomInputs(function, seed);
  std::vector<ir::Tensor> expected = backends::RunReference(function, inputs);
  ir::KernelFunction kernel = LowerGraphFunction(function, function.name);
  testing::ExpectWellFormed(kernel);
  EXPECT_EQ(kernel.params.size(), function.params.size() + expected.size());
  std::vector<ir::Tensor> actual = backends::RunKernelReference(kernel, inputs, true);
  testing::ExpectSameTensors(actual, expected);
}

TEST(FusedCompute, Conv2dBiasRelu) {
  ir::GraphBuilder b("conv_bias_relu");
  ir::ValueId data = b.Input("data", F32({1, 3, 7, 7}));
  ir::ValueId weight = b.Input("weight", F32({4, 3, 3, 3}));
  ir::ValueId bias = b.Input("bias", F32({4, 1, 1}));
  ir::ValueId conv = b.Call("conv2d", {data, weight}, {{"padding", Ints{1, 1, 1, 1}}}, "conv");
  ir::ValueId sum = b.Call("add", {conv, bias}, {}, "biased");
  ir::GraphFunction function = b.Finish(b.Call("relu", {sum}, {}, "out"));
  ExpectGraphMatches(function);

  ir::KernelFunction kernel = LowerGraphFunction(function, "fused");
  EXPECT_EQ(kernel.name, "fused");
  EXPECT_EQ(BlockNames(kernel), (Names{"pad", "conv2d", "add", "relu"}));
  Names params;
  for (const ir::Buffer& p : kernel.params) params.push_back(p->name);
  EXPECT_EQ(params, (Names{"data", "weight", "bias", "out"}));
  Names allocated;
  for (const ir::Buffer& a : testing::RootBlock(kernel)->alloc_buffers)
    allocated.push_back(a->name);
  EXPECT_EQ(allocated, (Names{"conv", "data_pad", "biased"}));
  // The add reads the conv intermediate and the bias parameter.
  const ir::BlockNode& add = *Blocks(kernel)[2].block;
  ASSERT_EQ(add.reads.size(), 2u);
  EXPECT_EQ(add.reads[0].buffer->name, "conv");
  EXPECT_EQ(add.reads[1].buffer, kernel.params[2]);
}

TEST(FusedCompute, DenseBiasGelu) {
  ir::GraphBuilder b("dense_gelu");
  ir::ValueId x = b.Input("x", F32({3, 8}));
  ir::ValueId w = b.Input("w", F32({5, 8}));
  ir::ValueId bias = b.Input("bias", F32({5}));
  ir::ValueId dense = b.Call("dense", {x, w});
  ir::ValueId sum = b.Call("add", {dense, bias});
  ExpectGraphMatches(b.Finish(b.Call("gelu", {sum}, {{"approximate", std::string("tanh")}})));
}

TEST(FusedCompute, MatmulAdd) {
  ir::GraphBuilder b("matmul_add");
  ir::ValueId a = b.Input("a", F32({2, 4, 6}));
  ir::ValueId m = b.Input("m", F32({6, 5}));
  ir::ValueId c = b.Input("c", F32({4, 5}));
  ExpectGraphMatches(b.Finish(b.Call("add", {b.Call("matmul", {a, m}), c})));
}

TEST(FusedCompute, BatchMatmulSoftmax) {
  ir::GraphBuilder b("attention_scores");
  ir::ValueId q = b.Input("q", F32({2, 4, 6}));
  ir::ValueId k = b.Input("k", F32({2, 5, 6}));
  ir::ValueId scores = b.Call("batch_matmul", {q, k}, {{"transpose_b", int64_t{1}}});
  ExpectGraphMatches(b.Finish(b.Call("softmax", {scores})));
}

TEST(FusedCompute, LayerNormResidual) {
  ir::GraphBuilder b("layer_norm_residual");
  ir::ValueId x = b.Input("x", F32({3, 8}));
  ir::ValueId gamma = b.Input("gamma", F32({8}));
  ir::ValueId beta = b.Input("beta", F32({8}));
  ir::ValueId norm = b.Call("layer_norm", {x, gamma, beta});
  ExpectGraphMatches(b.Finish(b.Call("add", {norm, x})));
}

TEST(FusedCompute, SplitPartsAndTupleResult) {
  ir::GraphBuilder b("split_parts");
  ir::ValueId x = b.Input("x", F32({3, 4}));
  ir::ValueId parts = b.Call("split", {x}, {{"axis", int64_t{1}}, {"sections", Ints{2, 2}}});
  ir::ValueId first = b.TupleGetItem(parts, 0);
  ir::ValueId second = b.TupleGetItem(parts, 1);
  ir::ValueId sum = b.Call("add", {first, second}, {}, "sum");
  ir::GraphFunction function = b.Finish(std::vector<ir::ValueId>{sum, second});
  ExpectGraphMatches(function);
  ir::KernelFunction kernel = LowerGraphFunction(function, "split_parts");
  EXPECT_EQ(kernel.num_outputs, 2);
  EXPECT_EQ(BlockNames(kernel), (Names{"split", "split_1", "add"}));
}

TEST(FusedCompute, ParameterAndRepeatedResultsAreCopied) {
  ir::GraphBuilder b("copies");
  ir::ValueId x = b.Input("x", F32({2, 3}));
  ir::ValueId y = b.Call("relu", {x}, {}, "y");
  ir::GraphFunction function = b.Finish(std::vector<ir::ValueId>{y, x, y});
  ExpectGraphMatches(function);
  ir::KernelFunction kernel = LowerGraphFunction(function, "copies");
  EXPECT_EQ(kernel.num_outputs, 3);
  EXPECT_EQ(BlockNames(kernel), (Names{"relu", "copy", "copy_1"}));
}

TEST(FusedCompute, OneBufferReadTwiceByConcat) {
  ir::GraphBuilder b("self_concat");
  ir::ValueId x = b.Input("x", F32({2, 3}));
  ir::GraphFunction function = b.Finish(b.Call("concat", {x, x}, {{"axis", int64_t{1}}}));
  ExpectGraphMatches(function);
  ir::KernelFunction kernel = LowerGraphFunction(function, "self_concat");
  const ir::BlockNode& concat = *Blocks(kernel)[0].block;
  ASSERT_EQ(concat.reads.size(), 1u);
  EXPECT_EQ(concat.reads[0].region[1].min->kind, ir::ExprKind::kMin);
}

TEST(FusedCompute, ConstantsAreRejected) {
  ir::GraphBuilder b("with_constant");
  ir::ValueId x = b.Input("x", F32({2, 3}));
  ir::ValueId c = b.Constant(ir::Tensor::FromFloats({3}, {1, 2, 3}), "c");
  ir::GraphFunction function = b.Finish(b.Call("add", {x, c}));
  try {
    LowerGraphFunction(function, "k");
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.where().node, "c");
    EXPECT_NE(std::string(e.what()).find("constant"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::kernels
