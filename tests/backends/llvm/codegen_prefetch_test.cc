// Software prefetch under a loop annotated with ir::kPrefetchDistanceKey: the loads of
// read-only parameters that move with the loop prefetch, into L2, what the same load reads
// `distance` iterations later; results stay those of the reference interpreter.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "kernels/schedule/schedule.h"
#include "tests/backends/kernel_test_util.h"
#include "tests/backends/llvm/register_tiled_matmul.h"

namespace tandem {
namespace {

using ir::KernelFunction;
using kernels::LoopRV;
using kernels::Schedule;
using testing::Count;
using testing::ExpectMatchesReference;

// The register-tiled matmul with its column panels outside (a panel of the right operand
// serves m / 4 consecutive iterations of the fused outer loop), that loop annotated with
// prefetch distance `distance` (none when 0).
KernelFunction PanelMatmul(int64_t m, int64_t n, int64_t k, int64_t distance) {
  KernelFunction kernel = testing::RegisterTiledMatmul(m, n, k, /*columns_outside=*/true);
  if (distance == 0) return kernel;
  Schedule s(kernel);
  LoopRV outer = s.GetLoops(s.GetBlock("matmul"))[0];
  s.Annotate(outer, ir::kPrefetchDistanceKey, distance);
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
