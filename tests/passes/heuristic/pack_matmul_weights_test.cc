// PackMatmulWeights: matmul and batch_matmul with a constant right operand become packed_matmul
// with the weight cut into column panels at compile time (IR text in, IR text out); the cases
// that must not fire; the same values on the test models, on the reference interpreter and
// compiled with default schedules.
#include <gtest/gtest.h>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::CountOps;
using rewrite_testing::ExpectRewrite;
using rewrite_testing::ExpectUnchanged;

TEST(PackMatmulWeights, CutsAConstantMatrixIntoColumnPanels) {
  // W [K=2, N=4] in panels of 2: P[p, k, c] = W[k, 2p + c].
  ExpectRewrite("InferType, PackMatmulWeights(block=2)", R"(
graph @main(%x: f32[3,2]) -> f32[3,4] {
  %w = constant f32[2,4] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
  %y = matmul(%x, %w)
  return %y
})",
                R"(
graph @main(%x: f32[3,2]) -> f32[3,4] {
  %w_packed = constant f32[2,2,2] [1.0, 2.0, 5.0, 6.0, 3.0, 4.0, 7.0, 8.0]
  %y = packed_matmul(%x, %w_packed)
  return %y
})");
}

// N = 6 in panels of 4: the second panel holds columns 4 and 5 and two zero columns, and
// `columns` keeps N (an ImageNet classifier's 1000 classes in panels of 16 or 32).
TEST(PackMatmulWeights, PadsTheLastPanelWhenThePanelDoesNotDivideN) {
  ExpectRewrite("InferType, PackMatmulWeights(block=4)", R"(
graph @main(%x: f32[3,2]) -> f32[3,6] {
  %w = constant f32[2,6] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
  %y = matmul(%x, %w)
  return %y
})",
                R"(
graph @main(%x: f32[3,2]) -> f32[3,6] {
  %w_packed = constant f32[2,2,4] [1.0, 2.0, 3.0, 4.0, 7.0, 8.0, 9.0, 10.0, 5.0, 6.0, 0.0, 0.0, 11.0, 12.0, 0.0, 0.0]
  %y = packed_matmul(%x, %w_packed) {columns=6}
  return %y
})");
}

TEST(PackMatmulWeights, PacksEachMatrixOfABatchedWeight) {
  // batch_matmul's constant b [2, K=1, N=4] (a Winograd weight transform's shape).
  ExpectRewrite("InferType, PackMatmulWeights(block=2)", R"(
graph @main(%x: f32[2,3,1]) -> f32[2,3,4] {
  %w = constant f32[2,1,4] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
  %y = batch_matmul(%x, %w)
  return %y
})",
                R"(
graph @main(%x: f32[2,3,1]) -> f32[2,3,4] {
  %w_packed = constant f32[2,2,1,2] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
  %y = packed_matmul(%x, %w_packed)
  return %y
})");
}

// The default panel is two vector registers of the target, at least a cache line: 16 f32 on
// AVX2 (one line, two 8-lane vectors), 32 on AVX-512.
TEST(PackMatmulWeights, DefaultPanelIsTwoVectorsOfTheTarget) {
  ir::IRModule input = ir::ParseModule(R"(
graph @main(%x: f32[3,2]) -> f32[3,64] {
  %w = constant f32[2,64] [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
  %y = matmul(%x, %w)
  return %y
})",
                                       "input");
  for (const auto& [target, panel] : std::vector<std::pair<std::string, int64_t>>{
           {"llvm -cpu=x86-64-v3", 16}, {"llvm -cpu=skylake-avx512", 32}}) {
    SCOPED_TRACE(target);
    ir::IRModule packed =
        rewrite_testing::Run("InferType, PackMatmulWeights", input, ir::ParseTarget(target));
    const ir::GraphFunction& main = packed.Get("main");
    const ir::Node& call = main.node(main.Find("y"));
    ASSERT_EQ(call.op, "packed_matmul");
    EXPECT_EQ(main.type_of(call.inputs[1]).tensor().shape, (ir::Shape{64 / panel, 2, panel}));
  }
}

TEST(PackMatmulWeights, LeavesWhatItCannotPack) {
  const char* pipeline = "InferType, PackMatmulWeights(block=4)";
  // The weight is an input, not a constant.
  ExpectUnchanged(pipeline, R"(
graph @main(%x: f32[3,2], %w: f32[2,8]) -> f32[3,8] {
  %y = matmul(%x, %w)
  return %y
})");
  // N = 4 is one panel already.
  ExpectUnchanged(pipeline, R"(
graph @main(%x: f32[3,2]) -> f32[3,4] {
  %v = constant f32[2,4] [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
  %z = matmul(%x, %v)
  return %z
})");
  // A transposed batch_matmul operand and a vector a.
  ExpectUnchanged(pipeline, R"(
graph @main(%x: f32[1,3,2], %u: f32[2]) -> (f32[1,3,8], f32[8]) {
  %w = constant f32[1,8,2] [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
  %y = batch_matmul(%x, %w) {transpose_b=1}
  %v = constant f32[2,8] [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
  %z = matmul(%u, %v)
  %t = tuple(%y, %z)
  return %t
})");
}

TEST(PackMatmulWeights, RejectsABadPanelWidth) {
  EXPECT_THROW(rewrite_testing::Run("InferType, PackMatmulWeights(block=1)",
                                    rewrite_testing::Model("bert_layer")),
               ir::Error);
  EXPECT_THROW(rewrite_testing::Run("InferType, PackMatmulWeights(block=-16)",
                                    rewrite_testing::Model("bert_layer")),
               ir::Error);
}

TEST(PackMatmulWeights, PreservesTheModelsOnTheReferenceAndCompiled) {
  for (const std::string& name : rewrite_testing::ModelNames()) {
    SCOPED_TRACE(name);
    for (const char* block : {"0", "8"}) {
      SCOPED_TRACE(block);
      ir::IRModule packed = rewrite_testing::Run(
          std::string("InferType, SimplifyExpr, FoldConstant, CombineParallelMatmul, "
                      "DenseToMatmul, PackMatmulWeights(block=") +
              block + "), FuseOps",
          rewrite_testing::Model(name));
      rewrite_testing::ExpectSameOutputs(name, packed);
      if (name == "bert_layer" || name == "bert_small") {
        EXPECT_GT(CountOps(packed, "packed_matmul"), 0);
      }
      // What stays a matmul multiplies two computed values (attention's products), or has a
      // constant N of one panel at most.
      const ir::GraphFunction& main = packed.Get("main");
      int64_t host_panel =
          std::max<int64_t>(16, 2 * backends::DefaultScheduleOptionsFor({}).vector_lanes);
      int64_t panel = std::string(block) == "0" ? host_panel : 8;
      for (const ir::Node& node : main.nodes) {
        if (node.kind == ir::NodeKind::kCall &&
            (node.op == "matmul" || node.op == "batch_matmul") &&
            main.node(node.inputs[1]).kind == ir::NodeKind::kConstant) {
          int64_t n = main.type_of(node.inputs[1]).tensor().shape.back();
          EXPECT_LE(n, panel) << node.name;
        }
      }
      if (std::string(block) != "0") continue;  // compiled once, with the default panel
      rewrite_testing::ExpectCompiledSameOutputs(name, packed);
    }
  }
}

}  // namespace
}  // namespace tandem::passes
