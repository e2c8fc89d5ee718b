// SimplifyExpr: batch_norm folding, transpose and reshape simplification, identity arithmetic;
// cases where each rule must not fire; semantics on the test models.
#include <gtest/gtest.h>

#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::CountOps;
using rewrite_testing::ExpectRewrite;
using rewrite_testing::ExpectUnchanged;

constexpr const char* kPipeline = "InferType, SimplifyExpr";

// Batch-norm statistics with epsilon 1 chosen so that scale = gamma / sqrt(var + eps) = [2, 1]
// and shift = beta - mean * scale = [0, -3] are exact.
constexpr const char* kStats = R"(
  %gamma = constant f32[2] [4.0, 3.0]
  %beta = constant f32[2] [1.0, -1.0]
  %mean = constant f32[2] [0.5, 2.0]
  %var = constant f32[2] [3.0, 8.0])";

std::string WithStats(const std::string& head, const std::string& tail) {
  return head + kStats + tail;
}

TEST(SimplifyExpr, FoldsBatchNormIntoConv2d) {
  ExpectRewrite(kPipeline,
                WithStats(R"(
graph @main(%x: f32[1,1,3,3]) -> f32[1,2,3,3] {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w))",
                          R"(
  %y = batch_norm(%c, %gamma, %beta, %mean, %var) {epsilon=1.0}
  return %y
})"),
                R"(
graph @main(%x: f32[1,1,3,3]) -> f32[1,2,3,3] {
  %w = constant f32[2,1,1,1] [2.0, 2.0]
  %c = conv2d(%x, %w)
  %bias = constant f32[2,1,1] [0.0, -3.0]
  %y = add(%c, %bias)
  return %y
})");
}

TEST(SimplifyExpr, FoldsBatchNormIntoConv1dAndNhwcConv2d) {
  ExpectRewrite(kPipeline,
                WithStats(R"(
graph @main(%x: f32[1,1,4]) -> f32[1,2,4] {
  %w = constant f32[2,1,1] [1.0, 2.0]
  %c = conv1d(%x, %w))",
                          R"(
  %y = batch_norm(%c, %gamma, %beta, %mean, %var) {epsilon=1.0}
  return %y
})"),
                R"(
graph @main(%x: f32[1,1,4]) -> f32[1,2,4] {
  %w = constant f32[2,1,1] [2.0, 2.0]
  %c = conv1d(%x, %w)
  %bias = constant f32[2,1] [0.0, -3.0]
  %y = add(%c, %bias)
  return %y
})");
  // NHWC / HWIO: the channel axis is 3, the output-channel axis of the weight is 3, and the bias
  // is a plain [O] vector (which keeps the NHWC layout tag of the result).
  ExpectRewrite(kPipeline,
                WithStats(R"(
graph @main(%x: f32[1,3,3,1]) -> f32[1,3,3,2]{NHWC} {
  %w = constant f32[1,1,1,2] [1.0, 2.0]
  %c = conv2d(%x, %w) {data_layout="NHWC", kernel_layout="HWIO"})",
                          R"(
  %y = batch_norm(%c, %gamma, %beta, %mean, %var) {axis=3, epsilon=1.0}
  return %y
})"),
                R"(
graph @main(%x: f32[1,3,3,1]) -> f32[1,3,3,2]{NHWC} {
  %w = constant f32[1,1,1,2] [2.0, 2.0]
  %c = conv2d(%x, %w) {data_layout="NHWC", kernel_layout="HWIO"}
  %bias = constant f32[2] [0.0, -3.0]
  %y = add(%c, %bias)
  return %y
})");
}

TEST(SimplifyExpr, ConvUsedTwiceKeepsItsWeightAndBatchNormBecomesMultiplyAdd) {
  ExpectRewrite(kPipeline,
                WithStats(R"(
graph @main(%x: f32[1,1,3,3]) -> (f32[1,2,3,3], f32[1,2,3,3]) {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w))",
                          R"(
  %y = batch_norm(%c, %gamma, %beta, %mean, %var) {epsilon=1.0}
  %z = relu(%c)
  %t = tuple(%y, %z)
  return %t
})"),
                R"(
graph @main(%x: f32[1,1,3,3]) -> (f32[1,2,3,3], f32[1,2,3,3]) {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w)
  %scale = constant f32[2,1,1] [2.0, 1.0]
  %shift = constant f32[2,1,1] [0.0, -3.0]
  %m = multiply(%c, %scale)
  %y = add(%m, %shift)
  %z = relu(%c)
  %t = tuple(%y, %z)
  return %t
})");
}

TEST(SimplifyExpr, StandaloneBatchNormOnLastAxis) {
  ExpectRewrite(kPipeline,
                WithStats(R"(
graph @main(%x: f32[3,2]) -> f32[3,2] {)",
                          R"(
  %y = batch_norm(%x, %gamma, %beta, %mean, %var) {epsilon=1.0}
  return %y
})"),
                R"(
graph @main(%x: f32[3,2]) -> f32[3,2] {
  %scale = constant f32[2] [2.0, 1.0]
  %shift = constant f32[2] [0.0, -3.0]
  %m = multiply(%x, %scale)
  %y = add(%m, %shift)
  return %y
})");
}

TEST(SimplifyExpr, BatchNormWithNonConstantStatisticsStays) {
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[1,1,3,3], %gamma: f32[2]) -> f32[1,2,3,3] {
  %w = constant f32[2,1,1,1] [1.0, 2.0]
  %c = conv2d(%x, %w)
  %beta = constant f32[2] [1.0, -1.0]
  %mean = constant f32[2] [0.5, 2.0]
  %var = constant f32[2] [3.0, 8.0]
  %y = batch_norm(%c, %gamma, %beta, %mean, %var)
  return %y
})");
  // A conv weight that is not a constant: the conv stays, the batch_norm becomes multiply+add.
  ExpectRewrite(kPipeline,
                WithStats(R"(
graph @main(%x: f32[1,1,3,3], %w: f32[2,1,1,1]) -> f32[1,2,3,3] {
  %c = conv2d(%x, %w))",
                          R"(
  %y = batch_norm(%c, %gamma, %beta, %mean, %var) {epsilon=1.0}
  return %y
})"),
                R"(
graph @main(%x: f32[1,1,3,3], %w: f32[2,1,1,1]) -> f32[1,2,3,3] {
  %c = conv2d(%x, %w)
  %scale = constant f32[2,1,1] [2.0, 1.0]
  %shift = constant f32[2,1,1] [0.0, -3.0]
  %m = multiply(%c, %scale)
  %y = add(%m, %shift)
  return %y
})");
}

TEST(SimplifyExpr, CancelsInverseTransposes) {
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,4] {
  %a = transpose(%x) {axes=[0,2,1]}
  %b = transpose(%a) {axes=[0,2,1]}
  return %b
})",
                R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,4] {
  return %x
})");
  // Reverse of reverse (empty axes), and a transpose by the identity permutation.
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3]) -> f32[2,3] {
  %a = transpose(%x)
  %b = transpose(%a)
  %c = transpose(%b) {axes=[0,1]}
  return %c
})",
                R"(
graph @main(%x: f32[2,3]) -> f32[2,3] {
  return %x
})");
}

TEST(SimplifyExpr, ComposesNonInverseTransposes) {
  // q = [0,2,1] after p = [1,0,2]: result axis k is source axis p[q[k]], i.e. [1,2,0].
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3,4]) -> f32[3,4,2] {
  %a = transpose(%x) {axes=[1,0,2]}
  %b = transpose(%a) {axes=[0,2,1]}
  return %b
})",
                R"(
graph @main(%x: f32[2,3,4]) -> f32[3,4,2] {
  %b = transpose(%x) {axes=[1,2,0]}
  return %b
})");
  // The inner transpose is also returned: it stays, the outer one reads x directly.
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3,4]) -> (f32[3,2,4], f32[3,4,2]) {
  %a = transpose(%x) {axes=[1,0,2]}
  %b = transpose(%a) {axes=[0,2,1]}
  %t = tuple(%a, %b)
  return %t
})",
                R"(
graph @main(%x: f32[2,3,4]) -> (f32[3,2,4], f32[3,4,2]) {
  %a = transpose(%x) {axes=[1,0,2]}
  %b = transpose(%x) {axes=[1,2,0]}
  %t = tuple(%a, %b)
  return %t
})");
  // A single non-identity transpose, and transposes separated by another op, stay.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[2,3]) -> f32[2,3] {
  %a = transpose(%x)
  %r = relu(%a)
  %b = transpose(%r)
  return %b
})");
}

TEST(SimplifyExpr, CollapsesReshapeChains) {
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3,4]) -> f32[1,24] {
  %a = reshape(%x) {newshape=[4,6]}
  %b = expand_dims(%a) {axes=[0]}
  %c = flatten(%b) {axis=1}
  return %c
})",
                R"(
graph @main(%x: f32[2,3,4]) -> f32[1,24] {
  %c = reshape(%x) {newshape=[1,24]}
  return %c
})");
  // Back to the original shape: the chain disappears; a squeeze that removes nothing too.
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3]) -> f32[2,3] {
  %a = reshape(%x) {newshape=[6]}
  %b = reshape(%a) {newshape=[-1,3]}
  %c = squeeze(%b)
  return %c
})",
                R"(
graph @main(%x: f32[2,3]) -> f32[2,3] {
  return %x
})");
  // An intermediate that is also used stays; the chain still reads x.
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3]) -> (f32[6], f32[3,2]) {
  %a = reshape(%x) {newshape=[6]}
  %b = reshape(%a) {newshape=[3,2]}
  %t = tuple(%a, %b)
  return %t
})",
                R"(
graph @main(%x: f32[2,3]) -> (f32[6], f32[3,2]) {
  %a = reshape(%x) {newshape=[6]}
  %b = reshape(%x) {newshape=[3,2]}
  %t = tuple(%a, %b)
  return %t
})");
  // A single flatten or reshape that changes the shape stays.
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[2,3,4]) -> f32[4,6] {
  %a = flatten(%x)
  %r = relu(%a)
  %b = reshape(%r) {newshape=[4,6]}
  return %b
})");
}

TEST(SimplifyExpr, RemovesIdentityArithmetic) {
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3]) -> f32[2,3] {
  %zeros = constant f32[3] [0.0, 0.0, 0.0]
  %one = constant f32[] [1.0]
  %ones = constant f32[2,1] [1.0, 1.0]
  %zero = constant f32[1,1] [0.0]
  %a = add(%x, %zeros)
  %b = multiply(%one, %a)
  %c = divide(%b, %ones)
  %d = subtract(%c, %zero)
  %e = add(%zeros, %d)
  return %e
})",
                R"(
graph @main(%x: f32[2,3]) -> f32[2,3] {
  return %x
})");
}

TEST(SimplifyExpr, KeepsArithmeticThatIsNotAnIdentity) {
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[3], %p: f32[3]) -> (f32[2,3], f32[3], f32[3], f32[3], f32[3], f32[3]) {
  %zeros = constant f32[2,3] [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
  %broadcast = add(%x, %zeros)
  %twos = constant f32[3] [2.0, 2.0, 2.0]
  %scaled = multiply(%x, %twos)
  %zero = constant f32[] [0.0]
  %negated = subtract(%zero, %x)
  %one = constant f32[] [1.0]
  %inverse = divide(%one, %x)
  %mixed = constant f32[3] [0.0, 1.0, 0.0]
  %shifted = add(%x, %mixed)
  %sum = add(%x, %p)
  %t = tuple(%broadcast, %scaled, %negated, %inverse, %shifted, %sum)
  return %t
})");
}

TEST(SimplifyExpr, TurnsConstantPowersIntoMultipliesSqrtOrNothing) {
  ExpectRewrite(kPipeline, R"(
graph @main(%x: f32[2,3]) -> (f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3]) {
  %two = constant f32[] [2.0]
  %half = constant f32[1] [0.5]
  %one = constant f32[1,1] [1.0]
  %three = constant f32[] [3.0]
  %four = constant f32[1] [4.0]
  %a = pow(%x, %two)
  %b = pow(%x, %half)
  %c = pow(%x, %one)
  %d = pow(%x, %three)
  %e = pow(%x, %four)
  %t = tuple(%a, %b, %c, %d, %e)
  return %t
})",
                R"(
graph @main(%x: f32[2,3]) -> (f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3]) {
  %a = multiply(%x, %x)
  %b = sqrt(%x)
  %d_square = multiply(%x, %x)
  %d = multiply(%d_square, %x)
  %e_square = multiply(%x, %x)
  %e = multiply(%e_square, %e_square)
  %t = tuple(%a, %b, %x, %d, %e)
  return %t
})");
}

TEST(SimplifyExpr, KeepsPowersThatAreNotSimpleOrBroadcast) {
  ExpectUnchanged(kPipeline, R"(
graph @main(%x: f32[3], %p: f32[3]) -> (f32[3], f32[2,3], f32[3], f32[3]) {
  %five = constant f32[] [5.0]
  %a = pow(%x, %five)
  %twos = constant f32[2,3] [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
  %b = pow(%x, %twos)
  %c = pow(%x, %p)
  %fraction = constant f32[] [2.5]
  %d = pow(%x, %fraction)
  %t = tuple(%a, %b, %c, %d)
  return %t
})");
}

TEST(SimplifyExpr, RequiresInferType) {
  EXPECT_THROW(rewrite_testing::Run("SimplifyExpr", rewrite_testing::Model("resnet_basic_block")),
               ir::Error);
}

TEST(SimplifyExpr, PreservesModelSemantics) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    SCOPED_TRACE(name);
    const ir::IRModule& model = rewrite_testing::Model(name);
    ir::IRModule out = rewrite_testing::Run(kPipeline, model);
    int batch_norms = CountOps(model, "batch_norm");
    EXPECT_EQ(CountOps(out, "batch_norm"), 0);
    EXPECT_EQ(CountOps(out, "conv2d"), CountOps(model, "conv2d"));
    if (batch_norms > 0) {
      // Every batch_norm of the blocks follows a convolution read only by it: each becomes a bias
      // add, and no multiply appears.
      EXPECT_EQ(CountOps(out, "add"), CountOps(model, "add") + batch_norms);
      EXPECT_EQ(CountOps(out, "multiply"), CountOps(model, "multiply"));
    }
    if (ir::StructuralEqual(out, model)) continue;  // nothing to run
    rewrite_testing::ExpectSameOutputs(name, out);
  }
  EXPECT_GT(CountOps(rewrite_testing::Model("resnet_basic_block"), "batch_norm"), 0);
}

}  // namespace
}  // namespace tandem::passes
