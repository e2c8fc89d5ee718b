// The fused groups the test models produce (ResNet, MobileNetV2, BERT), each lowered into one
// kernel with LowerGraphFunction, compiled through LLVM unscheduled and with its default schedule,
// and compared with backends::RunReference of the group's graph (relative error below 1e-5).
// Shapes are large enough that the default schedule parallelizes the kernels. A mismatch names
// the layer at fault (see compiled_test_util.h).
#include <gtest/gtest.h>

#include <functional>

#include "backends/llvm/codegen.h"
#include "backends/reference/interpreter.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "tests/backends/compiled_test_util.h"

namespace tandem {
namespace {

using ir::ValueId;
using Ints = std::vector<int64_t>;

constexpr double kTolerance = 1e-5;

ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

struct Group {
  std::string name;
  std::function<ir::GraphFunction()> build;
  // Range of the uniform random inputs, per parameter (the last entry repeats).
  std::vector<std::pair<double, double>> ranges = {{-1.0, 1.0}};
};

void PrintTo(const Group& group, std::ostream* os) {
  *os << group.name;
}

// Batch-norm operands: gamma, beta, mean in [-1, 1), variance positive.
ValueId BatchNorm(ir::GraphBuilder& b, ValueId x, int64_t channels) {
  ValueId gamma = b.Input("gamma", F32({channels}));
  ValueId beta = b.Input("beta", F32({channels}));
  ValueId mean = b.Input("mean", F32({channels}));
  ValueId variance = b.Input("variance", F32({channels}));
  return b.Call("batch_norm", {x, gamma, beta, mean, variance});
}

const std::pair<double, double> kAny{-1, 1}, kPositive{0.5, 1.5};

std::vector<Group> Groups() {
  ir::Attrs pad1{{"padding", Ints{1, 1, 1, 1}}};
  ir::Attrs relu6{{"min", 0.0}, {"max", 6.0}};
  return {
      {"conv2d_bias_relu",
       [=] {
         ir::GraphBuilder b("conv2d_bias_relu");
         ValueId x = b.Input("data", F32({1, 16, 28, 28}));
         ValueId w = b.Input("weight", F32({32, 16, 3, 3}));
         ValueId bias = b.Input("bias", F32({32, 1, 1}));
         ValueId sum = b.Call("add", {b.Call("conv2d", {x, w}, pad1), bias});
         return b.Finish(b.Call("relu", {sum}));
       }},
      {"conv2d_batch_norm_relu",
       [=] {
         ir::GraphBuilder b("conv2d_batch_norm_relu");
         ValueId x = b.Input("data", F32({1, 16, 28, 28}));
         ValueId w = b.Input("weight", F32({32, 16, 3, 3}));
         ValueId normed = BatchNorm(b, b.Call("conv2d", {x, w}, pad1), 32);
         return b.Finish(b.Call("relu", {normed}));
       },
       {kAny, kAny, kAny, kAny, kAny, kPositive}},
      {"conv2d_batch_norm_add_relu",  // the end of a ResNet basic block
       [=] {
         ir::GraphBuilder b("conv2d_batch_norm_add_relu");
         ValueId x = b.Input("data", F32({1, 32, 28, 28}));
         ValueId w = b.Input("weight", F32({32, 32, 3, 3}));
         ValueId normed = BatchNorm(b, b.Call("conv2d", {x, w}, pad1), 32);
         ValueId shortcut = b.Input("shortcut", F32({1, 32, 28, 28}));
         return b.Finish(b.Call("relu", {b.Call("add", {normed, shortcut})}));
       },
       {kAny, kAny, kAny, kAny, kAny, kPositive, kAny}},
      {"conv2d_1x1_bias_clip",  // MobileNetV2 expansion
       [=] {
         ir::GraphBuilder b("conv2d_1x1_bias_clip");
         ValueId x = b.Input("data", F32({1, 16, 28, 28}));
         ValueId w = b.Input("weight", F32({96, 16, 1, 1}));
         ValueId bias = b.Input("bias", F32({96, 1, 1}));
         ValueId sum = b.Call("add", {b.Call("conv2d", {x, w}), bias});
         return b.Finish(b.Call("clip", {sum}, relu6));
       },
       {{-3, 3}, kAny}},
      {"depthwise_bias_clip",
       [=] {
         ir::GraphBuilder b("depthwise_bias_clip");
         ValueId x = b.Input("data", F32({1, 96, 28, 28}));
         ValueId w = b.Input("weight", F32({96, 1, 3, 3}));
         ValueId bias = b.Input("bias", F32({96, 1, 1}));
         ir::Attrs attrs = pad1;
         attrs.Set("groups", int64_t{96});
         ValueId sum = b.Call("add", {b.Call("conv2d", {x, w}, attrs), bias});
         return b.Finish(b.Call("clip", {sum}, relu6));
       },
       {{-3, 3}, kAny}},
      {"depthwise_stride2_bias_clip",
       [=] {
         ir::GraphBuilder b("depthwise_stride2_bias_clip");
         ValueId x = b.Input("data", F32({1, 96, 28, 28}));
         ValueId w = b.Input("weight", F32({96, 1, 3, 3}));
         ValueId bias = b.Input("bias", F32({96, 1, 1}));
         ir::Attrs attrs = pad1;
         attrs.Set("groups", int64_t{96});
         attrs.Set("strides", Ints{2, 2});
         ValueId sum = b.Call("add", {b.Call("conv2d", {x, w}, attrs), bias});
         return b.Finish(b.Call("clip", {sum}, relu6));
       },
       {{-3, 3}, kAny}},
      {"dense_bias_gelu",
       [] {
         ir::GraphBuilder b("dense_bias_gelu");
         ValueId x = b.Input("x", F32({1, 32, 256}));
         ValueId w = b.Input("weight", F32({1024, 256}));
         ValueId bias = b.Input("bias", F32({1024}));
         ValueId sum = b.Call("add", {b.Call("dense", {x, w}), bias});
         return b.Finish(b.Call("gelu", {sum}));
       },
       {kAny, {-0.1, 0.1}, kAny}},
      {"matmul_add",
       [] {
         ir::GraphBuilder b("matmul_add");
         ValueId x = b.Input("x", F32({1, 32, 256}));
         ValueId w = b.Input("weight", F32({256, 256}));
         ValueId bias = b.Input("bias", F32({256}));
         return b.Finish(b.Call("add", {b.Call("matmul", {x, w}), bias}));
       }},
      {"batch_matmul_divide_softmax",
       [] {
         ir::GraphBuilder b("batch_matmul_divide_softmax");
         ValueId q = b.Input("query", F32({4, 32, 64}));
         ValueId k = b.Input("key", F32({4, 32, 64}));
         ValueId scale = b.Input("scale", F32({}));
         ValueId scores = b.Call("batch_matmul", {q, k}, ir::Attrs{{"transpose_b", int64_t{1}}});
         return b.Finish(b.Call("softmax", {b.Call("divide", {scores, scale})}));
       },
       {{-2, 2}, {-2, 2}, {7.5, 8.5}}},
      {"add_layer_norm",
       [] {
         ir::GraphBuilder b("add_layer_norm");
         ValueId x = b.Input("x", F32({1, 32, 256}));
         ValueId residual = b.Input("residual", F32({1, 32, 256}));
         ValueId gamma = b.Input("gamma", F32({256}));
         ValueId beta = b.Input("beta", F32({256}));
         ValueId sum = b.Call("add", {x, residual});
         return b.Finish(b.Call("layer_norm", {sum, gamma, beta}, ir::Attrs{{"epsilon", 1e-12}}));
       }},
      {"residual_add_relu",
       [] {
         ir::GraphBuilder b("residual_add_relu");
         ValueId x = b.Input("x", F32({1, 64, 28, 28}));
         ValueId shortcut = b.Input("shortcut", F32({1, 64, 28, 28}));
         return b.Finish(b.Call("relu", {b.Call("add", {x, shortcut})}));
       }},
  };
}

class CompiledFusedGroup : public ::testing::TestWithParam<Group> {};

TEST_P(CompiledFusedGroup, MatchesReference) {
  const Group& group = GetParam();
  ir::GraphFunction function = group.build();
  std::vector<ir::TensorType> types;
  for (ValueId param : function.params) types.push_back(function.type_of(param).tensor());
  std::vector<ir::Tensor> inputs = testing::RandomInputsInRanges(types, group.ranges, 3);
  std::vector<ir::Tensor> expected = backends::RunReference(function, inputs);

  ir::KernelFunction plain = kernels::LowerGraphFunction(function, group.name);
  ASSERT_GE(plain.params.size(), inputs.size() + 1);
  kernels::Schedule schedule = kernels::ApplyDefaultSchedule(plain);
  ir::KernelFunction scheduled = schedule.function();
  scheduled.name = group.name + "_scheduled";
  std::string trace = schedule.trace().ToText();
  // The default schedule did something to every group (at least vectorized or parallelized).
  EXPECT_NE(trace.find("vectorize"), std::string::npos) << trace;

  std::unique_ptr<backends::CompiledModule> module;
  ASSERT_NO_THROW(module = backends::CompileKernels({plain, scheduled}));
  ASSERT_TRUE(
      testing::FunctionsWithInvalidGathers(backends::EmitAssembly({plain, scheduled})).empty())
      << "LLVM generated an invalid gather (see codegen_gather_test.cc); not run";
  for (const auto& [kernel, kernel_trace] :
       {std::pair{plain, std::string()}, std::pair{scheduled, trace}}) {
    SCOPED_TRACE(kernel.name);
    std::vector<ir::Tensor> actual = module->Run(kernel.name, inputs, true);
    std::string mismatch = testing::Mismatch(actual, expected, kTolerance);
    if (!mismatch.empty()) {
      ADD_FAILURE() << "compiled kernel differs from the reference: " << mismatch << "\n"
                    << testing::DiagnoseMismatch(plain, kernel, kernel_trace, inputs, expected,
                                                 kTolerance);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ModelGroups, CompiledFusedGroup, ::testing::ValuesIn(Groups()),
                         [](const ::testing::TestParamInfo<Group>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace tandem
