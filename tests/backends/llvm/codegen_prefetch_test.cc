// Software prefetch under a loop annotated with ir::kPrefetchDistanceKey: the loads of
// read-only parameters that move with the loop prefetch, into L2, what the same load reads
// `distance` iterations later; results stay those of the reference interpreter.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "kernels/compute/lower.h"
#include "kernels/schedule/schedule.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem {
namespace {

using ir::DataType;
using ir::KernelFunction;
using kernels::BlockRV;
using kernels::LoopRV;
using kernels::Schedule;
using testing::Count;
using testing::ExpectMatchesReference;
using testing::F32;

// A 4-row x 64-column register tile of an m x k by k x n matmul (j -> [j0, 4, 16], i -> [i0,
// 4]), the fused outer loop [j0, i0] (a column panel of the right operand serves m / 4 tiles)
// annotated with prefetch distance `distance` (none when 0).
KernelFunction PanelMatmul(int64_t m, int64_t n, int64_t k, int64_t distance) {
  KernelFunction kernel =
      kernels::LowerOpCall("mm", "matmul", {}, {F32({m, k}), F32({k, n})}, F32({m, n}));
  Schedule s(kernel);
  BlockRV block = s.GetBlock("matmul");
  std::vector<LoopRV> loops = s.GetLoops(block);
  auto i = s.Split(loops[0], {-1, 4});
  auto j = s.Split(loops[1], {-1, 4, 16});
  s.Reorder({j[0], i[0], loops[2], i[1], j[1], j[2]});
  BlockRV local = s.CacheWrite(block, 0, "local");
  LoopRV outer = s.Fuse({j[0], i[0]});
  s.ReverseComputeAt(local, outer);
  s.Unroll(i[1]);
  s.Unroll(j[1]);
  s.Vectorize(j[2]);
  s.Parallel(outer);
  if (distance != 0) s.Annotate(outer, ir::kPrefetchDistanceKey, distance);
  return s.function();
}

TEST(CodegenPrefetch, AnnotatedLoopPrefetchesTheNextPanelOncePerLine) {
  KernelFunction kernel = PanelMatmul(16, 128, 32, /*distance=*/4);
  ExpectMatchesReference(kernel);
  std::string ir = backends::EmitLlvmIr({kernel});
  // Per k step, the tile reads 4 vectors of 16 floats of the right operand (4 lines); the
  // 4 unrolled rows read the same ones, so one copy prefetches: 4 prefetches per k step (16
  // if every row did), in each copy of the k loop's body LLVM keeps (one, or two when it
  // peels or unrolls it). The left operand is a broadcast scalar (no prefetch); the
  // accumulators and the output are not parameters read.
  std::regex call(R"(call void @llvm\.prefetch\.p0\(ptr [^,]+, i32 0, i32 2, i32 1\))");
  auto calls =
      std::distance(std::sregex_iterator(ir.begin(), ir.end(), call), std::sregex_iterator());
  EXPECT_GT(calls, 0) << ir;
  EXPECT_EQ(calls % 4, 0) << ir;
  EXPECT_LE(calls, 8) << ir;
  std::string assembly = backends::EmitAssembly({kernel});
  EXPECT_GE(Count(assembly, "prefetcht1"), 4u) << assembly;
}

TEST(CodegenPrefetch, WithoutTheAnnotationNothingIsPrefetched) {
  KernelFunction kernel = PanelMatmul(16, 128, 32, /*distance=*/0);
  EXPECT_EQ(Count(backends::EmitLlvmIr({kernel}), "llvm.prefetch"), 0u);
}

TEST(CodegenPrefetch, LastIterationsPrefetchWithinTheLoop) {
  // Distances up to the loop's extent - 1, the last iterations clamped to the last one: every
  // one compiles and keeps the results (8 outer iterations: 2 panels x 4 row tiles).
  for (int64_t distance : {1, 4, 7}) {
    SCOPED_TRACE(distance);
    ExpectMatchesReference(PanelMatmul(16, 128, 32, distance));
  }
}

TEST(CodegenPrefetch, DistanceOutsideTheLoopIsAnError) {
  for (int64_t distance : {-1, 8, 100}) {
    KernelFunction kernel = PanelMatmul(16, 128, 32, distance);
    try {
      backends::EmitLlvmIr({kernel});
      ADD_FAILURE() << "distance " << distance << " compiled";
    } catch (const ir::Error& e) {
      EXPECT_NE(std::string(e.what()).find("prefetch distance"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tandem
