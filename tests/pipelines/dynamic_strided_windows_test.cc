// Dynamic builds with windows that stride along a dynamic axis (backends/runtime/
// dynamic_executable.h, kernels/dynamic_padding.h): a convolution or pooling with stride s makes
// floor((n + c) / s) positions of n, and a chain of them floor((n + c') / s'); at an odd size
// the last window of a stride 2 convolution padded by 1 passes the valid part, where the op pads.
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "tests/pipelines/dynamic_graphs.h"

namespace tandem {
namespace {

ir::ValueId Conv(ir::GraphBuilder& b, ir::ValueId x, int64_t in, int64_t out, int64_t taps,
                 int64_t stride, int64_t pad, uint64_t seed) {
  ir::ValueId weight = b.Constant(
      ir::Tensor::Random(ir::TensorType{{out, in, taps, 3}, ir::DataType::kFloat32, ""}, seed));
  ir::ValueId bias = b.Constant(
      ir::Tensor::Random(ir::TensorType{{1, out, 1, 1}, ir::DataType::kFloat32, ""}, seed + 1));
  ir::ValueId conv = b.Call("conv2d", {x, weight},
                            ir::Attrs{{"strides", std::vector<int64_t>{stride, 1}},
                                      {"padding", std::vector<int64_t>{pad, 1, pad, 1}}});
  return b.Call("relu", {b.Call("add", {conv, bias})});
}

// A small network over [1, 4, n, 6] (n the height): a 3x3 convolution with stride 2 and padding
// 1 (floor((n + 1) / 2) rows), a 3x3 max pool with stride 2 and padding 1 (floor((n + 3) / 4)),
// a convolution with 3 rows of taps, stride 2 and no padding (floor((n - 1) / 8)), and a global
// average pool over rows and columns. Both the strided feature map and the pooled vector are
// outputs.
ir::IRModule StridedNetwork(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 4, n, 6}, ir::DataType::kFloat32, ""});
  ir::ValueId first = Conv(b, x, 4, 8, 3, 2, 1, 11);
  ir::ValueId pooled = b.Call("max_pool2d", {first},
                              ir::Attrs{{"pool_size", std::vector<int64_t>{3, 3}},
                                        {"strides", std::vector<int64_t>{2, 1}},
                                        {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::ValueId unpadded = Conv(b, pooled, 8, 8, 3, 2, 0, 21);
  ir::ValueId global = b.Call("global_avg_pool2d", {unpadded});
  ir::IRModule module;
  module.Add(b.Finish(b.Tuple({unpadded, global})));
  return module;
}

TEST(DynamicStridedWindows, ChainsOfStridedWindowsMatchTheInterpreterAtEverySize) {
  // The smallest height whose last convolution has a row: 9.
  testing::ExpectEverySizeMatches(StridedNetwork, 9);
}

TEST(DynamicStridedWindows, EveryHeightOfTheRangeMatches) {
  std::unique_ptr<backends::DynamicExecutable> dynamic =
      testing::BuildGraph(StridedNetwork, 9, 24, testing::HeuristicGraphPasses());
  for (int64_t n = 9; n <= 24; ++n) {
    testing::ExpectMatchesAt(*dynamic, StridedNetwork, n, static_cast<uint64_t>(100 + n), 1e-5);
  }
}

TEST(DynamicStridedWindows, SignaturesNameTheFloorOfTheStridedLength) {
  std::unique_ptr<backends::DynamicExecutable> dynamic =
      testing::BuildGraph(StridedNetwork, 9, 40, "");
  std::vector<std::string> outputs = dynamic->OutputSignatures();
  ASSERT_EQ(outputs.size(), 2u);
  // floor((floor((floor((n + 1) / 2) + 1) / 2) - 3) / 2) + 1 = floor((n - 1) / 8).
  EXPECT_EQ(outputs[0], "f32[1, 8, floor((n-1)/8), 6]");
  EXPECT_EQ(outputs[1], "f32[1, 8, 1, 1]");
}

// The sampled schedules of a tuning database: the added bound of the strided padding goes into
// whatever stage the schedule put the select in.
TEST(DynamicStridedWindows, KernelsWithSampledSchedulesMatchTheInterpreter) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    testing::SampledKernels counts;
    backends::BuildOptions options = testing::SampledScheduleOptions(seed, counts);
    std::unique_ptr<backends::DynamicExecutable> dynamic =
        testing::BuildGraph(StridedNetwork, 9, 24, "", options);
    EXPECT_GT(counts.sampled, 0);
    for (int64_t n : {9, 10, 15, 24}) {
      testing::ExpectMatchesAt(*dynamic, StridedNetwork, n, seed * 31 + static_cast<uint64_t>(n),
                               1e-5);
    }
  }
}

}  // namespace
}  // namespace tandem
