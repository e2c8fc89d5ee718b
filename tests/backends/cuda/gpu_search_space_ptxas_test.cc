// PTX of the GPU design space's programs (kernels::DefaultGpuSearchSpace), without a GPU: for
// every op case of the shared table (tests/common/op_cases.h), the first valid program of each
// design space (up to three) is compiled to PTX for every supported architecture (sm_80, sm_90)
// and the toolkit's ptxas accepts it. The verify_ptxas postprocessor (backends/cuda/verify_ptxas.h)
// accepts such programs on the real limits and rejects them on limits they break;
// PtxasLimitViolation names each violated limit. (The programs' results are checked in the kernel
// interpreter's thread-block simulation in tests/kernels/search/gpu_search_space_test.cc.)
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "backends/cuda/ptxas.h"
#include "backends/cuda/verify_ptxas.h"
#include "backends/llvm/nvptx_codegen.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/target.h"
#include "kernels/compute/lower.h"
#include "kernels/search/search_space.h"
#include "tests/common/op_cases.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem {
namespace {

using testing::Case;

constexpr size_t kSpacesPerCase = 3;

struct SampledCase {
  std::string error;
  std::vector<ir::KernelFunction> programs;
  std::vector<backends::GpuProgram> compiled;  // per program, per architecture
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = testing::AllCases();
  return cases;
}

SampledCase Prepare(const Case& c, size_t index) {
  SampledCase out;
  try {
    ir::GraphFunction function = testing::BuildCall(c);
    const ir::Node& call = function.node(function.Find("result"));
    ir::KernelFunction kernel = kernels::LowerOpCall("gpu_search" + std::to_string(index), c.op,
                                                     call.attrs, c.inputs, call.type);
    kernels::SearchSpace space = kernels::DefaultGpuSearchSpace(kernels::GpuSearchTarget("sm_80"));
    std::vector<kernels::Schedule> spaces = kernels::GenerateDesignSpaces(kernel, space, 3);
    kernels::RandomState random(4);
    for (size_t k = 0; k < spaces.size() && k < kSpacesPerCase; ++k) {
      for (int draw = 0; draw < 8; ++draw) {
        if (auto p = kernels::SampleProgram(kernel, spaces[k].trace(), space, random)) {
          out.programs.push_back(p->function());
          break;
        }
      }
    }
    for (const ir::KernelFunction& program : out.programs) {
      try {
        for (const std::string& arch : ir::CudaArchitectures()) {
          out.compiled.push_back(backends::CompileGpuKernel(program, {arch, 3}));
        }
      } catch (const ir::Error& e) {
        out.error = std::string(e.what()) + "\n" + ir::PrintKernel(program);
        return out;
      }
    }
  } catch (const ir::Error& e) {
    out.error = e.what();
  }
  return out;
}

class GpuSearchPtx : public ::testing::TestWithParam<size_t> {
 public:
  static void SetUpTestSuite() {
    prepared_ = new std::vector<SampledCase>(Cases().size());
    size_t jobs = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
    std::vector<std::future<void>> running;
    for (size_t j = 0; j < jobs; ++j) {
      running.push_back(std::async(std::launch::async, [j, jobs] {
        for (size_t i = j; i < Cases().size(); i += jobs) (*prepared_)[i] = Prepare(Cases()[i], i);
      }));
    }
    for (auto& job : running) job.get();
  }
  static void TearDownTestSuite() {
    delete prepared_;
    prepared_ = nullptr;
  }

 protected:
  static std::vector<SampledCase>* prepared_;
};

std::vector<SampledCase>* GpuSearchPtx::prepared_ = nullptr;

TEST_P(GpuSearchPtx, PtxasAcceptsSampledProgramsForEveryArchitecture) {
  const SampledCase& prepared = (*prepared_)[GetParam()];
  ASSERT_TRUE(prepared.error.empty()) << prepared.error;
  ASSERT_FALSE(prepared.programs.empty()) << "no valid program sampled";
  ASSERT_EQ(prepared.compiled.size(), prepared.programs.size() * ir::CudaArchitectures().size());
  if (backends::cuda::PtxasPath().empty()) GTEST_SKIP() << "this build found no ptxas";
  for (size_t k = 0; k < prepared.compiled.size(); ++k) {
    const backends::GpuProgram& program = prepared.compiled[k];
    backends::cuda::PtxasReport report = backends::cuda::AssemblePtx(program.ptx, program.arch);
    EXPECT_TRUE(report.accepted) << program.arch << ": " << report.log << "\n"
                                 << ir::PrintKernel(
                                        prepared.programs[k / ir::CudaArchitectures().size()]);
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuSearchPtx, ::testing::Range<size_t>(0, Cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Cases()[info.param].op + "_" + Cases()[info.param].label;
                         });

TEST(VerifyPtxas, NamesEachViolatedLimit) {
  kernels::SearchTarget target = kernels::GpuSearchTarget("sm_90");
  backends::GpuProgram program;
  program.launches.resize(1);
  program.launches[0].block = {512, 1, 1};
  backends::cuda::PtxasReport report;
  report.accepted = true;
  report.max_registers = 64;  // 64 x 512 = 32768 registers per block
  report.shared_bytes = 4096;
  EXPECT_EQ(backends::cuda::PtxasLimitViolation(report, program, target), "");
  auto violation = [&](auto change) {
    backends::cuda::PtxasReport changed = report;
    change(changed);
    return backends::cuda::PtxasLimitViolation(changed, program, target);
  };
  EXPECT_NE(violation([](auto& r) { r.accepted = false; }).find("rejects"), std::string::npos);
  EXPECT_NE(violation([](auto& r) { r.spill_bytes = 8; }).find("spills"), std::string::npos);
  EXPECT_NE(violation([](auto& r) { r.max_registers = 255; }).find("threads per block"),
            std::string::npos);  // 255 x 512 > 65536
  EXPECT_NE(violation([](auto& r) { r.shared_bytes = 48 * 1024 + 4; }).find("shared memory"),
            std::string::npos);
  target.max_registers_per_thread = 32;
  EXPECT_NE(backends::cuda::PtxasLimitViolation(report, program, target).find("per thread"),
            std::string::npos);
}

TEST(VerifyPtxas, AcceptsOnRealLimitsAndRejectsOnBrokenOnes) {
  if (backends::cuda::PtxasPath().empty()) GTEST_SKIP() << "this build found no ptxas";
  backends::cuda::RegisterVerifyPtxas();
  ir::KernelFunction kernel = kernels::testing::Matmul(64, 64, 64);
  kernels::SearchTarget target = kernels::GpuSearchTarget("sm_90");
  kernels::SearchSpace space = kernels::DefaultGpuSearchSpace(target);
  space.postprocessors.push_back(kernels::MakePostprocessor("verify_ptxas", target));
  kernels::SearchTarget tight = target;
  tight.registers_per_block = 1;  // fewer than any thread uses
  kernels::PostprocessorPtr strict = kernels::MakePostprocessor("verify_ptxas", tight);
  EXPECT_EQ(strict->name(), "verify_ptxas");
  int accepted = 0;
  kernels::RandomState random(9);
  for (const kernels::Schedule& design : kernels::GenerateDesignSpaces(kernel, space, 9)) {
    for (int draw = 0; draw < 4; ++draw) {
      std::optional<kernels::Schedule> p =
          kernels::SampleProgram(kernel, design.trace(), space, random);
      if (!p) continue;
      ++accepted;
      kernels::Schedule copy = *p;
      EXPECT_FALSE(strict->Apply(copy)) << ir::PrintKernel(p->function());
    }
  }
  EXPECT_GT(accepted, 0) << "verify_ptxas rejected every sampled matmul";
}

}  // namespace
}  // namespace tandem
