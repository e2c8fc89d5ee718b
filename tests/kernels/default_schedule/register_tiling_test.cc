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

}  // namespace
}  // namespace tandem::kernels
