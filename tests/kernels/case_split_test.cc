// Case splits (kernels/case_split.h): which blocks are case splits, how the default schedule
// lays them out (selecting loops unrolled just outside the vector loop), and that the code
// generator then emits one arm per copy and computes what the reference interpreter computes.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "backends/llvm/codegen.h"
#include "ir/kernel/kernel_printer.h"
#include "kernels/case_split.h"
#include "kernels/default_schedule.h"
#include "kernels/schedule/tree_util.h"
#include "tests/backends/kernel_test_util.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::F32;
using testing::LowerOp;

ir::KernelFunction InputTransform(int64_t tile) {
  return LowerOp("winograd_input_transform", {F32({1, 16, 14, 14})},
                 ir::Attrs{{"tile", tile}, {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
}

ir::KernelFunction OutputTransform() {
  // F(4x4,3x3): 36 x (2 x 2 tiles) x 16 channels -> [1, 16, 7, 7] (partial tiles cropped).
  return LowerOp(
      "winograd_output_transform", {F32({36, 4, 16})},
      ir::Attrs{{"tile", int64_t{4}}, {"output_shape", std::vector<int64_t>{1, 16, 7, 7}}});
}

// The function of `llvm_ir` with the most floating-point subtractions (a transform's arms
// subtract; the padding copy and the loops around do not).
std::string MostSubtractingFunction(const std::string& llvm_ir) {
  std::string best;
  size_t best_count = 0;
  for (size_t start = llvm_ir.find("define "); start != std::string::npos;
       start = llvm_ir.find("define ", start + 1)) {
    std::string function = llvm_ir.substr(start, llvm_ir.find("\n}\n", start) - start);
    size_t count = 0;
    for (size_t at = function.find(" fsub "); at != std::string::npos;
         at = function.find(" fsub ", at + 1)) {
      ++count;
    }
    if (count > best_count) {
      best_count = count;
      best = function;
    }
  }
  return best;
}

const ir::Block& BlockNamed(const ir::KernelFunction& kernel, const std::string& name) {
  return ir::As<ir::BlockRealizeNode>(GetBlockPath(kernel, name).target)->block;
}

TEST(CaseSplit, WinogradTransformsSelectOnTheirTilePositions) {
  EXPECT_EQ(CaseSplitAxes(BlockNamed(InputTransform(4), "winograd_input_transform")),
            (std::vector<int>{0}));
  EXPECT_EQ(CaseSplitAxes(BlockNamed(OutputTransform(), "winograd_output_transform")),
            (std::vector<int>{2, 4}));
  // The padding copy selects on a range test, not on `iterator == constant`.
  EXPECT_TRUE(CaseSplitAxes(BlockNamed(InputTransform(4), "pad")).empty());
}

TEST(CaseSplit, ArmsReadingTheSelectorOrOtherConditionsAreNotCaseSplits) {
  ir::Buffer x = ir::MakeBuffer("x", ir::DataType::kFloat32, {4, 8});
  ir::Buffer y = ir::MakeBuffer("y", ir::DataType::kFloat32, {4, 8});
  auto kernel_with = [&](const std::function<ir::Expr(const ir::Var&, const ir::Var&)>& value) {
    ir::Var i = ir::MakeVar("i"), j = ir::MakeVar("j");
    ir::Var vi = ir::MakeVar("vi"), vj = ir::MakeVar("vj");
    ir::Stmt block = tandem::testing::MakeBlock(
        "b", {{vi, 4, ir::IterKind::kSpatial, i}, {vj, 8, ir::IterKind::kSpatial, j}},
        ir::MakeStore(y, {vi, vj}, value(vi, vj)));
    return tandem::testing::Kernel(
        "k", {x, y},
        tandem::testing::Root(tandem::testing::Loop(i, 4, tandem::testing::Loop(j, 8, block))));
  };
  ir::KernelFunction selecting = kernel_with([&](const ir::Var& vi, const ir::Var& vj) {
    return ir::Select(vi == ir::Expr(0), ir::Load(x, {vi, vj}) * ir::FloatImm(2.0),
                      ir::Load(x, {ir::Expr(1), vj}));
  });
  EXPECT_TRUE(CaseSplitAxes(BlockNamed(selecting, "b")).empty()) << "the arm reads vi";
  ir::KernelFunction ranged = kernel_with([&](const ir::Var& vi, const ir::Var& vj) {
    return ir::Select(vi < ir::Expr(2), ir::Load(x, {ir::Expr(0), vj}),
                      ir::Load(x, {ir::Expr(1), vj}));
  });
  EXPECT_TRUE(CaseSplitAxes(BlockNamed(ranged, "b")).empty()) << "a range condition";
  ir::KernelFunction cases = kernel_with([&](const ir::Var& vi, const ir::Var& vj) {
    return ir::Select(vi == ir::Expr(0), ir::Load(x, {ir::Expr(0), vj}),
                      ir::Load(x, {ir::Expr(3), vj}) * ir::FloatImm(-1.0));
  });
  EXPECT_EQ(CaseSplitAxes(BlockNamed(cases, "b")), (std::vector<int>{0}));
}

// The selecting loops sit unrolled between the parallel outer loop and the vector loop, and the
// producer that the transform reads a whole tile of per element stays a separate stage.
TEST(CaseSplit, DefaultScheduleUnrollsTheSelectingLoopsOutsideTheVectorLoop) {
  Schedule s = ApplyDefaultSchedule(
      InputTransform(4),
      DefaultScheduleOptions{.vector_lanes = 8, .parallel_min_work = 64, .num_threads = 2});
  std::string text = ir::PrintKernel(s.function());
  EXPECT_NE(text.find("in 36 unrolled {\n        for %c"), std::string::npos) << text;
  EXPECT_NE(text.find("in 8 vectorized {\n          block winograd_input_transform("),
            std::string::npos)
      << text;
  EXPECT_TRUE(FindBlock(s.function(), "pad").has_value()) << "pad was inlined:\n" << text;

  Schedule out = ApplyDefaultSchedule(
      OutputTransform(),
      DefaultScheduleOptions{.vector_lanes = 8, .parallel_min_work = 64, .num_threads = 2});
  std::string out_text = ir::PrintKernel(out.function());
  EXPECT_NE(out_text.find("in 4 unrolled {\n        for %j in 4 unrolled {\n          for %k"),
            std::string::npos)
      << out_text;
}

// Every unrolled copy folds its conditions: no branch between arms is left in the code, and
// the results are the reference interpreter's.
TEST(CaseSplit, CompiledCopiesComputeOnlyTheirArm) {
  for (const ir::KernelFunction& kernel :
       {InputTransform(2), InputTransform(4), OutputTransform()}) {
    Schedule s = ApplyDefaultSchedule(
        kernel,
        DefaultScheduleOptions{.vector_lanes = 8, .parallel_min_work = 64, .num_threads = 2});
    std::string transform = MostSubtractingFunction(backends::EmitLlvmIr({s.function()}));
    ASSERT_NE(transform.find("fsub"), std::string::npos) << kernel.name;
    // An arm chosen at run time would be a branch (select.true/select.false blocks).
    EXPECT_EQ(transform.find("select.true"), std::string::npos) << kernel.name << transform;
    tandem::testing::ExpectMatchesReference(s.function());
  }
}

}  // namespace
}  // namespace tandem::kernels
