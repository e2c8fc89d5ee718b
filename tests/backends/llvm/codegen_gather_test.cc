// Regression test for an LLVM 16 hazard: an AVX-512 gather whose index register is also its
// destination register, an encoding the CPU rejects with #UD (the process dies with SIGILL).
//
// Found by compiled_ops_test (conv2d_transpose, stride 2, output_padding 1, default schedule)
// with the code generator of commit 8be3a59, which emitted per-lane conditional loads as masked
// gathers. The kernel vectorizes 10 lanes of the output width over a load guarded by the stride-2
// parity test of the dilated input. LLVM splits the <10 x float> masked gather into 4-lane
// pieces; in the piece holding lanes 8..11 both real lanes are masked off by a mask that is known
// to be zero without being a constant, so instruction selection keeps the gather but makes its
// index vector IMPLICIT_DEF. The register allocator does not keep an early-clobber result apart
// from an undef use, and the virtual register rewriter gave both one register:
// `vgatherqps (%rax,%ymm0,4), %xmm0 {%k4}`. Plain `llc-16 -O3` on the kernel's LLVM IR does the
// same, so it is LLVM's bug; code generation must not hand LLVM 16 gathers with masked-off
// pieces (gathers that read element 0 in inactive lanes under an all-true mask avoid it).
//
// The test pins the schedule the default schedule chose, checks the assembly for such gathers on
// a fixed CPU, and, when the host's code has none, runs the kernel against the kernel
// interpreter.
#include <gtest/gtest.h>

#include "backends/llvm/codegen.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"
#include "kernels/schedule/schedule.h"
#include "tests/backends/compiled_test_util.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem {
namespace {

using testing::F32;

// conv2d_transpose of f32[1,2,5,5] with f32[2,3,3,3], strides 2, padding 1, output_padding 1
// (output f32[1,3,10,10]) under the schedule the default schedule gives it.
ir::KernelFunction StridedTransposedConvolution() {
  std::vector<int64_t> two{2, 2}, pad{1, 1, 1, 1}, out_pad{1, 1}, one{1, 1};
  ir::Attrs attrs{{"strides", two},
                  {"padding", pad},
                  {"dilation", one},
                  {"groups", int64_t{1}},
                  {"output_padding", out_pad}};
  std::vector<ir::TensorType> inputs = {F32({1, 2, 5, 5}), F32({2, 3, 3, 3})};
  ir::Type output =
      ir::InferCallType("conv2d_transpose", {ir::Type(inputs[0]), ir::Type(inputs[1])}, attrs);
  ir::KernelFunction kernel =
      kernels::LowerOpCall("transposed", "conv2d_transpose", attrs, inputs, output);
  kernels::Schedule s(kernel);
  s.ComputeInline(s.GetBlock("pad"));
  kernels::BlockRV block = s.GetBlock("conv2d_transpose");
  std::vector<kernels::LoopRV> loops = s.GetLoops(block);  // n, co, h, w, ci, kh, kw
  std::vector<kernels::LoopRV> w = s.Split(loops[3], {-1, 10});
  std::vector<kernels::LoopRV> h = s.Split(loops[2], {-1, 2});
  s.Reorder({loops[0], loops[1], h[0], w[0], loops[4], loops[5], loops[6], h[1], w[1]});
  s.Unroll(h[1]);
  s.Vectorize(w[1]);
  s.DecomposeReduction(block, loops[4]);
  s.Fuse({loops[0], loops[1], h[0], w[0]});
  return s.function();
}

TEST(CodegenGather, NoGatherUsesItsIndexRegisterAsDestination) {
  ir::KernelFunction kernel = StridedTransposedConvolution();
  backends::CodegenOptions sapphire_rapids;
  sapphire_rapids.cpu = "sapphirerapids";
  std::string assembly = backends::EmitAssembly({kernel}, sapphire_rapids);
  for (const std::string& function : testing::FunctionsWithInvalidGathers(assembly)) {
    ADD_FAILURE() << "LLVM emitted a gather using one register as index and destination (#UD) "
                  << "in " << function;
  }

  // On the host: run it, unless it holds such a gather (that would kill the test program).
  if (!testing::FunctionsWithInvalidGathers(backends::EmitAssembly({kernel})).empty()) {
    GTEST_SKIP() << "the host's machine code holds an invalid gather; not run";
  }
  testing::ExpectMatchesReference(kernel);
}

}  // namespace
}  // namespace tandem
