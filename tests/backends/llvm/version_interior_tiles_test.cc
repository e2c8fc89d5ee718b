// VersionInteriorTiles (backends/llvm/version_interior_tiles.cc): the body of a parallel loop
// whose loads are guarded by an inlined pad's bounds checks gets a copy without the checks,
// run where a condition on the tile's position proves them; the kernel computes the same as
// before, on interior and border tiles alike.
#include <gtest/gtest.h>

#include <string>

#include "backends/llvm/codegen.h"
#include "ir/kernel/kernel_printer.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "kernels/schedule/schedule.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem {
namespace {

using ir::DataType;
using ir::Expr;
using ir::IterKind;
using ir::KernelFunction;
using ir::Var;
using testing::Count;
using testing::ExpectMatchesReference;
using testing::F32;

// A channels-last depthwise convolution with its pad inlined, under the AVX2 default schedule.
KernelFunction ScheduledDepthwise(int64_t size, int64_t kernel_size, int64_t stride,
                                  int64_t channels, int num_threads = 2) {
  int64_t pad = kernel_size / 2;
  int64_t out = (size + 2 * pad - kernel_size) / stride + 1;
  KernelFunction kernel = kernels::LowerOpCall(
      "depthwise", "conv2d",
      ir::Attrs{{"data_layout", std::string("NHWC")},
                {"kernel_layout", std::string("HWIO")},
                {"padding", std::vector<int64_t>{pad, pad, pad, pad}},
                {"strides", std::vector<int64_t>{stride, stride}},
                {"groups", channels}},
      {F32({1, size, size, channels}), F32({kernel_size, kernel_size, 1, channels})},
      F32({1, out, out, channels}));
  return kernels::ApplyDefaultSchedule(kernel,
                                       kernels::DefaultScheduleOptions{.vector_lanes = 8,
                                                                       .vector_registers = 16,
                                                                       .parallel_min_work = 64,
                                                                       .num_threads = num_threads})
      .function();
}

TEST(VersionInteriorTiles, DepthwisePadChecksAreDroppedInInteriorTiles) {
  KernelFunction scheduled = ScheduledDepthwise(24, 3, 1, 16);
  std::string before = ir::PrintKernel(scheduled);
  ASSERT_GT(Count(before, "select("), 0u) << before;  // the pad is inlined
  ASSERT_NE(before.find(" parallel {"), std::string::npos) << before;

  KernelFunction versioned = backends::VersionInteriorTiles(scheduled);
  std::string after = ir::PrintKernel(versioned);
  // Four versions of the tile. Both column tiles (12 pixels each) touch an edge of the 24-wide
  // map, so no tile is interior and that version is left out. Each column tile gets one version
  // with its column checks pinned where the rows hold, and one (the corners) that keeps the row
  // checks; the last of these needs no guard. Every version keeps a select: its column checks.
  EXPECT_EQ(Count(after, " if "), Count(before, " if ") + 3) << after;
  EXPECT_EQ(Count(after, "select("), 4 * Count(before, "select(")) << after;
  EXPECT_EQ(Count(after, "block conv2d("), 4 * Count(before, "block conv2d(")) << after;
  // The interpreter runs the versioned kernel as it ran the original; the compiled kernel
  // (CompileKernels versions it) matches the interpreter.
  ExpectMatchesReference(scheduled);
  ExpectMatchesReference(versioned);
}

// Scheduled for one thread, the kernel has no parallel loop: the tile is the body of its
// outermost loop.
TEST(VersionInteriorTiles, OneThreadKernelsVersionTheirOutermostLoop) {
  KernelFunction scheduled = ScheduledDepthwise(24, 3, 1, 16, /*num_threads=*/1);
  std::string before = ir::PrintKernel(scheduled);
  ASSERT_EQ(before.find(" parallel {"), std::string::npos) << before;
  ASSERT_GT(Count(before, "select("), 0u) << before;
  KernelFunction versioned = backends::VersionInteriorTiles(scheduled);
  std::string after = ir::PrintKernel(versioned);
  EXPECT_GE(Count(after, " if "), Count(before, " if ") + 1) << after;
  EXPECT_EQ(Count(after, "block conv2d("),
            (Count(after, " if ") - Count(before, " if ") + 1) * Count(before, "block conv2d("))
      << after;
  ExpectMatchesReference(scheduled);
  ExpectMatchesReference(versioned);
}

TEST(VersionInteriorTiles, StridedAndWideKernelsMatchTheReference) {
  for (auto [size, kernel_size, stride] : {std::tuple<int64_t, int64_t, int64_t>{17, 5, 2},
                                           {14, 5, 1},
                                           {7, 3, 2},
                                           {3, 3, 1},
                                           {40, 3, 1},
                                           {28, 5, 1}}) {
    SCOPED_TRACE(::testing::Message()
                 << size << "x" << size << " k" << kernel_size << " s" << stride);
    KernelFunction scheduled = ScheduledDepthwise(size, kernel_size, stride, 24);
    ExpectMatchesReference(scheduled);
    ExpectMatchesReference(backends::VersionInteriorTiles(scheduled));
  }
}

// ScheduledDepthwise with one conv2d block, versioned.
KernelFunction VersionedDepthwise(int64_t size, int64_t kernel_size, int64_t stride,
                                  int64_t channels) {
  KernelFunction scheduled = ScheduledDepthwise(size, kernel_size, stride, channels);
  std::string before = ir::PrintKernel(scheduled);
  EXPECT_EQ(Count(before, "block conv2d("), 1u) << before;
  return backends::VersionInteriorTiles(scheduled);
}

// A 7x7 map that one column tile spans: the column checks depend on the tile's loops alone, so
// no tile position decides them; they stay in every version (each unrolled copy makes them a
// constant) while the rows still get an interior version and two edge versions.
TEST(VersionInteriorTiles, ChecksNoTilePositionDecidesStayInEveryVersion) {
  KernelFunction versioned = VersionedDepthwise(7, 3, 1, 64);
  std::string after = ir::PrintKernel(versioned);
  EXPECT_EQ(Count(after, "block conv2d("), 4u) << after;
  EXPECT_EQ(Count(after, "select("), 4u) << after;
  // The interior version checks the columns only.
  EXPECT_NE(after.find("select(%w_1 + %kw - 1 >= 0 && 7 - %w_1 - %kw >= 0,"), std::string::npos)
      << after;
  ExpectMatchesReference(versioned);
}

// A 5x5 window on a 28x28 map with 7-pixel column tiles: the first and last column tiles and
// the first and last two rows are edges. After the interior and the two column-edge versions
// (rows holding), the corners get the column tiles pinned with their row checks kept, and the
// last version, where every column check holds, keeps only the row checks: no tile runs the
// fully checked body.
TEST(VersionInteriorTiles, CornersKeepTheOtherChecks) {
  KernelFunction versioned = VersionedDepthwise(28, 5, 1, 24);
  std::string after = ir::PrintKernel(versioned);
  EXPECT_EQ(Count(after, "block conv2d("), 6u) << after;
  EXPECT_EQ(Count(after, " == 0 {"), 1u) << after;
  EXPECT_EQ(Count(after, " == 3 {"), 1u) << after;
  // The last version checks rows only.
  std::string last = after.substr(after.rfind("} else {"));
  size_t select = last.find("select(");
  ASSERT_NE(select, std::string::npos) << last;
  std::string condition = last.substr(select, last.find(", %data", select) - select);
  EXPECT_NE(condition.find("%kh"), std::string::npos) << condition;
  EXPECT_EQ(condition.find("%kw"), std::string::npos) << condition;
  ExpectMatchesReference(versioned);
}

// A check that depends on a tile loop other than linearly (here floormod(i, 2)) cannot be
// decided per tile: the body stays as it is.
TEST(VersionInteriorTiles, NonlinearChecksAreLeftAlone) {
  ir::Buffer x = ir::MakeBuffer("x", DataType::kFloat32, {64});
  ir::Buffer y = ir::MakeBuffer("y", DataType::kFloat32, {64});
  Var io = ir::MakeVar("io"), ii = ir::MakeVar("ii"), vi = ir::MakeVar("vi");
  Expr i = io * 8 + ii;
  Expr value = ir::Select(ir::FloorMod(vi, 2) == 0, ir::Load(x, {vi}), ir::FloatImm(0.0));
  ir::Stmt copy =
      testing::MakeBlock("copy", {{vi, 64, IterKind::kSpatial, i}}, ir::MakeStore(y, {vi}, value));
  KernelFunction kernel = testing::Kernel(
      "alternate", {x, y},
      testing::Root(ir::MakeFor(io, 8, ir::ForKind::kParallel, testing::Loop(ii, 8, copy))));
  KernelFunction versioned = backends::VersionInteriorTiles(kernel);
  EXPECT_EQ(ir::PrintKernel(versioned), ir::PrintKernel(kernel));
  ExpectMatchesReference(kernel);
}

// A check linear in the tile's loops whose condition on the tile's position is exact: tiles of
// 8 over a 60-element buffer read through a shifted window `x[i + 3]` guarded by `i + 3 < 64`.
// Only the last tile fails it: it gets an edge version with the tile index pinned to 7.
TEST(VersionInteriorTiles, ShiftedWindowIsExactOnEveryTile) {
  ir::Buffer x = ir::MakeBuffer("x", DataType::kFloat32, {64});
  ir::Buffer y = ir::MakeBuffer("y", DataType::kFloat32, {64});
  Var io = ir::MakeVar("io"), ii = ir::MakeVar("ii"), vi = ir::MakeVar("vi");
  Expr i = io * 8 + ii;
  Expr value = ir::Select(vi + 3 < 64, ir::Load(x, {vi + 3}), ir::FloatImm(-1.0));
  ir::Stmt copy =
      testing::MakeBlock("copy", {{vi, 64, IterKind::kSpatial, i}}, ir::MakeStore(y, {vi}, value));
  KernelFunction kernel = testing::Kernel(
      "shifted", {x, y},
      testing::Root(ir::MakeFor(io, 8, ir::ForKind::kParallel, testing::Loop(ii, 8, copy))));
  KernelFunction versioned = backends::VersionInteriorTiles(kernel);
  std::string text = ir::PrintKernel(versioned);
  EXPECT_EQ(Count(text, " if "), 2u) << text;
  EXPECT_NE(text.find("if %io == 7"), std::string::npos) << text;
  ExpectMatchesReference(kernel);
  ExpectMatchesReference(versioned);
}

}  // namespace
}  // namespace tandem
