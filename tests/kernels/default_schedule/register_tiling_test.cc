// The register-tile planner against what it knows of the core (CpuCoreModel): FMAs of the widest
// vector per cycle and the L1 data cache's ways.
#include "kernels/default_schedule/register_tiling.h"

#include <gtest/gtest.h>

#include "ir/kernel/functor.h"
#include "kernels/schedule/tree_util.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

// The rows (broadcast-axis tile) of the register tile planned for an [m, k] x [k, 32] matmul on
// AVX-512 (16 lanes, 32 registers) and two threads.
int64_t GemmTileRows(int64_t m, int64_t k, const CpuCoreModel& core) {
  ir::KernelFunction kernel =
      testing::LowerOp("matmul", {testing::F32({m, k}), testing::F32({k, 32})}, ir::Attrs{});
  const auto* realize = ir::As<ir::BlockRealizeNode>(GetBlockPath(kernel, "matmul").target);
  std::optional<default_schedule::RegisterTile> plan =
      default_schedule::PlanRegisterTile(realize->block, 16, 32, 2, core);
  EXPECT_TRUE(plan.has_value());
  if (!plan) return 0;
  EXPECT_EQ(plan->vector_tile, 32);
  EXPECT_EQ(plan->broadcast_axis, 0);
  return plan->broadcast_tile;
}

TEST(RegisterTiling, GemmRowsArePaddedOnlyWhereTheCoreStartsTwoWideFmasPerCycle) {
  // 128 rows: 12 rows (24 accumulators, padded to 132 rows) where two FMAs start per cycle and
  // nothing is said; the exact 8 rows where one does.
  EXPECT_EQ(GemmTileRows(128, 768, CpuCoreModel{}), 12);
  EXPECT_EQ(GemmTileRows(128, 768, CpuCoreModel{.fma_per_cycle = 2}), 12);
  EXPECT_EQ(GemmTileRows(128, 768, CpuCoreModel{.fma_per_cycle = 1}), 8);
  // Rows that 12 divides keep the larger tile either way.
  EXPECT_EQ(GemmTileRows(360, 768, CpuCoreModel{.fma_per_cycle = 1}), 12);
}

TEST(RegisterTiling, RowsOfABroadcastOperandInOneL1SetStayWithinItsWays) {
  CpuCoreModel eight_ways{.fma_per_cycle = 1, .l1_data_ways = 8, .l1_data_bytes = 32 << 10};
  CpuCoreModel twelve_ways{.fma_per_cycle = 1, .l1_data_ways = 12, .l1_data_bytes = 48 << 10};
  // Rows 12 KB apart (k = 3072) all fall into one set of a 4 KB way.
  int64_t rows = GemmTileRows(360, 3072, eight_ways);
  EXPECT_LE(rows, 8);
  EXPECT_GE(rows, 6);
  EXPECT_EQ(GemmTileRows(360, 3072, twelve_ways), 12);
  // Rows 3 KB apart (k = 768) spread over four sets: three rows per set.
  EXPECT_EQ(GemmTileRows(360, 768, eight_ways), 12);
}

// Pixels (input rows the broadcasts come from) of the register tile planned for a channels-last
// 1x1 convolution of `channels` input channels at 14x14 to 32 output channels.
int64_t ConvolutionTilePixels(int64_t channels, const CpuCoreModel& core) {
  ir::KernelFunction kernel = testing::LowerOp(
      "conv2d", {testing::F32({1, 14, 14, channels}), testing::F32({1, 1, channels, 32})},
      ir::Attrs{{"data_layout", std::string("NHWC")}, {"kernel_layout", std::string("HWIO")}});
  const auto* realize = ir::As<ir::BlockRealizeNode>(GetBlockPath(kernel, "conv2d").target);
  std::optional<default_schedule::RegisterTile> plan =
      default_schedule::PlanRegisterTile(realize->block, 16, 32, 2, core);
  EXPECT_TRUE(plan.has_value());
  if (!plan) return 0;
  EXPECT_EQ(plan->vector_axis, 3);  // n, h, w, o
  int64_t pixels = 1;
  if (plan->broadcast_axis == 1 || plan->broadcast_axis == 2) pixels *= plan->broadcast_tile;
  if (plan->second_axis == 1 || plan->second_axis == 2) pixels *= plan->second_tile;
  return pixels;
}

TEST(RegisterTiling, PixelsAlongBothAxesOfAConvolutionTileCountTowardTheL1Ways) {
  CpuCoreModel eight_ways{.l1_data_ways = 8, .l1_data_bytes = 32 << 10};
  // Pixels of 1024 channels lie 4 KB apart: every pixel of a tile, along h or w, in one set.
  EXPECT_GT(ConvolutionTilePixels(1024, CpuCoreModel{}), 8);
  EXPECT_LE(ConvolutionTilePixels(1024, eight_ways), 8);
  // Pixels of 64 channels (256 bytes apart) spread over the sets.
  EXPECT_EQ(ConvolutionTilePixels(64, eight_ways), ConvolutionTilePixels(64, CpuCoreModel{}));
}

}  // namespace
}  // namespace tandem::kernels
