// The code generation version (backends::kCodegenVersion) keys tuning records: it must change
// whenever the generated code can. This test pins the assembly of a fixed set of kernels, with
// their default schedules, for a fixed target (the AVX2 + FMA baseline, the same on every
// machine); when that code changes while the version stays, it fails and says what to do.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/llvm/codegen.h"
#include "ir/graph.h"
#include "ir/structural.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem {
namespace {

using kernels::testing::F32;
using kernels::testing::LowerOp;

constexpr const char* kPinnedFile = "tests/backends/data/codegen_version.txt";

// Kernels that cover the code generator's paths: register-tiled GEMM and convolution, fused
// elementwise epilogues, reductions, transcendental math, parallel loops, inlined pads.
std::vector<ir::KernelFunction> PinnedKernels(const kernels::DefaultScheduleOptions& options) {
  ir::GraphBuilder b("conv_bias_relu");
  ir::ValueId data = b.Input("data", F32({1, 16, 14, 14}));
  ir::ValueId weight = b.Input("weight", F32({32, 16, 3, 3}));
  ir::ValueId bias = b.Input("bias", F32({32, 1, 1}));
  ir::ValueId conv = b.Call("conv2d", {data, weight},
                            ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}}, "conv");
  ir::GraphFunction conv_function = b.Finish(b.Call("relu", {b.Call("add", {conv, bias})}));
  std::vector<ir::KernelFunction> lowered = {
      kernels::LowerGraphFunction(conv_function, "conv_bias_relu"),
      kernels::testing::Matmul(64, 48, 32),
      kernels::LowerOpCall("softmax", "softmax", {}, {F32({4, 37})}, ir::Type(F32({4, 37}))),
      LowerOp("gelu", {F32({8, 128})}),
      LowerOp("sigmoid", {F32({8, 64})}),
      LowerOp("conv2d", {F32({1, 32, 28, 28}), F32({32, 1, 3, 3})},
              ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t{32}}}),
      // Channels-last depthwise: its pad inlined as guarded loads, interior tiles versioned.
      LowerOp("conv2d", {F32({1, 28, 28, 32}), F32({3, 3, 1, 32})},
              ir::Attrs{{"data_layout", std::string("NHWC")},
                        {"kernel_layout", std::string("HWIO")},
                        {"padding", std::vector<int64_t>{1, 1, 1, 1}},
                        {"groups", int64_t{32}}}),
  };
  std::vector<ir::KernelFunction> scheduled;
  for (size_t i = 0; i < lowered.size(); ++i) {
    ir::KernelFunction kernel = kernels::ApplyDefaultSchedule(lowered[i], options).function();
    kernel.name = "pinned_" + std::to_string(i);
    scheduled.push_back(std::move(kernel));
  }
  return scheduled;
}

TEST(CodegenVersion, PinnedKernelsCompileToThePinnedCode) {
  backends::CodegenOptions codegen;
  codegen.cpu = "x86-64-v3";
  kernels::DefaultScheduleOptions schedule;
  schedule.vector_lanes = 8;
  schedule.vector_registers = 16;
  schedule.num_threads = 2;
  std::string assembly = backends::EmitAssembly(PinnedKernels(schedule), codegen);
  ir::StableHasher hasher;
  hasher.Update(assembly);
  std::string hash = ir::HashToHex(hasher.Digest());

  std::filesystem::path pinned_path = std::filesystem::path(TANDEM_SOURCE_DIR) / kPinnedFile;
  std::ifstream in(pinned_path);
  ASSERT_TRUE(in) << "missing " << pinned_path;
  int pinned_version = 0;
  std::string pinned_hash;
  in >> pinned_version >> pinned_hash;
  std::string record = std::to_string(backends::kCodegenVersion) + " " + hash;
  if (pinned_version != backends::kCodegenVersion) {
    FAIL() << "kCodegenVersion is " << backends::kCodegenVersion << " but " << kPinnedFile
           << " pins version " << pinned_version << ": write \"" << record << "\" into it";
  }
  EXPECT_EQ(hash, pinned_hash)
      << "the generated code of the pinned kernels changed, so tuning records of version "
      << pinned_version << " would be served for code they did not measure: bump "
      << "backends::kCodegenVersion (backends/llvm/codegen.h) and write \""
      << backends::kCodegenVersion + 1 << " " << hash << "\" into " << kPinnedFile;
}

}  // namespace
}  // namespace tandem
