// Every op of the registry, compiled through LLVM, against the graph reference interpreter.
//
// Each case of the shared table (tests/common/op_cases.h) is lowered with LowerOpCall and
// compiled four ways: unscheduled; with its default schedule; with the default schedule forced
// to parallelize even these small kernels (so the outlined parallel loops of every op are
// generated too); and with a default schedule for 8 lanes compiled for an AVX2 CPU (x86-64-v3:
// no AVX-512 mask registers, other gathers and masked loads; only where the host can run it). All
// kernels are compiled in a few CompileKernels calls when the suite starts; each case then runs its
// compiled kernels on random inputs and compares them with backends::RunReference of the one-op
// graph: relative error below 1e-5 for floating-point results (the f32 erf/tanh/sigmoid/exp
// approximations are within 5e-7), exact for integer and bool results. A mismatch names the layer
// at fault (compute definition, schedule or code generation; see compiled_test_util.h).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "backends/llvm/codegen.h"
#include "backends/reference/interpreter.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"
#include "tests/backends/compiled_test_util.h"
#include "tests/common/op_cases.h"

namespace tandem {
namespace {

using testing::Case;

constexpr double kTolerance = 1e-5;

// How a lowered kernel is prepared for code generation.
enum Variant { kUnscheduled, kDefaultSchedule, kForcedParallel, kAvx2, kNumVariants };

const char* VariantName(int variant) {
  switch (variant) {
    case kUnscheduled:
      return "unscheduled";
    case kDefaultSchedule:
      return "default schedule";
    case kForcedParallel:
      return "default schedule, forced parallel";
    default:
      return "default schedule for 8 lanes, x86-64-v3";
  }
}

bool HostRunsX86_64_V3() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("movbe");
}

struct PreparedKernel {
  ir::KernelFunction kernel;
  std::string trace;     // the schedule's trace text; empty when unscheduled
  std::string error;     // a failure while scheduling or compiling
  bool skipped = false;  // the host cannot run code for this variant's target
  backends::CodegenOptions options;
  std::shared_ptr<backends::CompiledModule> module;
};

struct PreparedCase {
  std::string error;  // a failure while lowering
  ir::KernelFunction plain;
  PreparedKernel variants[kNumVariants];
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = testing::AllCases();
  return cases;
}

// Lowers and schedules one case; kernel names are unique per case and variant.
PreparedCase Prepare(const Case& c, size_t index) {
  PreparedCase prepared;
  try {
    ir::GraphFunction function = testing::BuildCall(c);
    const ir::Node& call = function.node(function.Find("result"));
    prepared.plain =
        kernels::LowerOpCall("case" + std::to_string(index), c.op, call.attrs, c.inputs, call.type);
  } catch (const ir::Error& e) {
    prepared.error = std::string("LowerOpCall failed: ") + e.what();
    return prepared;
  }
  for (int v = 0; v < kNumVariants; ++v) {
    PreparedKernel& p = prepared.variants[v];
    p.kernel = prepared.plain;
    if (v != kUnscheduled) {
      kernels::DefaultScheduleOptions options;
      if (v == kForcedParallel) {
        options.parallel_min_work = 1;
        options.num_threads = 2;
      }
      if (v == kAvx2) {
        options.vector_lanes = 8;
        p.options.cpu = "x86-64-v3";
        p.skipped = !HostRunsX86_64_V3();
      }
      try {
        kernels::Schedule schedule = kernels::ApplyDefaultSchedule(prepared.plain, options);
        p.kernel = schedule.function();
        p.trace = schedule.trace().ToText();
      } catch (const ir::Error& e) {
        p.error = std::string("ApplyDefaultSchedule failed: ") + e.what();
      }
    }
    p.kernel.name = prepared.plain.name + "_v" + std::to_string(v);
  }
  return prepared;
}

// Compiles `kernels` (all with the same options) in one module; when that fails, compiles them
// one by one so that the failure is charged to the kernels that cause it. Kernels whose machine
// code holds an invalid gather (see FunctionsWithInvalidGathers) are marked failed instead of
// being run.
void CompileBatch(std::vector<PreparedKernel*> kernels) {
  if (kernels.empty()) return;
  const backends::CodegenOptions& options = kernels.front()->options;
  std::vector<ir::KernelFunction> functions;
  for (PreparedKernel* p : kernels) functions.push_back(p->kernel);
  try {
    std::shared_ptr<backends::CompiledModule> module = backends::CompileKernels(functions, options);
    for (PreparedKernel* p : kernels) p->module = module;
  } catch (const ir::Error&) {
    for (PreparedKernel* p : kernels) {
      try {
        p->module = backends::CompileKernels({p->kernel}, options);
      } catch (const ir::Error& e) {
        p->error = std::string("CompileKernels failed: ") + e.what();
      }
    }
  }
  std::vector<ir::KernelFunction> compiled;
  for (PreparedKernel* p : kernels) {
    if (p->error.empty()) compiled.push_back(p->kernel);
  }
  std::set<std::string> invalid;
  try {
    invalid = testing::FunctionsWithInvalidGathers(backends::EmitAssembly(compiled, options));
  } catch (const ir::Error& e) {
    for (PreparedKernel* p : kernels) p->error = std::string("EmitAssembly failed: ") + e.what();
  }
  for (PreparedKernel* p : kernels) {
    for (const std::string& function : invalid) {
      if (!testing::BelongsToKernel(function, p->kernel.name)) continue;
      p->error =
          "LLVM generated a gather whose index register is its destination register (#UD, "
          "SIGILL when run) in " +
          function + "; not run. See codegen_gather_test.cc.";
      p->module.reset();
    }
  }
}

class CompiledOps : public ::testing::TestWithParam<size_t> {
 public:
  static void SetUpTestSuite() {
    auto start = std::chrono::steady_clock::now();
    prepared_ = new std::vector<PreparedCase>();
    for (size_t i = 0; i < Cases().size(); ++i) prepared_->push_back(Prepare(Cases()[i], i));
    std::map<std::string, std::vector<PreparedKernel*>> pending;  // by target CPU
    size_t total = 0;
    for (PreparedCase& c : *prepared_) {
      for (PreparedKernel& p : c.variants) {
        if (!c.error.empty() || !p.error.empty() || p.skipped) continue;
        pending[p.options.cpu].push_back(&p);
        ++total;
      }
    }
    // Per target, a few batches compiled concurrently (each CompileKernels call has its own JIT).
    size_t batches = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    std::vector<std::future<void>> jobs;
    for (const auto& [cpu, kernels] : pending) {
      for (size_t b = 0; b < batches; ++b) {
        std::vector<PreparedKernel*> batch;
        for (size_t i = b; i < kernels.size(); i += batches) batch.push_back(kernels[i]);
        jobs.push_back(std::async(std::launch::async, CompileBatch, std::move(batch)));
      }
    }
    for (std::future<void>& job : jobs) job.get();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ compile  ] " << total << " kernels of " << Cases().size()
              << " cases lowered, scheduled and compiled in " << jobs.size() << " batches, "
              << seconds << " s\n";
  }
  static void TearDownTestSuite() {
    delete prepared_;
    prepared_ = nullptr;
  }

 protected:
  static std::vector<PreparedCase>* prepared_;
};

std::vector<PreparedCase>* CompiledOps::prepared_ = nullptr;

TEST_P(CompiledOps, MatchesReference) {
  const Case& c = Cases()[GetParam()];
  const PreparedCase& prepared = (*prepared_)[GetParam()];
  ASSERT_TRUE(prepared.error.empty()) << prepared.error;
  ir::GraphFunction function = testing::BuildCall(c);
  std::vector<ir::Tensor> inputs = testing::CaseInputs(c, 7);
  std::vector<ir::Tensor> expected = backends::RunReference(function, inputs);
  for (int v = 0; v < kNumVariants; ++v) {
    SCOPED_TRACE(VariantName(v));
    const PreparedKernel& p = prepared.variants[v];
    if (p.skipped) continue;
    if (!p.error.empty()) {
      ADD_FAILURE() << p.error;
      continue;
    }
    std::vector<ir::Tensor> actual = p.module->Run(p.kernel.name, inputs, true);
    std::string mismatch = testing::Mismatch(actual, expected, kTolerance);
    if (!mismatch.empty()) {
      ADD_FAILURE() << "compiled kernel differs from the reference: " << mismatch << "\n"
                    << testing::DiagnoseMismatch(prepared.plain, p.kernel, p.trace, inputs,
                                                 expected, kTolerance);
    }
  }
  // Inputs must be left untouched by the compiled kernels.
  std::vector<ir::Tensor> fresh = testing::CaseInputs(c, 7);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(ir::MaxAbsoluteError(inputs[i], fresh[i]), 0.0) << "input " << i << " was written";
  }
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  return Cases()[info.param].op + "_" + Cases()[info.param].label;
}

INSTANTIATE_TEST_SUITE_P(AllOps, CompiledOps, ::testing::Range<size_t>(0, Cases().size()),
                         CaseName);

TEST(CompiledOpsTable, EveryRegisteredOpHasACase) {
  std::map<std::string, int> counts;
  for (const Case& c : Cases()) ++counts[c.op];
  std::vector<std::string> names = ir::OpRegistry::Global().Names();
  ASSERT_FALSE(names.empty());
  for (const std::string& op : names) {
    EXPECT_GE(counts[op], 1) << op << " has no case in tests/common/op_cases.h";
  }
}

// The scheduled variants are not degenerate: the default schedule vectorizes nearly every case,
// and the forced variant parallelizes every case except the few without a spatial axis (the full
// reductions of sum, mean, max, min and prod, a dot product).
TEST(CompiledOpsTable, ScheduledVariantsVectorizeAndParallelize) {
  size_t vectorized = 0, parallel = 0;
  for (size_t i = 0; i < Cases().size(); ++i) {
    PreparedCase prepared = Prepare(Cases()[i], i);
    ASSERT_TRUE(prepared.error.empty()) << prepared.error;
    vectorized += prepared.variants[kDefaultSchedule].trace.find("vectorize(") != std::string::npos;
    parallel += prepared.variants[kForcedParallel].trace.find("parallel(") != std::string::npos;
  }
  EXPECT_GE(vectorized * 10, Cases().size() * 8);
  EXPECT_GE(parallel + 7, Cases().size());
}

}  // namespace
}  // namespace tandem
