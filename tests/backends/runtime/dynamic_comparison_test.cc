// CompareAtSizes (backends/runtime/dynamic_comparison.h): extents found from a graph made at
// several sizes, affine or windows of an operand's extent, and the sizes it asks for when the
// ones compared do not decide between two windows.
#include "backends/runtime/dynamic_comparison.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/graph.h"

namespace tandem::backends {
namespace {

// x [1, 2, n] -> `layers` conv1d with 3 taps, `stride` and padding 1 (the last named
// "conv") -> relu, at the size n.
ir::GraphFunction Strided(int64_t n, int64_t stride, int layers) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 2, n}, ir::DataType::kFloat32, ""});
  ir::ValueId w =
      b.Constant(ir::Tensor::Random(ir::TensorType{{2, 2, 3}, ir::DataType::kFloat32, ""}, 1));
  for (int layer = 0; layer < layers; ++layer) {
    x = b.Call("conv1d", {x, w},
               ir::Attrs{{"strides", std::vector<int64_t>{stride}},
                         {"padding", std::vector<int64_t>{1, 1}}},
               layer + 1 == layers ? "conv" : "");
  }
  return b.Finish(b.Call("relu", {x}, {}, "relu"));
}

std::map<std::string, kernels::TensorExtents> Compare(const std::vector<int64_t>& sizes,
                                                      int64_t stride, int layers = 1,
                                                      int64_t minimum = 1, int64_t bound = 32) {
  std::vector<ir::GraphFunction> graphs;
  for (int64_t n : sizes) graphs.push_back(Strided(n, stride, layers));
  std::vector<const ir::GraphFunction*> functions;
  std::vector<std::vector<int64_t>> at;
  for (size_t k = 0; k < sizes.size(); ++k) {
    functions.push_back(&graphs[k]);
    at.push_back({sizes[k]});
  }
  return CompareAtSizes({{.symbol = "n", .minimum = minimum, .bound = bound}}, at, functions);
}

// Compare, with one more size each time the sizes compared do not decide, as BuildDynamic does.
std::map<std::string, kernels::TensorExtents> Decide(std::vector<int64_t> sizes, int64_t stride) {
  for (;;) {
    try {
      return Compare(sizes, stride);
    } catch (const UndecidedLength& undecided) {
      sizes.push_back(undecided.sizes.at(0));
    }
  }
}

std::string Text(const kernels::TensorExtents& extents) {
  return kernels::ExtentsToString(extents, {1, 2, 0}, "n");
}

TEST(DynamicComparison, AffineExtentsComeFromTheSlopeAtTheBound) {
  auto values = Compare({32, 31, 2}, 1);
  EXPECT_EQ(Text(values.at("x")), "[1, 2, n]");
  EXPECT_EQ(Text(values.at("conv")), "[1, 2, n]");
  EXPECT_EQ(Text(values.at("relu")), "[1, 2, n]");
}

TEST(DynamicComparison, AStridedWindowIsTheFloorOfItsOperandsLength) {
  // floor((n + 2 - 3) / 2) + 1 = floor((n + 1) / 2); the elementwise op after it keeps it.
  auto values = Decide({32, 31, 2}, 2);
  EXPECT_EQ(Text(values.at("conv")), "[1, 2, floor((n+1)/2)]");
  EXPECT_EQ(Text(values.at("relu")), "[1, 2, floor((n+1)/2)]");
  // A stride of 3: floor((n + 2) / 3).
  EXPECT_EQ(Text(Decide({32, 31, 2}, 3).at("conv")), "[1, 2, floor((n+2)/3)]");
}

TEST(DynamicComparison, WindowsTheSizesDoNotDecideAskForOneMoreSize) {
  // Two stride 2 windows, floor((n + 3) / 4) for n in [9, 24]: at 24, 23 and 9 it is also
  // floor((n + 13) / 6), a window of stride 3 of the first one's floor((n + 1) / 2); one more
  // size where two of them differ is asked for, never one compared already.
  std::vector<int64_t> sizes = {24, 23, 9};
  for (int round = 0; round < 8; ++round) {
    try {
      auto values = Compare(sizes, 2, 2, 9, 24);
      EXPECT_EQ(Text(values.at("conv")), "[1, 2, floor((n+3)/4)]");
      EXPECT_GT(sizes.size(), 3u);
      return;
    } catch (const UndecidedLength& undecided) {
      ASSERT_EQ(undecided.sizes.size(), 1u);
      EXPECT_EQ(std::count(sizes.begin(), sizes.end(), undecided.sizes[0]), 0);
      sizes.push_back(undecided.sizes[0]);
    }
  }
  ADD_FAILURE() << "still undecided after 8 more sizes";
}

TEST(DynamicComparison, ALengthNeitherAffineNorAWindowIsAnError) {
  // The relu's operand made longer at odd sizes: no window of the input fits.
  std::vector<ir::GraphFunction> graphs;
  std::vector<std::vector<int64_t>> at;
  for (int64_t n : {32, 31, 2}) {
    ir::GraphBuilder b("main");
    ir::ValueId x = b.Input("x", ir::TensorType{{n}, ir::DataType::kFloat32, ""});
    ir::ValueId y = b.Input("y", ir::TensorType{{n * n}, ir::DataType::kFloat32, ""});
    graphs.push_back(b.Finish(b.Tuple({x, y})));
    at.push_back({n});
  }
  std::vector<const ir::GraphFunction*> functions = {&graphs[0], &graphs[1], &graphs[2]};
  try {
    CompareAtSizes({{.symbol = "n", .minimum = 1, .bound = 32}}, at, functions);
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("axis 0 of %y is neither an affine function of n"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tandem::backends
