// Every op of the registry under its default GPU schedule, without a GPU and with one.
//
// Each case of the shared table (tests/common/op_cases.h) is lowered, given its default GPU
// schedule (kernels::ApplyGpuDefaultSchedule) and compiled to PTX for every supported
// architecture. Then, per case:
//   1. the schedule spreads the kernel over threads: every launch but those of full reductions
//      and empty outputs
//      binds loops to blockIdx.x and threadIdx.x;
//   2. the kernel interpreter on the scheduled kernel matches the graph reference interpreter;
//   3. the toolkit's ptxas accepts the PTX of every architecture (where this build found ptxas);
//   4. where a CUDA device is, the PTX for its architecture runs on it and matches the reference
//      (skipped elsewhere, with the reason).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <iostream>
#include <thread>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ptxas.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/reference/interpreter.h"
#include "ir/kernel/functor.h"
#include "ir/target.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "kernels/schedule/block_analysis.h"
#include "tests/backends/compiled_test_util.h"
#include "tests/common/op_cases.h"

namespace tandem {
namespace {

using testing::Case;

constexpr double kTolerance = 1e-5;

struct GpuCase {
  std::string error;
  ir::KernelFunction plain;
  ir::KernelFunction scheduled;
  std::string trace;
  std::vector<backends::GpuProgram> programs;  // one per architecture
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = testing::AllCases();
  return cases;
}

GpuCase Prepare(const Case& c, size_t index) {
  GpuCase prepared;
  try {
    ir::GraphFunction function = testing::BuildCall(c);
    const ir::Node& call = function.node(function.Find("result"));
    prepared.plain = kernels::LowerOpCall("gpu_case" + std::to_string(index), c.op, call.attrs,
                                          c.inputs, call.type);
    kernels::Schedule schedule = kernels::ApplyGpuDefaultSchedule(prepared.plain);
    prepared.scheduled = schedule.function();
    prepared.trace = schedule.trace().ToText();
    for (const std::string& arch : ir::CudaArchitectures()) {
      prepared.programs.push_back(backends::CompileGpuKernel(prepared.scheduled, {arch, 3}));
    }
  } catch (const ir::Error& e) {
    prepared.error = e.what();
  }
  return prepared;
}

class GpuOps : public ::testing::TestWithParam<size_t> {
 public:
  static void SetUpTestSuite() {
    auto start = std::chrono::steady_clock::now();
    prepared_ = new std::vector<GpuCase>(Cases().size());
    size_t jobs = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    std::vector<std::future<void>> running;
    for (size_t j = 0; j < jobs; ++j) {
      running.push_back(std::async(std::launch::async, [j, jobs] {
        for (size_t i = j; i < Cases().size(); i += jobs) (*prepared_)[i] = Prepare(Cases()[i], i);
      }));
    }
    for (auto& job : running) job.get();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ compile  ] " << Cases().size() << " cases scheduled for a GPU and compiled to "
              << "PTX for " << ir::CudaArchitectures().size() << " architectures in " << seconds
              << " s\n";
  }
  static void TearDownTestSuite() {
    delete prepared_;
    prepared_ = nullptr;
  }

 protected:
  static std::vector<GpuCase>* prepared_;
};

std::vector<GpuCase>* GpuOps::prepared_ = nullptr;

TEST_P(GpuOps, ScheduleBindsThreadsAndMatchesReference) {
  const Case& c = Cases()[GetParam()];
  const GpuCase& prepared = (*prepared_)[GetParam()];
  ASSERT_TRUE(prepared.error.empty()) << prepared.error;
  // 1. Threads.
  for (const backends::GpuLaunchSpec& launch : prepared.programs.front().launches) {
    bool full_reduction = false;
    ir::VisitStmtTree(launch.function.body, [&](const ir::Stmt& s) {
      const auto* realize = ir::As<ir::BlockRealizeNode>(s);
      if (realize && realize->block->name != "root" &&
          kernels::SpatialExtent(realize->block) <= 1) {
        full_reduction = true;
      }
    });
    if (!full_reduction) {
      EXPECT_GT(launch.grid[0] * launch.block[0], 1)
          << launch.entry << " runs on one thread\n"
          << kernels::testing::KernelText(prepared.scheduled);
    }
  }
  // 2. Interpreter.
  ir::GraphFunction function = testing::BuildCall(c);
  std::vector<ir::Tensor> inputs = testing::CaseInputs(c, 7);
  std::vector<ir::Tensor> expected = backends::RunReference(function, inputs);
  std::string mismatch =
      testing::InterpretedMismatch(prepared.scheduled, inputs, expected, kTolerance);
  EXPECT_TRUE(mismatch.empty()) << mismatch << "\n"
                                << testing::DiagnoseMismatch(prepared.plain, prepared.scheduled,
                                                             prepared.trace, inputs, expected,
                                                             kTolerance);
}

TEST_P(GpuOps, PtxasAcceptsEveryArchitecture) {
  const GpuCase& prepared = (*prepared_)[GetParam()];
  ASSERT_TRUE(prepared.error.empty()) << prepared.error;
  if (backends::cuda::PtxasPath().empty()) GTEST_SKIP() << "this build found no ptxas";
  for (const backends::GpuProgram& program : prepared.programs) {
    backends::cuda::PtxasReport report = backends::cuda::AssemblePtx(program.ptx, program.arch);
    EXPECT_TRUE(report.accepted) << program.arch << ": " << report.log << "\n" << program.ptx;
    EXPECT_GT(report.max_registers, 0) << report.log;
  }
}

TEST_P(GpuOps, RunsOnTheDeviceAndMatchesReference) {
  const Case& c = Cases()[GetParam()];
  const GpuCase& prepared = (*prepared_)[GetParam()];
  ASSERT_TRUE(prepared.error.empty()) << prepared.error;
  std::string reason = backends::cuda::CudaUnavailableReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  std::string arch = backends::cuda::DeviceArchitecture();
  for (const backends::GpuProgram& program : prepared.programs) {
    if (program.arch != arch) continue;
    backends::cuda::GpuKernel kernel(program);
    std::vector<ir::Tensor> inputs = testing::CaseInputs(c, 7);
    std::vector<ir::Tensor> expected = backends::RunReference(testing::BuildCall(c), inputs);
    std::string mismatch = testing::Mismatch(kernel.Run(inputs), expected, kTolerance);
    EXPECT_TRUE(mismatch.empty()) << arch
                                  << ": the GPU result differs from the reference: " << mismatch
                                  << "\n"
                                  << kernels::testing::KernelText(prepared.scheduled);
  }
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  return Cases()[info.param].op + "_" + Cases()[info.param].label;
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOps, ::testing::Range<size_t>(0, Cases().size()), CaseName);

}  // namespace
}  // namespace tandem
