// Schedule::Bind: loops bound to GPU thread indices keep the kernel's result (the interpreter
// runs them as serial loops), round-trip through kernel text and traces, replay exactly, and are
// refused where binding would change the result or mean nothing.
#include <gtest/gtest.h>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/schedule/schedule.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::CompareKernels;
using testing::Matmul;

Schedule BoundMatmul() {
  Schedule s(Matmul(12, 10, 8));
  auto loops = s.GetLoops(s.GetBlock("matmul"));
  LoopRV fused = s.Fuse({loops[0], loops[1]});
  auto parts = s.Split(fused, {-1, 32});  // 120 = 4 * 32 - 8: the last block is guarded
  s.Bind(parts[0], "blockIdx.x");
  s.Bind(parts[1], "threadIdx.x");
  return s;
}

TEST(ScheduleBind, KeepsResultsAndRoundTrips) {
  Schedule s = BoundMatmul();
  EXPECT_LT(CompareKernels(s.original(), s.function()), 1e-5);
  std::string text = ir::PrintKernel(s.function());
  EXPECT_NE(text.find(" blockIdx.x {"), std::string::npos) << text;
  EXPECT_NE(text.find(" threadIdx.x {"), std::string::npos) << text;
  ir::KernelFunction parsed = ir::ParseKernel(text);
  EXPECT_TRUE(ir::StructuralEqual(parsed, s.function()))
      << ir::StructuralDiff(parsed, s.function());

  ir::Trace trace = ir::Trace::FromJson(s.trace().ToJson());
  EXPECT_EQ(trace, s.trace());
  Schedule replayed = Schedule::Replay(s.original(), trace);
  EXPECT_TRUE(ir::StructuralEqual(replayed.function(), s.function()));
  EXPECT_NE(s.trace().ToText().find("bind("), std::string::npos) << s.trace().ToText();
}

TEST(ScheduleBind, RefusesWhatWouldChangeTheResult) {
  Schedule s(Matmul(8, 8, 8));
  auto loops = s.GetLoops(s.GetBlock("matmul"));
  auto illegal = [&](const std::function<void()>& step, const std::string& fragment) {
    ir::KernelFunction before = s.function();
    try {
      step();
      ADD_FAILURE() << "expected an error containing '" << fragment << "'";
    } catch (const ir::Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_TRUE(ir::StructuralEqual(before, s.function()));
  };
  illegal([&] { s.Bind(loops[2], "threadIdx.x"); }, "reduction iterator");
  illegal([&] { s.Bind(loops[0], "warp.x"); }, "not a thread index");
  s.Bind(loops[0], "threadIdx.x");
  illegal([&] { s.Bind(loops[1], "threadIdx.x"); }, "inside threadIdx.x loop");
  s.Bind(loops[1], "threadIdx.y");
  EXPECT_LT(CompareKernels(s.original(), s.function()), 1e-5);
}

TEST(ScheduleBind, CpuCodeGenerationRefusesBoundLoops) {
  Schedule s = BoundMatmul();
  try {
    backends::CompileKernels({s.function()});
    FAIL() << "a kernel with thread bindings compiled for the CPU";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("compile for the cuda target only"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tandem::kernels
