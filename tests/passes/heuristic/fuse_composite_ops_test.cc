// FuseLayerNorm and FuseGelu: the written-out forms become one call (IR text in, IR text out),
// near misses stay as they are, and the rewritten models compute what the originals compute on
// random inputs (reference interpreter).
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::CountOps;
using rewrite_testing::ExpectRewrite;
using rewrite_testing::ExpectUnchanged;

// Layer normalization over the last axis as PyTorch exports it before opset 17, with a scale and
// a shift after it.
constexpr const char* kWrittenOutLayerNorm = R"(
graph @main(%x: f32[2,4]) -> f32[2,4] {
  %m = mean(%x) {axes=[-1], keepdims=1}
  %d = subtract(%x, %m)
  %two = constant f32[] [2.0]
  %p = pow(%d, %two)
  %v = mean(%p) {axes=[1], keepdims=1}
  %eps = constant f32[] [0.5]
  %e = add(%v, %eps)
  %s = sqrt(%e)
  %y = divide(%d, %s)
  %g = constant f32[4] [1.0, 2.0, 3.0, 4.0]
  %scaled = multiply(%y, %g)
  %b = constant f32[1,4] [0.5, 0.25, 0.0, -1.0]
  %shifted = add(%b, %scaled)
  return %shifted
})";

TEST(FuseLayerNorm, FusesTheWrittenOutFormWithItsScaleAndShift) {
  ExpectRewrite("InferType, FuseLayerNorm", kWrittenOutLayerNorm, R"(
graph @main(%x: f32[2,4]) -> f32[2,4] {
  %g = constant f32[4] [1.0, 2.0, 3.0, 4.0]
  %b = constant f32[4] [0.5, 0.25, 0.0, -1.0]
  %shifted = layer_norm(%x, %g, %b) {axis=1, epsilon=0.5}
  return %shifted
})");
}

TEST(FuseLayerNorm, FusesSquaresWrittenAsMultiplyOverSeveralTrailingAxes) {
  ExpectRewrite("InferType, FuseLayerNorm", R"(
graph @main(%x: f32[2,3,2]) -> f32[2,3,2] {
  %m = mean(%x) {axes=[1,2], keepdims=1}
  %d = subtract(%x, %m)
  %p = multiply(%d, %d)
  %v = mean(%p) {axes=[2,1], keepdims=1}
  %eps = constant f32[1] [0.001]
  %e = add(%eps, %v)
  %s = sqrt(%e)
  %y = divide(%d, %s)
  return %y
})",
                R"(
graph @main(%x: f32[2,3,2]) -> f32[2,3,2] {
  %g = constant f32[3,2] [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
  %b = constant f32[3,2] [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
  %y = layer_norm(%x, %g, %b) {axis=1, epsilon=0.0010000000474974513}
  return %y
})");
}

TEST(FuseLayerNorm, LeavesNearMissesAlone) {
  // The mean is over a leading axis, not the trailing ones.
  ExpectUnchanged("InferType, FuseLayerNorm", R"(
graph @main(%x: f32[2,4]) -> f32[2,4] {
  %m = mean(%x) {axes=[0], keepdims=1}
  %d = subtract(%x, %m)
  %p = multiply(%d, %d)
  %v = mean(%p) {axes=[0], keepdims=1}
  %eps = constant f32[] [0.5]
  %e = add(%v, %eps)
  %s = sqrt(%e)
  %y = divide(%d, %s)
  return %y
})");
  // The deviation is also an output (read outside the pattern); the exponent is 3.
  ExpectUnchanged("InferType, FuseLayerNorm", R"(
graph @main(%x: f32[2,4]) -> (f32[2,4], f32[2,4]) {
  %m = mean(%x) {axes=[1], keepdims=1}
  %d = subtract(%x, %m)
  %p = multiply(%d, %d)
  %v = mean(%p) {axes=[1], keepdims=1}
  %eps = constant f32[] [0.5]
  %e = add(%v, %eps)
  %s = sqrt(%e)
  %y = divide(%d, %s)
  %t = tuple(%y, %d)
  return %t
})");
  ExpectUnchanged("InferType, FuseLayerNorm", R"(
graph @main(%x: f32[2,4]) -> f32[2,4] {
  %m = mean(%x) {axes=[1], keepdims=1}
  %d = subtract(%x, %m)
  %three = constant f32[] [3.0]
  %p = pow(%d, %three)
  %v = mean(%p) {axes=[1], keepdims=1}
  %eps = constant f32[] [0.5]
  %e = add(%v, %eps)
  %s = sqrt(%e)
  %y = divide(%d, %s)
  return %y
})");
  // A shift that varies along a leading (not normalized) axis is not folded into beta.
  ExpectRewrite("InferType, FuseLayerNorm", R"(
graph @main(%x: f32[2,4]) -> f32[2,4] {
  %m = mean(%x) {axes=[1], keepdims=1}
  %d = subtract(%x, %m)
  %p = multiply(%d, %d)
  %v = mean(%p) {axes=[1], keepdims=1}
  %eps = constant f32[] [0.5]
  %e = add(%v, %eps)
  %s = sqrt(%e)
  %y = divide(%d, %s)
  %c = constant f32[2,1] [1.0, 2.0]
  %z = add(%y, %c)
  return %z
})",
                R"(
graph @main(%x: f32[2,4]) -> f32[2,4] {
  %g = constant f32[4] [1.0, 1.0, 1.0, 1.0]
  %b = constant f32[4] [0.0, 0.0, 0.0, 0.0]
  %y = layer_norm(%x, %g, %b) {axis=1, epsilon=0.5}
  %c = constant f32[2,1] [1.0, 2.0]
  %z = add(%y, %c)
  return %z
})");
}

constexpr const char* kWrittenOutGelu = R"(
graph @main(%x: f32[2,5]) -> (f32[2,5], f32[2,5]) {
  %root2 = constant f32[] [1.4142135]
  %a = divide(%x, %root2)
  %erf_a = erf(%a)
  %one = constant f32[] [1.0]
  %plus = add(%erf_a, %one)
  %xp = multiply(%x, %plus)
  %half = constant f32[] [0.5]
  %gelu_a = multiply(%xp, %half)
  %inverse_root2 = constant f32[] [0.70710677]
  %y = exp(%x)
  %b = multiply(%inverse_root2, %y)
  %erf_b = erf(%b)
  %plus_b = add(%one, %erf_b)
  %yh = multiply(%half, %y)
  %gelu_b = multiply(%plus_b, %yh)
  %t = tuple(%gelu_a, %gelu_b)
  return %t
})";

TEST(FuseGelu, FusesBothGroupingsOfTheProduct) {
  ExpectRewrite("InferType, FuseGelu", kWrittenOutGelu, R"(
graph @main(%x: f32[2,5]) -> (f32[2,5], f32[2,5]) {
  %gelu_a = gelu(%x) {approximate="none"}
  %y = exp(%x)
  %gelu_b = gelu(%y) {approximate="none"}
  %t = tuple(%gelu_a, %gelu_b)
  return %t
})");
}

TEST(FuseGelu, LeavesNearMissesAlone) {
  // Wrong constant (0.6 instead of 0.5); erf read twice; x in the product differs from x in erf.
  ExpectUnchanged("InferType, FuseGelu", R"(
graph @main(%x: f32[2,5], %w: f32[2,5]) -> (f32[2,5], f32[2,5], f32[2,5]) {
  %root2 = constant f32[] [1.4142135]
  %a = divide(%x, %root2)
  %erf_a = erf(%a)
  %one = constant f32[] [1.0]
  %plus = add(%erf_a, %one)
  %xp = multiply(%x, %plus)
  %other = constant f32[] [0.6]
  %wrong = multiply(%xp, %other)
  %b = divide(%w, %root2)
  %erf_b = erf(%b)
  %plus_b = add(%erf_b, %one)
  %xb = multiply(%x, %plus_b)
  %half = constant f32[] [0.5]
  %mixed = multiply(%xb, %half)
  %t = tuple(%wrong, %mixed, %erf_b)
  return %t
})");
}

// GPT-2's tanh GELU: x^3 as pow (as exported) and as SimplifyExpr's two multiplies, the
// products and sums in either order.
constexpr const char* kWrittenOutTanhGelu = R"(
graph @main(%x: f32[2,5]) -> (f32[2,5], f32[2,5]) {
  %three = constant f32[] [3.0]
  %cube = pow(%x, %three)
  %k = constant f32[] [0.044715]
  %scaled_cube = multiply(%cube, %k)
  %inner = add(%x, %scaled_cube)
  %c = constant f32[] [0.7978846]
  %arg = multiply(%inner, %c)
  %th = tanh(%arg)
  %one = constant f32[] [1.0]
  %plus = add(%th, %one)
  %half = constant f32[] [0.5]
  %xh = multiply(%half, %x)
  %gelu_a = multiply(%xh, %plus)
  %y = exp(%x)
  %square = multiply(%y, %y)
  %cube_b = multiply(%y, %square)
  %scaled_b = multiply(%k, %cube_b)
  %inner_b = add(%scaled_b, %y)
  %arg_b = multiply(%c, %inner_b)
  %th_b = tanh(%arg_b)
  %plus_b = add(%one, %th_b)
  %yp = multiply(%y, %plus_b)
  %gelu_b = multiply(%yp, %half)
  %t = tuple(%gelu_a, %gelu_b)
  return %t
})";

TEST(FuseGelu, FusesTheTanhForm) {
  ExpectRewrite("InferType, FuseGelu", kWrittenOutTanhGelu, R"(
graph @main(%x: f32[2,5]) -> (f32[2,5], f32[2,5]) {
  %gelu_a = gelu(%x) {approximate="tanh"}
  %y = exp(%x)
  %gelu_b = gelu(%y) {approximate="tanh"}
  %t = tuple(%gelu_a, %gelu_b)
  return %t
})");
}

TEST(FuseGelu, LeavesTanhNearMissesAlone) {
  // 0.04 instead of 0.044715; x^2 instead of x^3; the tanh read twice.
  ExpectUnchanged("InferType, FuseGelu", R"(
graph @main(%x: f32[2,5]) -> (f32[2,5], f32[2,5], f32[2,5]) {
  %three = constant f32[] [3.0]
  %cube = pow(%x, %three)
  %k = constant f32[] [0.04]
  %scaled_cube = multiply(%cube, %k)
  %inner = add(%x, %scaled_cube)
  %c = constant f32[] [0.7978846]
  %arg = multiply(%inner, %c)
  %th = tanh(%arg)
  %one = constant f32[] [1.0]
  %plus = add(%th, %one)
  %half = constant f32[] [0.5]
  %xh = multiply(%half, %x)
  %wrong = multiply(%xh, %plus)
  %square = multiply(%x, %x)
  %k2 = constant f32[] [0.044715]
  %scaled_square = multiply(%square, %k2)
  %inner2 = add(%x, %scaled_square)
  %arg2 = multiply(%inner2, %c)
  %th2 = tanh(%arg2)
  %plus2 = add(%th2, %one)
  %xh2 = multiply(%half, %x)
  %squared = multiply(%xh2, %plus2)
  %twice = tuple(%wrong, %squared, %th2)
  return %twice
})");
}

// The rewrites keep what the functions compute, on random inputs.
TEST(FuseCompositeOps, PreserveSemanticsOnRandomInputs) {
  for (const char* text : {kWrittenOutLayerNorm, kWrittenOutGelu, kWrittenOutTanhGelu}) {
    ir::IRModule module = rewrite_testing::Run("InferType", ir::ParseModule(text, "input"));
    ir::IRModule fused = rewrite_testing::Run("InferType, FuseLayerNorm, FuseGelu", module);
    EXPECT_FALSE(ir::StructuralEqual(module, fused));
    std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), 5);
    std::vector<ir::Tensor> want = backends::RunReference(module, inputs);
    std::vector<ir::Tensor> got = backends::RunReference(fused, inputs);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_LT(ir::RelativeError(got[i], want[i]), 1e-5);
  }
}

// On the models (the BERT encoder of the shared models among them when present) the passes keep
// the outputs; on bert_small every layer norm and GELU is found.
TEST(FuseCompositeOps, PreserveModelSemantics) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    SCOPED_TRACE(name);
    const ir::IRModule& model = rewrite_testing::Model(name);
    ir::IRModule out =
        rewrite_testing::Run("InferType, SimplifyExpr, FuseLayerNorm, FuseGelu", model);
    if (name == "bert_small") {
      EXPECT_EQ(CountOps(out, "layer_norm"), 4);
      EXPECT_EQ(CountOps(out, "gelu"), 2);
      EXPECT_EQ(CountOps(out, "erf"), 0);
      EXPECT_EQ(CountOps(out, "sqrt"), 0);
    }
    rewrite_testing::ExpectSameOutputs(name, out);
  }
}

}  // namespace
}  // namespace tandem::passes
