// The default schedules of a dynamic build's kernels (DefaultScheduleOptions::dynamic_iterators):
// a vector tile along an axis whose extent is only a range's bound is at most one cache line of
// f32 or one native vector wide (default_schedule::DynamicAxisLanes: one vector of 16 lanes on
// AVX-512, two of 8 on AVX2), in the register tile of a matmul, the partials of a row reduction
// and an elementwise row, and the schedules keep the kernels' results.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/kernel/functor.h"
#include "kernels/default_schedule.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/schedule/tree_util.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::F32;
using testing::LowerOp;

// The widest vectorized loop of `s`'s kernel.
int64_t WidestVector(const Schedule& s) {
  int64_t widest = 0;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    const auto* loop = ir::As<ir::ForNode>(st);
    if (loop && loop->for_kind == ir::ForKind::kVectorized) widest = std::max(widest, loop->extent);
  });
  return widest;
}

// The indices of `block`'s iterators of `kind` in `kernel`.
std::vector<size_t> IteratorsOf(const ir::KernelFunction& kernel, const std::string& block,
                                ir::IterKind kind) {
  const auto* realize = ir::As<ir::BlockRealizeNode>(GetBlockPath(kernel, block).target);
  std::vector<size_t> found;
  for (size_t k = 0; k < realize->block->iter_vars.size(); ++k) {
    if (realize->block->iter_vars[k].kind == kind) found.push_back(k);
  }
  return found;
}

DefaultScheduleOptions Options() {
  return DefaultScheduleOptions{
      .vector_lanes = 16, .vector_registers = 32, .parallel_min_work = 64, .num_threads = 2};
}

// Attention scores, [2, 128, 32] x [2, 32, 128]: planned for 128 keys, the register tile is
// 64 lanes wide; with the keys a dynamic axis, one vector (16 lanes).
TEST(DynamicVectorTiles, AMatmulAlongADynamicAxisTakesOneVectorPerTile) {
  ir::KernelFunction kernel = LowerOp("matmul", {F32({2, 128, 32}), F32({2, 32, 128})});
  const auto* realize = ir::As<ir::BlockRealizeNode>(GetBlockPath(kernel, "matmul").target);
  std::optional<default_schedule::RegisterTile> bound =
      default_schedule::PlanRegisterTile(realize->block, 16, 32, 2);
  ASSERT_TRUE(bound.has_value());
  EXPECT_EQ(bound->vector_axis, 2);
  EXPECT_GT(bound->vector_tile, 16);
  std::optional<default_schedule::RegisterTile> dynamic =
      default_schedule::PlanRegisterTile(realize->block, 16, 32, 2, {}, {1, 2});
  ASSERT_TRUE(dynamic.has_value());
  EXPECT_EQ(dynamic->vector_axis, 2);
  EXPECT_EQ(dynamic->vector_tile, 16);
  // Only the vector axis matters: the rows dynamic alone keep the bound's tile.
  EXPECT_EQ(default_schedule::PlanRegisterTile(realize->block, 16, 32, 2, {}, {1})->vector_tile,
            bound->vector_tile);

  DefaultScheduleOptions options = Options();
  options.dynamic_iterators["matmul"] = {1, 2};
  Schedule s = ApplyDefaultSchedule(kernel, options);
  EXPECT_EQ(WidestVector(s), 16) << s.trace().ToText();
  EXPECT_LT(testing::CompareKernels(kernel, s.function()), 1e-5);
}

// A softmax over rows of 128: partials two vectors wide at the bound, one vector where the
// reduced axis is dynamic.
TEST(DynamicVectorTiles, ARowReductionAlongADynamicAxisKeepsOneVectorOfPartials) {
  ir::KernelFunction kernel = LowerOp("softmax", {F32({2, 128, 128})}, ir::Attrs{{"axis", 2}});
  EXPECT_EQ(WidestVector(ApplyDefaultSchedule(kernel, Options())), 32);
  DefaultScheduleOptions options = Options();
  for (const std::string& block : {std::string("softmax_max"), std::string("softmax_exp_sum")}) {
    options.dynamic_iterators[block] = IteratorsOf(kernel, block, ir::IterKind::kReduction);
    ASSERT_EQ(options.dynamic_iterators[block].size(), 1u);
  }
  Schedule s = ApplyDefaultSchedule(kernel, options);
  EXPECT_EQ(WidestVector(s), 16) << s.trace().ToText();
  EXPECT_LT(testing::CompareKernels(kernel, s.function()), 1e-5);
}

// An elementwise row of 128: vectorized whole at the bound, by vectors along a dynamic axis.
TEST(DynamicVectorTiles, AnElementwiseRowAlongADynamicAxisIsVectorizedByVectors) {
  ir::KernelFunction kernel = LowerOp("relu", {F32({6, 128})});
  std::string block;
  ir::VisitStmtTree(kernel.body, [&](const ir::Stmt& st) {
    const auto* realize = ir::As<ir::BlockRealizeNode>(st);
    if (realize && block.empty() && realize->block->name != "root") block = realize->block->name;
  });
  ASSERT_FALSE(block.empty());
  EXPECT_EQ(WidestVector(ApplyDefaultSchedule(kernel, Options())), 128);
  DefaultScheduleOptions options = Options();
  options.dynamic_iterators[block] = {1};
  Schedule s = ApplyDefaultSchedule(kernel, options);
  EXPECT_EQ(WidestVector(s), 16) << s.trace().ToText();
  EXPECT_LT(testing::CompareKernels(kernel, s.function()), 1e-6);
  // A dynamic outer axis leaves the row as it was.
  options.dynamic_iterators[block] = {0};
  EXPECT_EQ(WidestVector(ApplyDefaultSchedule(kernel, options)), 128);
}

// With 8-lane vectors (AVX2) the cap is a cache line, two vectors: the same 16 lanes.
TEST(DynamicVectorTiles, OnEightLaneVectorsTheCapIsACacheLine) {
  EXPECT_EQ(default_schedule::DynamicAxisLanes(8), 16);
  EXPECT_EQ(default_schedule::DynamicAxisLanes(16), 16);
  DefaultScheduleOptions options = Options();
  options.vector_lanes = 8;
  options.vector_registers = 16;

  ir::KernelFunction scores = LowerOp("matmul", {F32({2, 128, 32}), F32({2, 32, 128})});
  const auto* realize = ir::As<ir::BlockRealizeNode>(GetBlockPath(scores, "matmul").target);
  std::optional<default_schedule::RegisterTile> dynamic =
      default_schedule::PlanRegisterTile(realize->block, 8, 16, 2, {}, {1, 2});
  ASSERT_TRUE(dynamic.has_value());
  EXPECT_EQ(dynamic->vector_axis, 2);
  EXPECT_EQ(dynamic->vector_tile, 16);
  options.dynamic_iterators["matmul"] = {1, 2};
  Schedule s = ApplyDefaultSchedule(scores, options);
  EXPECT_EQ(WidestVector(s), 16) << s.trace().ToText();
  EXPECT_LT(testing::CompareKernels(scores, s.function()), 1e-5);

  ir::KernelFunction softmax = LowerOp("softmax", {F32({2, 128, 128})}, ir::Attrs{{"axis", 2}});
  options.dynamic_iterators.clear();
  for (const std::string& block : {std::string("softmax_max"), std::string("softmax_exp_sum")}) {
    options.dynamic_iterators[block] = IteratorsOf(softmax, block, ir::IterKind::kReduction);
  }
  s = ApplyDefaultSchedule(softmax, options);
  EXPECT_EQ(WidestVector(s), 16) << s.trace().ToText();
  EXPECT_LT(testing::CompareKernels(softmax, s.function()), 1e-5);
}

}  // namespace
}  // namespace tandem::kernels
