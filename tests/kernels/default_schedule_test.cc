// Default schedules keep every kernel's result, and Legalize keeps every graph's result.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "backends/llvm/codegen.h"
#include "backends/reference/interpreter.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "kernels/default_schedule.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/legalize.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::CompareKernels;
using testing::F32;
using testing::LowerOp;

struct Case {
  std::string op;
  std::vector<ir::TensorType> inputs;
  ir::Attrs attrs;
};

std::vector<Case> Cases() {
  std::vector<int64_t> pad1{1, 1, 1, 1};
  return {
      {"matmul", {F32({32, 24}), F32({24, 48})}, {}},
      {"dense", {F32({4, 40}), F32({32, 40})}, {}},
      {"batch_matmul", {F32({2, 8, 12}), F32({2, 12, 16})}, {}},
      {"conv2d", {F32({1, 8, 10, 10}), F32({16, 8, 3, 3})}, ir::Attrs{{"padding", pad1}}},
      {"conv2d",
       {F32({1, 8, 9, 9}), F32({8, 1, 3, 3})},
       ir::Attrs{
           {"padding", pad1}, {"groups", int64_t{8}}, {"strides", std::vector<int64_t>{2, 2}}}},
      {"conv1d", {F32({1, 4, 20}), F32({8, 4, 3})}, {}},
      {"max_pool2d",
       {F32({1, 4, 9, 9})},
       ir::Attrs{{"pool_size", std::vector<int64_t>{3, 3}},
                 {"strides", std::vector<int64_t>{2, 2}},
                 {"padding", pad1}}},
      {"global_avg_pool2d", {F32({1, 16, 7, 7})}, {}},
      {"softmax", {F32({4, 64})}, {}},
      {"layer_norm", {F32({8, 32}), F32({32}), F32({32})}, {}},
      {"add", {F32({2, 16, 8, 8}), F32({16, 1, 1})}, {}},
      {"gelu", {F32({64, 48})}, {}},
      {"transpose", {F32({4, 8, 16})}, ir::Attrs{{"axes", std::vector<int64_t>{0, 2, 1}}}},
      {"sum", {F32({8, 16, 4})}, ir::Attrs{{"axes", std::vector<int64_t>{1}}}},
      {"layout_transform",
       {F32({1, 3, 16, 16})},
       ir::Attrs{{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NHWC")}}},
  };
}

TEST(DefaultSchedule, KeepsResultsOfEveryCase) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.op);
    ir::KernelFunction kernel = LowerOp(c.op, c.inputs, c.attrs);
    Schedule s = ApplyDefaultSchedule(kernel, DefaultScheduleOptions{.parallel_min_work = 64});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    // The schedule replays from its trace.
    Schedule replayed = Schedule::Replay(kernel, s.trace());
    EXPECT_EQ(replayed.trace(), s.trace());
  }
}

TEST(DefaultSchedule, VectorizesAndParallelizesMatmul) {
  ir::KernelFunction kernel = testing::Matmul(64, 64, 64);
  Schedule s = ApplyDefaultSchedule(
      kernel, DefaultScheduleOptions{.parallel_min_work = 64, .num_threads = 2});
  std::set<ir::ForKind> kinds;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    if (const auto* loop = ir::As<ir::ForNode>(st)) kinds.insert(loop->for_kind);
  });
  EXPECT_TRUE(kinds.count(ir::ForKind::kVectorized)) << s.trace().ToText();
  EXPECT_TRUE(kinds.count(ir::ForKind::kParallel)) << s.trace().ToText();
}

// The right operand of a matmul is packed into column panels when its rows lie so many cache
// lines apart that a panel (one line per row) overflows the few L2 sets those rows map to; the
// packed kernel keeps the result.
TEST(DefaultSchedule, PacksTheRightOperandWhenItsPanelOverflowsItsCacheSets) {
  auto packs = [](int64_t n, int64_t k) {
    ir::KernelFunction kernel = testing::Matmul(6, n, k);
    Schedule s = ApplyDefaultSchedule(
        kernel, DefaultScheduleOptions{.parallel_min_work = 64, .num_threads = 2});
    bool packed = false;
    ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
      if (const auto* realize = ir::As<ir::BlockRealizeNode>(st)) {
        for (const ir::Buffer& buffer : realize->block->alloc_buffers) {
          packed = packed || buffer->scope == "global";
        }
      }
    });
    if (packed) {
      EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    }
    return packed;
  };
  EXPECT_TRUE(packs(512, 512));    // rows 2 KiB apart: 32 sets hold 256 lines, the panel needs 512
  EXPECT_TRUE(packs(768, 512));    // 3 KiB apart: 64 sets, 512 lines, more than a quarter of them
  EXPECT_TRUE(packs(512, 128));    // 128 lines: more than a quarter of the 256
  EXPECT_FALSE(packs(512, 64));    // a 64-line panel fits in a quarter of the 256
  EXPECT_FALSE(packs(100, 1024));  // rows not a whole number of lines apart spread over all sets
  EXPECT_FALSE(packs(128, 256));   // 512 B apart: 128 sets hold the panel
}

// A classifier's GEMV has a small output (1000 elements, below parallel_min_work) but a long
// reduction: it runs on parallel threads. A short reduction into a small output does not.
TEST(DefaultSchedule, ParallelizesLongReductionsIntoSmallOutputs) {
  auto parallel_loops = [](int64_t k) {
    ir::KernelFunction kernel = testing::Matmul(1, 1000, k);
    Schedule s = ApplyDefaultSchedule(kernel, DefaultScheduleOptions{.num_threads = 2});
    int count = 0;
    ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
      const auto* loop = ir::As<ir::ForNode>(st);
      count += loop && loop->for_kind == ir::ForKind::kParallel;
    });
    return count;
  };
  EXPECT_EQ(parallel_loops(1280), 1);
  EXPECT_EQ(parallel_loops(8), 0);
  // Few multiply-adds over many weight bytes (a squeeze-excite expansion, 48 into 1152
  // channels: 221 KB) are parallel too: streaming the weights is the work.
  ir::KernelFunction expansion = testing::Matmul(1, 1152, 48);
  Schedule s = ApplyDefaultSchedule(expansion, DefaultScheduleOptions{.num_threads = 2});
  int parallel = 0;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    const auto* loop = ir::As<ir::ForNode>(st);
    parallel += loop && loop->for_kind == ir::ForKind::kParallel;
  });
  EXPECT_EQ(parallel, 1) << s.trace().ToText();
  EXPECT_LT(CompareKernels(expansion, s.function()), 1e-5);
}

// The prefetch distance of the fused outer loop of a register-tiled schedule (0 without one)
// and the loop's variable.
std::pair<int64_t, std::string> PrefetchDistance(const Schedule& s) {
  std::pair<int64_t, std::string> found{0, ""};
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    const auto* loop = ir::As<ir::ForNode>(st);
    if (loop && loop->annotations.Has(ir::kPrefetchDistanceKey)) {
      found = {loop->annotations.GetInt(ir::kPrefetchDistanceKey), loop->loop_var->name};
    }
  });
  return found;
}

// A GEMM whose weight panels stream from memory and serve several row tiles each prefetches
// the next panel: its fused outer loop (panels outside, row tiles inside) carries the number
// of row tiles as prefetch distance, the iterations over which the column index stays the
// same. Weights small enough for L1 get none; neither does a depthwise convolution (each
// weight and input vector serves one tile).
TEST(DefaultSchedule, StreamedWeightPanelsArePrefetchedOnePanelAhead) {
  DefaultScheduleOptions options{.vector_lanes = 16, .vector_registers = 32, .num_threads = 2};
  ir::KernelFunction gemm = testing::Matmul(48, 128, 256);  // 128 KB of weights
  Schedule s = ApplyDefaultSchedule(gemm, options);
  auto [distance, loop] = PrefetchDistance(s);
  EXPECT_GT(distance, 1) << s.trace().ToText();
  std::string text = ir::PrintKernel(s.function());
  EXPECT_NE(text.find(fmt::format("floordiv(%{}, {})", loop, distance)), std::string::npos) << text;
  EXPECT_LT(CompareKernels(gemm, s.function()), 1e-5) << s.trace().ToText();

  Schedule small = ApplyDefaultSchedule(testing::Matmul(48, 32, 64), options);  // 8 KB
  EXPECT_EQ(PrefetchDistance(small).first, 0) << small.trace().ToText();

  ir::KernelFunction depthwise =
      LowerOp("conv2d", {testing::F32({1, 56, 56, 64}), testing::F32({3, 3, 1, 64})},
              ir::Attrs{{"data_layout", std::string("NHWC")},
                        {"kernel_layout", std::string("HWIO")},
                        {"groups", int64_t{64}},
                        {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  Schedule conv = ApplyDefaultSchedule(depthwise, DefaultScheduleOptions{.num_threads = 2});
  EXPECT_EQ(PrefetchDistance(conv).first, 0) << conv.trace().ToText();
}

// The prefetched panel and the one in use share the core's L2: a GEMM prefetches only where
// the two take at most half of it. On AVX2 (6x16 register tiles) a 3072-deep panel of 16 lanes
// is 192 KiB: prefetched with a 2 MiB L2, not with a 512 KiB one. An unknown L2 keeps the
// prefetch.
TEST(DefaultSchedule, WeightPanelsArePrefetchedOnlyWhereTwoFitInHalfTheL2) {
  ir::KernelFunction deep = testing::Matmul(48, 128, 3072);
  auto distance = [&](int64_t l2_bytes) {
    DefaultScheduleOptions options{.vector_lanes = 8,
                                   .vector_registers = 16,
                                   .core = CpuCoreModel{.l2_ways = 8, .l2_bytes = l2_bytes},
                                   .num_threads = 2};
    return PrefetchDistance(ApplyDefaultSchedule(deep, options)).first;
  };
  EXPECT_GT(distance(int64_t{2} << 20), 1);
  EXPECT_GT(distance(0), 1);
  EXPECT_EQ(distance(int64_t{512} << 10), 0);
  // A 256-deep panel (16 KiB) is prefetched with the 512 KiB L2.
  ir::KernelFunction shallow = testing::Matmul(48, 128, 256);
  DefaultScheduleOptions options{.vector_lanes = 8,
                                 .vector_registers = 16,
                                 .core = CpuCoreModel{.l2_ways = 8, .l2_bytes = int64_t{512} << 10},
                                 .num_threads = 2};
  Schedule s = ApplyDefaultSchedule(shallow, options);
  EXPECT_GT(PrefetchDistance(s).first, 1) << s.trace().ToText();
  EXPECT_LT(CompareKernels(shallow, s.function()), 1e-5) << s.trace().ToText();
}

// A convolution whose weights stay in L2 (up to half the core's L2, or
// kL2ResidentConvolutionWeightBytes where its size is unknown) visits all its output-channel
// blocks at one position before the next position (the fused outer loop ends with the
// output-channel blocks, and no panel prefetch); larger weights keep the output-channel blocks
// outermost, each panel serving every position. Both compute the convolution.
TEST(DefaultSchedule, ConvolutionsWithWeightsInL2VisitEveryOutputChannelBlockPerPosition) {
  auto pointwise = [](int64_t in_channels) {
    return LowerOp(
        "conv2d", {F32({1, 4, 4, in_channels}), F32({1, 1, in_channels, 256})},
        ir::Attrs{{"data_layout", std::string("NHWC")}, {"kernel_layout", std::string("HWIO")}});
  };
  ir::KernelFunction small = pointwise(64);    // 64 KB of weights
  ir::KernelFunction medium = pointwise(288);  // 288 KB
  ir::KernelFunction large = pointwise(1152);  // 1.1 MB
  CpuCoreModel unknown_l2;
  CpuCoreModel l2_of_2mb{.l2_ways = 16, .l2_bytes = int64_t{2} << 20};
  struct Case {
    const ir::KernelFunction* kernel;
    CpuCoreModel core;
    bool stays;
  };
  for (const Case& c : {Case{&small, unknown_l2, true}, Case{&medium, unknown_l2, false},
                        Case{&medium, l2_of_2mb, true}, Case{&large, l2_of_2mb, false}}) {
    DefaultScheduleOptions options{
        .vector_lanes = 16, .vector_registers = 32, .core = c.core, .num_threads = 2};
    Schedule s = ApplyDefaultSchedule(*c.kernel, options);
    std::string text = ir::PrintKernel(s.function());
    EXPECT_EQ(text.find("w_co_0_fused") != std::string::npos, c.stays) << text;
    EXPECT_EQ(text.find("co_0_n_h_0_w_fused") != std::string::npos, !c.stays) << text;
    EXPECT_EQ(PrefetchDistance(s).first == 0, c.stays) << s.trace().ToText();
    EXPECT_LT(CompareKernels(*c.kernel, s.function()), 1e-5) << s.trace().ToText();
  }
}

// A depthwise convolution reads each input element 9 times: on a large image its pad is a
// stage of its own (the taps then load without a bounds select), on a small one, where the
// border is a large part of the padded buffer, it is inlined into the taps.
TEST(DefaultSchedule, DepthwisePadIsSeparateOnLargeImagesOnly) {
  auto has_pad_stage = [](int64_t size) {
    ir::KernelFunction kernel =
        LowerOp("conv2d", {F32({1, 8, size, size}), F32({8, 1, 3, 3})},
                ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t{8}}});
    Schedule s = ApplyDefaultSchedule(kernel, DefaultScheduleOptions{.num_threads = 2});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    std::vector<std::string> names = s.BlockNames();
    return std::find(names.begin(), names.end(), "pad") != names.end();
  };
  EXPECT_TRUE(has_pad_stage(64));
  EXPECT_FALSE(has_pad_stage(8));
}

// Channels-last, the pad's bounds depend on h and w only, the same for a whole vector of
// channels: it is inlined at every size and kernel (one uniform select per loaded vector), even
// where the taps read each element more often than a producer is otherwise recomputed (5x5).
// A regular channels-last convolution, which broadcasts its input, keeps a large pad separate.
TEST(DefaultSchedule, ChannelsLastDepthwisePadIsInlined) {
  const int64_t channels = 16;
  auto has_pad_stage = [&](int64_t size, int64_t kernel_size, bool depthwise) {
    int64_t pad = kernel_size / 2;
    int64_t groups = depthwise ? channels : 1;
    ir::KernelFunction kernel =
        LowerOp("conv2d",
                {F32({1, size, size, channels}),
                 F32({kernel_size, kernel_size, channels / groups, channels})},
                ir::Attrs{{"data_layout", std::string("NHWC")},
                          {"kernel_layout", std::string("HWIO")},
                          {"padding", std::vector<int64_t>{pad, pad, pad, pad}},
                          {"groups", groups}});
    Schedule s = ApplyDefaultSchedule(kernel, DefaultScheduleOptions{.num_threads = 2});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    std::vector<std::string> names = s.BlockNames();
    return std::find(names.begin(), names.end(), "pad") != names.end();
  };
  EXPECT_FALSE(has_pad_stage(48, 3, true));
  EXPECT_FALSE(has_pad_stage(28, 5, true));
  EXPECT_FALSE(has_pad_stage(8, 3, true));
  EXPECT_TRUE(has_pad_stage(48, 3, false));
}

// A transpose whose innermost output axis is short (NCHW -> NHWC of 3 channels) is not
// vectorized across the fused loops (each vector would be a gather with per-lane index
// arithmetic): its outer loops run in parallel and the channel loop is unrolled.
TEST(DefaultSchedule, ShortInnermostTransposeIsUnrolledNotGathered) {
  ir::KernelFunction kernel =
      LowerOp("layout_transform", {F32({1, 3, 32, 32})},
              ir::Attrs{{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NHWC")}});
  Schedule s = ApplyDefaultSchedule(
      kernel, DefaultScheduleOptions{.parallel_min_work = 64, .num_threads = 2});
  std::multiset<ir::ForKind> kinds;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    if (const auto* loop = ir::As<ir::ForNode>(st)) kinds.insert(loop->for_kind);
  });
  EXPECT_EQ(kinds.count(ir::ForKind::kVectorized), 0u) << s.trace().ToText();
  EXPECT_EQ(kinds.count(ir::ForKind::kParallel), 1u) << s.trace().ToText();
  EXPECT_EQ(kinds.count(ir::ForKind::kUnrolled), 1u) << s.trace().ToText();
  EXPECT_LT(CompareKernels(kernel, s.function()), 1e-6);
}

// A transpose with a long innermost output axis that reads another axis contiguously (NHWC ->
// NCHW of 32 channels) is tiled along both: the read-contiguous axis's tile unrolled just
// outside the vectorized innermost tile, so each tile's gathers reuse the same cache lines.
TEST(DefaultSchedule, LongInnermostTransposeIsTiledAlongBothAxes) {
  ir::KernelFunction kernel =
      LowerOp("layout_transform", {F32({1, 24, 24, 32})},
              ir::Attrs{{"src_layout", std::string("NHWC")}, {"dst_layout", std::string("NCHW")}});
  Schedule s = ApplyDefaultSchedule(
      kernel, DefaultScheduleOptions{.vector_lanes = 8, .parallel_min_work = 64, .num_threads = 2});
  std::vector<std::pair<ir::ForKind, int64_t>> loops;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    if (const auto* loop = ir::As<ir::ForNode>(st))
      loops.emplace_back(loop->for_kind, loop->extent);
  });
  ASSERT_EQ(loops.size(), 3u) << s.trace().ToText();
  EXPECT_EQ(loops[0].first, ir::ForKind::kParallel);
  EXPECT_EQ(loops[1], std::make_pair(ir::ForKind::kUnrolled, int64_t{8}));    // channels
  EXPECT_EQ(loops[2], std::make_pair(ir::ForKind::kVectorized, int64_t{8}));  // width
  EXPECT_LT(CompareKernels(kernel, s.function()), 1e-6);
}

// The loops of `s`'s kernel, outermost first, as (kind, extent).
std::vector<std::pair<ir::ForKind, int64_t>> LoopNest(const Schedule& s) {
  std::vector<std::pair<ir::ForKind, int64_t>> loops;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    if (const auto* loop = ir::As<ir::ForNode>(st))
      loops.emplace_back(loop->for_kind, loop->extent);
  });
  return loops;
}

// An elementwise block over a channels-last tensor with 3 channels (a network's input, or its
// padded copy) is cut into rows: w and c fused and vectorized by a width dividing the row (6 of
// 66), the rows parallel; the whole nest, which no wider vector divides either, fused would put
// a division by the row length into every vector.
// Where a row would take narrower vectors than the whole nest (an NCHW 7x7 map: 7 against 8),
// the nest stays fused.
TEST(DefaultSchedule, ShortInnermostAxesAreVectorizedByRows) {
  DefaultScheduleOptions options{.vector_lanes = 8, .parallel_min_work = 64, .num_threads = 2};
  ir::KernelFunction rows = LowerOp("relu", {F32({1, 41, 22, 3})});
  Schedule s = ApplyDefaultSchedule(rows, options);
  EXPECT_EQ(
      LoopNest(s),
      (std::vector<std::pair<ir::ForKind, int64_t>>{
          {ir::ForKind::kParallel, 41}, {ir::ForKind::kSerial, 11}, {ir::ForKind::kVectorized, 6}}))
      << s.trace().ToText();
  EXPECT_LT(CompareKernels(rows, s.function()), 1e-6);

  ir::KernelFunction maps = LowerOp("relu", {F32({1, 16, 7, 7})});
  Schedule fused = ApplyDefaultSchedule(maps, options);
  EXPECT_EQ(LoopNest(fused), (std::vector<std::pair<ir::ForKind, int64_t>>{
                                 {ir::ForKind::kParallel, 98}, {ir::ForKind::kVectorized, 8}}))
      << fused.trace().ToText();
  EXPECT_LT(CompareKernels(maps, fused.function()), 1e-6);
}

// A padded copy is cut into rows even where a wider vector divides the whole nest: its value
// selects by position, and vectors across rows would compute each lane's condition from the
// lane's own divisions of the fused index (scalar code). A stem convolution's 3-channel input
// padded to 38x38 with 16 lanes: rows of 114 take vectors of 6 (the nest, 4332, would take 12).
TEST(DefaultSchedule, PaddedCopiesAreVectorizedByRows) {
  DefaultScheduleOptions options{.vector_lanes = 16, .parallel_min_work = 64, .num_threads = 2};
  ir::Attrs attrs{{"strides", std::vector<int64_t>{2, 2}},
                  {"padding", std::vector<int64_t>{1, 1, 1, 1}},
                  {"data_layout", std::string("NHWC")},
                  {"kernel_layout", std::string("HWIO")}};
  ir::KernelFunction conv = LowerOp("conv2d", {F32({1, 36, 36, 3}), F32({3, 3, 3, 32})}, attrs);
  Schedule s = ApplyDefaultSchedule(conv, options);
  std::vector<std::pair<ir::ForKind, int64_t>> loops = LoopNest(s);
  ASSERT_GE(loops.size(), 3u);
  EXPECT_EQ(
      std::vector(loops.begin(), loops.begin() + 3),
      (std::vector<std::pair<ir::ForKind, int64_t>>{
          {ir::ForKind::kParallel, 38}, {ir::ForKind::kSerial, 19}, {ir::ForKind::kVectorized, 6}}))
      << s.trace().ToText();
  EXPECT_LT(CompareKernels(conv, s.function()), 1e-5);
}

// A concat along its innermost axis (channels-last branches joined) is vectorized by a width
// that divides every part, 32 here for parts of 64, 32 and 96 channels: each vector then lies in
// one part, and the code generator, which sees that the part's test holds alike in every lane,
// loads only that part instead of each part under a mask.
TEST(DefaultSchedule, InnermostConcatVectorsLieInOnePart) {
  DefaultScheduleOptions options{.vector_lanes = 8, .parallel_min_work = 64, .num_threads = 2};
  ir::KernelFunction concat =
      LowerOp("concat", {F32({1, 5, 6, 64}), F32({1, 5, 6, 32}), F32({1, 5, 6, 96})},
              ir::Attrs{{"axis", int64_t{3}}});
  Schedule s = ApplyDefaultSchedule(concat, options);
  std::vector<std::pair<ir::ForKind, int64_t>> loops = LoopNest(s);
  ASSERT_FALSE(loops.empty());
  EXPECT_EQ(loops.back(), std::make_pair(ir::ForKind::kVectorized, int64_t{32}))
      << s.trace().ToText();
  EXPECT_LT(CompareKernels(concat, s.function()), 1e-7);
  // Compiled: the uniform part tests pick the right part in every vector.
  std::vector<ir::Tensor> args = testing::RandomArgs(concat, 5);
  std::vector<ir::Tensor> expected = backends::RunKernelReference(concat, args, true);
  args.emplace_back(ir::TensorType{{1, 5, 6, 192}, ir::DataType::kFloat32, ""});
  backends::CompileKernels({s.function()})->Run(s.function().name, args);
  EXPECT_EQ(ir::RelativeError(args.back(), expected[0]), 0.0);
}

// The unrolled loops of `s` (name -> extent) inside the loops of its reduction block "conv2d".
std::map<std::string, int64_t> UnrolledTileLoops(const Schedule& s) {
  std::map<std::string, int64_t> tiles;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    const auto* loop = ir::As<ir::ForNode>(st);
    if (loop && loop->for_kind == ir::ForKind::kUnrolled && loop->extent > 1 &&
        loop->loop_var->name.find("init") == std::string::npos &&
        loop->loop_var->name.rfind("ax", 0) != 0) {
      tiles[loop->loop_var->name] = loop->extent;
    }
  });
  return tiles;
}

// On AVX2 (16 registers) a 1x1 convolution of a 14x14 NHWC map into 16 channels has no row
// tile of 4-6 along h or w alone (14 = 2 x 7, and 7 rows x 2 vectors need 14 accumulators): it
// is tiled 2x2 along both, 8 accumulators instead of the 4 of a 2-row tile (MobileNetV2's 14x14
// 1x1 convolutions ran 1.5x faster). A 56x56 map keeps its one-axis 4-row tile.
TEST(DefaultSchedule, ConvolutionRowsTileAlongHeightAndWidthWhenOneAxisCannot) {
  auto schedule = [](int64_t size) {
    ir::KernelFunction kernel = LowerOp(
        "conv2d", {F32({1, size, size, 8}), F32({1, 1, 8, 16})},
        ir::Attrs{{"data_layout", std::string("NHWC")}, {"kernel_layout", std::string("HWIO")}});
    Schedule s = ApplyDefaultSchedule(
        kernel,
        DefaultScheduleOptions{.vector_lanes = 8, .vector_registers = 16, .num_threads = 2});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    return s;
  };
  Schedule small = schedule(14);
  EXPECT_EQ(UnrolledTileLoops(small), (std::map<std::string, int64_t>{{"h_1", 2}, {"w_1", 2}}))
      << small.trace().ToText();
  Schedule large = schedule(56);
  EXPECT_EQ(UnrolledTileLoops(large), (std::map<std::string, int64_t>{{"h_1", 4}}))
      << large.trace().ToText();
}

// A 7x7 map has no row tile but 7 (7 rows of one 8-lane vector: 7 accumulators, and each
// weight vector loaded for 7 outputs): its rows are tiled by 4 padded to 8, 4 rows of two
// vectors (8 accumulators). The padded rows compute but never store; the result is unchanged.
TEST(DefaultSchedule, ConvolutionRowsOfASmallMapArePaddedToAWiderTile) {
  ir::KernelFunction kernel = LowerOp("conv2d", {F32({1, 7, 7, 8}), F32({3, 3, 8, 16})},
                                      ir::Attrs{{"data_layout", std::string("NHWC")},
                                                {"kernel_layout", std::string("HWIO")},
                                                {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  Schedule s = ApplyDefaultSchedule(
      kernel, DefaultScheduleOptions{.vector_lanes = 8, .vector_registers = 16, .num_threads = 2});
  EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
  std::map<std::string, int64_t> tile = UnrolledTileLoops(s);
  int64_t rows = 1;
  for (const auto& [name, extent] : tile) rows *= extent;
  EXPECT_EQ(rows, 4) << s.trace().ToText();
}

// A channels-last grouped convolution reads x[..., co / g * g + ci]: the same input element for
// a whole group of g output channels. Its vectors are one group wide even below the native
// width (8 of AVX-512's 16 lanes for groups of 8, 4 of AVX2's 8 for groups of 4), so that the
// input is a broadcast instead of a gather; the vectors are register-tiled along the pixels,
// and the pad is inlined (one uniform select per broadcast). Compiled, the result is the
// reference's.
TEST(DefaultSchedule, GroupedConvolutionVectorsAreOneGroupWide) {
  auto check = [](int64_t lanes, int64_t group_width, int64_t stride) {
    SCOPED_TRACE(fmt::format("lanes {} group width {} stride {}", lanes, group_width, stride));
    const int64_t channels = 4 * group_width, size = 12;
    ir::KernelFunction kernel =
        LowerOp("conv2d", {F32({1, size, size, channels}), F32({3, 3, group_width, channels})},
                ir::Attrs{{"data_layout", std::string("NHWC")},
                          {"kernel_layout", std::string("HWIO")},
                          {"padding", std::vector<int64_t>{1, 1, 1, 1}},
                          {"strides", std::vector<int64_t>{stride, stride}},
                          {"groups", int64_t{4}}});
    Schedule s =
        ApplyDefaultSchedule(kernel, DefaultScheduleOptions{.vector_lanes = static_cast<int>(lanes),
                                                            .parallel_min_work = 64,
                                                            .num_threads = 2});
    std::vector<std::pair<ir::ForKind, int64_t>> loops = LoopNest(s);
    EXPECT_TRUE(std::count(loops.begin(), loops.end(),
                           std::make_pair(ir::ForKind::kVectorized, group_width)) >= 3)
        << s.trace().ToText();  // init, reduction and write-back
    EXPECT_FALSE(UnrolledTileLoops(s).empty()) << s.trace().ToText();
    std::vector<std::string> names = s.BlockNames();
    EXPECT_EQ(std::find(names.begin(), names.end(), "pad"), names.end()) << s.trace().ToText();
    std::vector<ir::Tensor> args = testing::RandomArgs(kernel, 7);
    std::vector<ir::Tensor> expected = backends::RunKernelReference(kernel, args, true);
    int64_t out = (size - 1) / stride + 1;
    args.emplace_back(ir::TensorType{{1, out, out, channels}, ir::DataType::kFloat32, ""});
    backends::CompileKernels({s.function()})->Run(s.function().name, args);
    EXPECT_LT(ir::RelativeError(args.back(), expected[0]), 1e-6);
  };
  check(16, 8, 1);
  check(16, 8, 2);
  check(8, 4, 1);
  check(16, 16, 2);
}

// A softmax or layer norm over rows of whole vectors runs row by row (rule 2a): one parallel
// loop over steps of a few rows holds every stage, each reduction as per-lane vector partials,
// and the softmax's exponentials are computed once (kept for the sum and the quotient rather
// than inlined into both). Interpreted and compiled, the result is kept.
TEST(DefaultSchedule, RowGroupsRunRowByRow) {
  DefaultScheduleOptions options{.vector_lanes = 8, .parallel_min_work = 64, .num_threads = 2};
  auto check = [&](const std::string& op, const std::vector<ir::TensorType>& inputs,
                   int64_t row_steps, int expected_exps) {
    SCOPED_TRACE(op);
    ir::KernelFunction kernel = LowerOp(op, inputs);
    Schedule s = ApplyDefaultSchedule(kernel, options);
    // The body is one parallel loop over the row steps.
    const auto* root = ir::As<ir::BlockRealizeNode>(s.function().body);
    ASSERT_NE(root, nullptr);
    const auto* loop = ir::As<ir::ForNode>(root->block->body);
    ASSERT_NE(loop, nullptr) << s.trace().ToText();
    EXPECT_EQ(loop->for_kind, ir::ForKind::kParallel);
    EXPECT_EQ(loop->extent, row_steps);
    int exps = 0;
    ir::VisitStmtExprs(s.function().body, [&](const ir::Expr& top) {
      ir::VisitExprTree(top, [&](const ir::Expr& e) {
        exps += e->kind == ir::ExprKind::kCall && e->name == "exp";
      });
    });
    EXPECT_EQ(exps, expected_exps);
    std::vector<std::pair<ir::ForKind, int64_t>> loops = LoopNest(s);
    EXPECT_GE(std::count(loops.begin(), loops.end(),
                         std::make_pair(ir::ForKind::kVectorized, int64_t{16})),
              2)
        << s.trace().ToText();  // the partials of each reduction, two vectors wide
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-6);
    EXPECT_EQ(Schedule::Replay(kernel, s.trace()).trace(), s.trace());
    std::vector<ir::Tensor> args = testing::RandomArgs(kernel, 3);
    std::vector<ir::Tensor> expected = backends::RunKernelReference(kernel, args, true);
    args.emplace_back(inputs[0]);
    backends::CompileKernels({s.function()})->Run(s.function().name, args);
    EXPECT_LT(ir::RelativeError(args.back(), expected[0]), 1e-6);
  };
  // 32 rows of 64 floats: steps of 8 rows.
  check("softmax", {F32({2, 16, 64})}, 4, 1);
  // 16 rows of 96 floats: steps of 8 rows.
  check("layer_norm", {F32({16, 96}), F32({96}), F32({96})}, 2, 0);
  // Rows over two axes (a channels-last 4x6 map): steps of 6 rows, dividing the inner axis, so
  // that each step's rows are one box and the steps can run in parallel (steps of 8 of the 24
  // rows would cover parts of two rows of h, each step computing both whole).
  check("layer_norm", {F32({1, 4, 6, 32}), F32({32}), F32({32})}, 4, 0);
}

TEST(Legalize, KeepsGraphResultsAndSharesKernels) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", F32({1, 4, 6, 6}));
  ir::ValueId w = b.Constant(ir::Tensor::Random(F32({4, 4, 3, 3}), 1), "w");
  ir::Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  ir::ValueId c1 = b.Call("conv2d", {x, w}, pad);
  ir::ValueId r1 = b.Call("relu", {c1});
  ir::ValueId c2 = b.Call("conv2d", {r1, w}, pad);  // the same kernel again
  ir::ValueId r2 = b.Call("relu", {c2});
  ir::ValueId sum = b.Call("add", {r2, x});
  ir::IRModule module;
  module.Add(b.Finish(sum));

  ir::IRModule legal = Legalize(module);
  ir::Verify(legal);
  EXPECT_EQ(legal.kernel_functions().size(), 3u);  // conv2d, relu, add
  for (const ir::Node& n : legal.Get("main").nodes) EXPECT_NE(n.kind, ir::NodeKind::kCall);
  auto inputs = backends::RandomInputs(module.Get("main"), 3);
  auto want = backends::RunReference(module, inputs);
  auto got = backends::RunReference(legal, inputs);
  EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-5);
}

TEST(Legalize, ErrorsNameTheNodeAndPass) {
  // An op without a compute definition cannot happen for registered ops; a kernel call whose
  // callee is missing is caught by the verifier.
  ir::IRModule module;
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", F32({4}));
  ir::KernelFunction fake = LowerOp("relu", {F32({4})});
  ir::ValueId y = b.CallKernel(fake, {x}, "relu");
  module.Add(b.Finish(y));
  EXPECT_THROW(ir::Verify(module), ir::Error);
  module.AddKernel(fake);
  EXPECT_NO_THROW(ir::Verify(module));
}

}  // namespace
}  // namespace tandem::kernels

namespace tandem::kernels {
namespace {

TEST(Legalize, LowersFusionGroupsIntoOneKernel) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", testing::F32({1, 4, 6, 6}));
  ir::ValueId w = b.Constant(ir::Tensor::Random(testing::F32({8, 4, 3, 3}), 1), "w");
  ir::ValueId bias = b.Constant(ir::Tensor::Random(testing::F32({8, 1, 1}), 2), "bias");
  ir::ValueId c =
      b.Call("conv2d", {x, w}, ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::ValueId a = b.Call("add", {c, bias});
  ir::ValueId r = b.Call("relu", {a});
  ir::ValueId s = b.Call("sigmoid", {r});
  for (ir::ValueId v : {c, a, r}) b.Annotate(v, "group", int64_t{0});
  ir::IRModule module;
  module.Add(b.Finish(s));

  ir::IRModule legal = Legalize(module);
  ir::Verify(legal);
  EXPECT_EQ(legal.kernel_functions().size(), 2u);  // the fused group and sigmoid
  EXPECT_TRUE(legal.HasKernel("fused_conv2d_add_relu"));
  auto inputs = backends::RandomInputs(module.Get("main"), 4);
  EXPECT_LT(ir::RelativeError(backends::RunReference(legal, inputs)[0],
                              backends::RunReference(module, inputs)[0]),
            1e-5);

  // A member used outside its group is an error naming it.
  ir::GraphBuilder b2("main");
  ir::ValueId y = b2.Input("y", testing::F32({8}));
  ir::ValueId e = b2.Call("exp", {y});
  ir::ValueId t = b2.Call("tanh", {e});
  ir::ValueId sum = b2.Call("add", {e, t});
  b2.Annotate(e, "group", int64_t{1});
  b2.Annotate(t, "group", int64_t{1});
  ir::IRModule bad;
  bad.Add(b2.Finish(sum));
  EXPECT_THROW(Legalize(bad), ir::Error);
}

}  // namespace
}  // namespace tandem::kernels

namespace tandem::kernels {
namespace {

// A depthwise 3x3 convolution (NHWC) has no broadcast operand: tiles along h and w rate the
// same. At stride 1 neighbouring outputs along w read overlapping windows, so the tile runs
// along w with the taps unrolled (each input vector loaded once for several outputs; MobileNetV2's
// stride-1 depthwise convolutions ran 1.3-3x faster); at stride 2 the windows do not overlap and
// the tile stays along h with the taps rolled, which measured faster there.
TEST(DefaultSchedule, DepthwiseConvolutionTilesAlongWidthWithTapsUnrolledWhereWindowsOverlap) {
  auto schedule = [](int64_t stride) {
    ir::KernelFunction kernel =
        LowerOp("conv2d", {testing::F32({1, 28, 28, 32}), testing::F32({3, 3, 1, 32})},
                ir::Attrs{{"data_layout", std::string("NHWC")},
                          {"kernel_layout", std::string("HWIO")},
                          {"groups", int64_t{32}},
                          {"strides", std::vector<int64_t>{stride, stride}},
                          {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
    Schedule s = ApplyDefaultSchedule(
        kernel,
        DefaultScheduleOptions{.vector_lanes = 8, .vector_registers = 16, .num_threads = 2});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    return s;
  };
  Schedule unit = schedule(1);
  std::map<std::string, int64_t> unit_tiles = UnrolledTileLoops(unit);
  EXPECT_EQ(unit_tiles.count("h_1"), 0u) << unit.trace().ToText();
  EXPECT_GT(unit_tiles["w_1"], 1) << unit.trace().ToText();
  EXPECT_EQ(unit_tiles["kh"], 3) << unit.trace().ToText();
  EXPECT_EQ(unit_tiles["kw"], 3) << unit.trace().ToText();
  // Stride 2 under 3 taps: neighbouring outputs along w still share input columns (read as
  // contiguous channel vectors), so the same structure.
  Schedule strided = schedule(2);
  std::map<std::string, int64_t> strided_tiles = UnrolledTileLoops(strided);
  EXPECT_EQ(strided_tiles.count("h_1"), 0u) << strided.trace().ToText();
  EXPECT_GT(strided_tiles["w_1"], 1) << strided.trace().ToText();
  EXPECT_EQ(strided_tiles["kh"], 3) << strided.trace().ToText();
  EXPECT_EQ(strided_tiles["kw"], 3) << strided.trace().ToText();
  // Stride 3 under 3 taps: the windows no longer overlap; the tile goes along h and the taps
  // stay a loop.
  Schedule disjoint = schedule(3);
  std::map<std::string, int64_t> disjoint_tiles = UnrolledTileLoops(disjoint);
  EXPECT_GT(disjoint_tiles["h_1"], 1) << disjoint.trace().ToText();
  EXPECT_EQ(disjoint_tiles.count("kh"), 0u) << disjoint.trace().ToText();
  EXPECT_EQ(disjoint_tiles.count("kw"), 0u) << disjoint.trace().ToText();
}

// With the taps unrolled over overlapping windows, the tile keeps tile + taps - 1 input vectors
// of a tap row live beside its accumulators: however large the register file, such a tile holds
// at most kMaxUnrolledWindowAccumulators (a 14x14 map with 5x5 taps: 7 outputs along w, not the
// whole row AVX-512's 24 accumulators would allow, which spilled and ran 3x slower). A pooling
// window's taps are capped alike; a reduction too long to unroll (7x7 taps) is not.
TEST(DefaultSchedule, UnrolledWindowTilesStayWithinTheAccumulatorCapOnAnyRegisterFile) {
  auto tile_of = [](int64_t size, int64_t taps, int64_t lanes, int64_t registers) {
    ir::KernelFunction kernel = LowerOp(
        "conv2d", {testing::F32({1, size, size, 64}), testing::F32({taps, taps, 1, 64})},
        ir::Attrs{{"data_layout", std::string("NHWC")},
                  {"kernel_layout", std::string("HWIO")},
                  {"groups", int64_t{64}},
                  {"strides", std::vector<int64_t>{1, 1}},
                  {"padding", std::vector<int64_t>{taps / 2, taps / 2, taps / 2, taps / 2}}});
    Schedule s = ApplyDefaultSchedule(
        kernel, DefaultScheduleOptions{.vector_lanes = static_cast<int>(lanes),
                                       .vector_registers = static_cast<int>(registers),
                                       .num_threads = 2});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    std::map<std::string, int64_t> tiles = UnrolledTileLoops(s);
    return std::make_pair(tiles["w_1"], tiles["kw"]);
  };
  for (int64_t registers : {16, 32}) {
    SCOPED_TRACE(registers);
    int64_t lanes = registers == 32 ? 16 : 8;
    auto [tile, unrolled_taps] = tile_of(14, 5, lanes, registers);
    EXPECT_EQ(unrolled_taps, 5);
    EXPECT_EQ(tile, 7);
    auto [tile_3x3, taps_3x3] = tile_of(28, 3, lanes, registers);
    EXPECT_EQ(taps_3x3, 3);
    EXPECT_GT(tile_3x3, 1);
    EXPECT_LE(tile_3x3, default_schedule::kMaxUnrolledWindowAccumulators);
  }
  // 7x7 taps (49) are not unrolled: the cap does not apply and AVX-512 keeps its wider tile.
  auto [wide, rolled_taps] = tile_of(14, 7, 16, 32);
  EXPECT_EQ(rolled_taps, 0);
  EXPECT_GT(wide, default_schedule::kMaxUnrolledWindowAccumulators);
}

// A dense convolution's only vector operands are its weights (the pixels are broadcasts), so on
// AVX-512 its tile may hold 28 accumulators (14 pixels of two channel vectors) where a GEMM,
// whose operands take more registers, holds at most 24; AVX2 holds 12 for both. Results kept.
TEST(DefaultSchedule, ConvolutionTilesUseMoreOfTheRegisterFileThanGemmTiles) {
  // Accumulator registers of the tile: its unrolled rows times the vectors of its vector loop.
  auto accumulators = [](const ir::KernelFunction& kernel, int64_t lanes, int64_t registers) {
    Schedule s = ApplyDefaultSchedule(
        kernel, DefaultScheduleOptions{.vector_lanes = static_cast<int>(lanes),
                                       .vector_registers = static_cast<int>(registers),
                                       .num_threads = 2});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-4) << s.trace().ToText();
    int64_t product = 1, vector = 0;
    for (const auto& [name, extent] : UnrolledTileLoops(s)) product *= extent;
    ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
      const auto* loop = ir::As<ir::ForNode>(st);
      if (loop && loop->for_kind == ir::ForKind::kVectorized &&
          loop->loop_var->name.find("init") == std::string::npos) {
        vector = std::max(vector, loop->extent);
      }
    });
    return product * ((vector + lanes - 1) / lanes);
  };
  ir::KernelFunction conv =
      LowerOp("conv2d", {testing::F32({1, 28, 2, 8}), testing::F32({1, 1, 8, 32})},
              ir::Attrs{{"data_layout", std::string("NHWC")},
                        {"kernel_layout", std::string("HWIO")},
                        {"strides", std::vector<int64_t>{1, 1}},
                        {"padding", std::vector<int64_t>{0, 0, 0, 0}}});
  ir::KernelFunction gemm =
      LowerOp("matmul", {testing::F32({112, 8}), testing::F32({8, 32})}, ir::Attrs{});
  EXPECT_EQ(accumulators(conv, 16, 32), 28);
  // Weights in panels of exactly the widest vector tile (OHWI64o, as PackConvWeights(block=64)
  // makes them) are contiguous only inside a panel: the tile is planned within one.
  ir::KernelFunction panels =
      LowerOp("conv2d", {testing::F32({1, 7, 7, 16}), testing::F32({2, 3, 3, 16, 64})},
              ir::Attrs{{"data_layout", std::string("NHWC")},
                        {"kernel_layout", std::string("OHWI64o")},
                        {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_GE(accumulators(panels, 16, 32), 14);
  EXPECT_GT(accumulators(gemm, 16, 32), 12);
  EXPECT_LE(accumulators(gemm, 16, 32), 24);
  EXPECT_GT(accumulators(conv, 8, 16), 4);
  EXPECT_LE(accumulators(conv, 8, 16), 12);
  EXPECT_LE(accumulators(gemm, 8, 16), 12);
}

// A squeeze-excite scale: `unary` of a per-channel value, multiplied into every pixel of the
// channel (16 channels of 32x32). With a costly `unary` the per-channel stage stays separate
// (one sigmoid per channel, not one per pixel); a cheap one is recomputed per pixel.
ir::KernelFunction ChannelScale(const std::string& unary, int64_t size) {
  return ir::ParseKernel(fmt::format(R"(
  kernel @scale(%s: f32[16], %x: f32[16,{0},{0}]) -> (%y: f32[16,{0},{0}]) {{
    block root() alloc(%t: f32[16] global) {{
      for %c in 16 {{
        block unary(%vc: spatial 16 = %c) reads(%s[%vc]) writes(%t[%vc]) {{
          %t[%vc] = {1}
        }}
      }}
      for %c in 16 {{
        for %h in {0} {{
          for %w in {0} {{
            block multiply(%vc: spatial 16 = %c, %vh: spatial {0} = %h, %vw: spatial {0} = %w)
                reads(%t[%vc], %x[%vc, %vh, %vw]) writes(%y[%vc, %vh, %vw]) {{
              %y[%vc, %vh, %vw] = %t[%vc] * %x[%vc, %vh, %vw]
            }}
          }}
        }}
      }}
    }}
  }})",
                                     size, unary));
}

TEST(DefaultSchedule, ACostlyProducerABroadcastReadsIsComputedOncePerElement) {
  auto separate = [](const std::string& unary, int64_t size) {
    ir::KernelFunction kernel = ChannelScale(unary, size);
    Schedule s = ApplyDefaultSchedule(kernel, DefaultScheduleOptions{.num_threads = 2});
    EXPECT_LT(CompareKernels(kernel, s.function()), 1e-5) << s.trace().ToText();
    std::vector<std::string> names = s.BlockNames();
    return std::find(names.begin(), names.end(), "unary") != names.end();
  };
  EXPECT_TRUE(separate("sigmoid(%s[%vc])", 32));
  EXPECT_TRUE(separate("exp(%s[%vc] * 0.5)", 32));
  EXPECT_FALSE(separate("%s[%vc] + 1.0", 32));    // cheap: recomputed
  EXPECT_FALSE(separate("abs(%s[%vc])", 32));     // cheap: recomputed
  EXPECT_FALSE(separate("sigmoid(%s[%vc])", 2));  // read 4 times per element: recomputed
}

}  // namespace
}  // namespace tandem::kernels
