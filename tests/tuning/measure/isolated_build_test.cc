// Isolated candidate builds (LocalBuilder, tuning/measure/isolated_build.cc): a candidate whose
// compilation crashes (a signal, an LLVM fatal error, an exit) or hangs past the build timeout
// is that candidate's failure with the reason, the others build and compute what the reference
// interpreter computes, no child process is left behind, the parent links objects the child
// compiled without compiling them again, and a tuning pass goes on past such candidates.
#include <gtest/gtest.h>
#include <llvm/Support/ErrorHandling.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "backends/llvm/kernel_object_cache.h"
#include "backends/reference/interpreter.h"
#include "ir/error.h"
#include "passes/pipeline_text.h"
#include "tests/common/mock_tuning.h"
#include "tuning/measure/builder.h"

// Set in a build's child right before it exits on purpose: LeakSanitizer (in the sanitizer
// build) then skips its exit-time leak check, which would otherwise replace the exit status
// under test with its own. LeakSanitizer calls this function, when defined, at exit.
static bool exiting_on_purpose = false;
extern "C" int __lsan_is_turned_off() {
  return exiting_on_purpose ? 1 : 0;
}

namespace tandem::tuning {
namespace {

// The fault a test injects into a candidate's build, by module attribute.
constexpr const char* kFaultAttr = "test.fault";
enum Fault : int64_t { kNone = 0, kCrash, kHang, kExit, kLlvmFatal, kThrow };

// testing::MatmulReluModule with the fault the build's child is to inject.
ir::IRModule MatmulRelu(int64_t columns, Fault fault = kNone) {
  ir::IRModule module = testing::MatmulReluModule(columns, static_cast<uint64_t>(columns));
  if (fault != kNone) module.attrs().Set(kFaultAttr, int64_t{fault});
  return module;
}

// Runs in the build's child process: does what the module's fault attribute asks.
void InjectFault(const BuildInput& input) {
  switch (input.module.attrs().GetInt(kFaultAttr, kNone)) {
    case kCrash:
      raise(SIGSEGV);
      break;
    case kHang:
      while (true) pause();
    case kExit:
      exiting_on_purpose = true;
      std::exit(3);
    case kLlvmFatal:
      llvm::report_fatal_error("injected fatal error");
    case kThrow:
      throw ir::Error("injected error");
    default:
      break;
  }
}

// True when this process has no child left, running or zombie.
bool NoChildProcesses() {
  return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

// The executable computes what the reference interpreter computes on `module`.
void ExpectCorrect(const ir::IRModule& module, backends::Executable& executable) {
  std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), 5);
  std::vector<ir::Tensor> want = backends::RunReference(module, inputs);
  std::vector<ir::Tensor> got = executable.Run(inputs);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got[0].shape(), want[0].shape());
  EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-5);
}

TEST(IsolatedBuild, ACrashingAndAHangingBuildFailWithTheReasonAndTheOthersBuild) {
  std::vector<BuildInput> inputs = {
      {MatmulRelu(12, kCrash), {}}, {MatmulRelu(20, kHang), {}}, {MatmulRelu(7), {}}};
  LocalBuilder builder(
      {.num_workers = 3, .timeout_seconds = 1.5, .in_child_before_compile = InjectFault});
  std::vector<BuildOutput> outputs = builder.Build(inputs);
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_FALSE(outputs[0].ok());
  EXPECT_EQ(outputs[0].error, "build crashed: signal 11 (SIGSEGV)");
  EXPECT_FALSE(outputs[1].ok());
  EXPECT_EQ(outputs[1].error, "build timed out after 1.5 s");
  EXPECT_GE(outputs[1].seconds, 1.5);
  EXPECT_LT(outputs[1].seconds, 30);
  ASSERT_TRUE(outputs[2].ok()) << outputs[2].error;
  ExpectCorrect(inputs[2].module, *outputs[2].executable);
  EXPECT_TRUE(NoChildProcesses());
}

TEST(IsolatedBuild, AnExitAnLlvmFatalErrorAndAnErrorAreTheCandidatesFailure) {
  std::vector<BuildInput> inputs = {{MatmulRelu(9, kExit), {}},
                                    {MatmulRelu(10, kLlvmFatal), {}},
                                    {MatmulRelu(11, kThrow), {}},
                                    {MatmulRelu(13), {}}};
  LocalBuilder builder({.num_workers = 2, .in_child_before_compile = InjectFault});
  std::vector<BuildOutput> outputs = builder.Build(inputs);
  ASSERT_EQ(outputs.size(), 4u);
  EXPECT_EQ(outputs[0].error, "build crashed: the build process exited with status 3");
  EXPECT_EQ(outputs[1].error, "build crashed: LLVM ERROR: injected fatal error");
  EXPECT_EQ(outputs[2].error, "build failed: injected error");
  ASSERT_TRUE(outputs[3].ok()) << outputs[3].error;
  ExpectCorrect(inputs[3].module, *outputs[3].executable);
  EXPECT_TRUE(NoChildProcesses());
}

TEST(IsolatedBuild, ABuildErrorReadsAsInProcess) {
  // No function "other": the same error isolated and in process.
  BuildInput input{MatmulRelu(14), {}};
  input.options.function = "other";
  BuildOutput isolated = LocalBuilder(1).Build({input})[0];
  BuildOutput in_process = LocalBuilder({.num_workers = 1, .isolate = false}).Build({input})[0];
  EXPECT_FALSE(isolated.ok());
  EXPECT_EQ(isolated.error.rfind("build failed: ", 0), 0u) << isolated.error;
  EXPECT_EQ(isolated.error, in_process.error);
}

TEST(IsolatedBuild, TheParentLinksTheChildsObjectsWithoutCompilingThem) {
  backends::KernelObjectCache& cache = backends::KernelObjectCache::Global();
  ir::IRModule module = MatmulRelu(23);
  backends::KernelObjectCache::Stats before = cache.stats();
  BuildOutput output = LocalBuilder(1).Build({{module, {}}})[0];
  ASSERT_TRUE(output.ok()) << output.error;
  backends::KernelObjectCache::Stats after = cache.stats();
  // The child compiled the new kernels (its misses are its own); this process found them all.
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_GT(after.hits, before.hits);
  EXPECT_GT(after.objects, before.objects);
  ExpectCorrect(module, *output.executable);
}

TEST(IsolatedBuild, ACandidateWhoseKernelsAreAllCachedBuildsWithoutAChild) {
  backends::KernelObjectCache& cache = backends::KernelObjectCache::Global();
  LocalBuilder builder(1);
  ir::IRModule module = MatmulRelu(29);
  BuildOutput first = builder.Build({{module, {}}})[0];
  ASSERT_TRUE(first.ok()) << first.error;
  EXPECT_EQ(builder.child_processes(), 1);  // new kernels: compiled in a child
  // The same kernels again, in another module (other weights, another function name): nothing
  // to compile, so no child; the build finds every object in the cache.
  ir::IRModule same_kernels = MatmulRelu(29);
  same_kernels.attrs().Set("test.other", int64_t{1});
  backends::KernelObjectCache::Stats before = cache.stats();
  BuildOutput second = builder.Build({{same_kernels, {}}, {module, {}}})[0];
  ASSERT_TRUE(second.ok()) << second.error;
  EXPECT_EQ(builder.child_processes(), 1);
  backends::KernelObjectCache::Stats after = cache.stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_GT(after.hits, before.hits);
  ExpectCorrect(same_kernels, *second.executable);
  // One new kernel among cached ones: a child again.
  BuildOutput third = builder.Build({{MatmulRelu(31), {}}})[0];
  ASSERT_TRUE(third.ok()) << third.error;
  EXPECT_EQ(builder.child_processes(), 2);
  EXPECT_TRUE(NoChildProcesses());
}

TEST(IsolatedBuild, InProcessBuildsStayAvailable) {
  ir::IRModule module = MatmulRelu(17);
  BuildOutput output = LocalBuilder({.isolate = false}).Build({{module, {}}})[0];
  ASSERT_TRUE(output.ok()) << output.error;
  ExpectCorrect(module, *output.executable);
  EXPECT_THROW(LocalBuilder({.isolate = false, .in_child_before_compile = InjectFault}), ir::Error);
  EXPECT_THROW(LocalBuilder({.timeout_seconds = 0}), ir::Error);
  EXPECT_THROW(LocalBuilder({.num_workers = -1}), ir::Error);
}

// MockTune's choice c0 crashes its build and c2 hangs: the pass measures the three, records
// the two failures with their reasons and picks c1.
TEST(IsolatedBuild, ATuningPassGoesOnPastCrashingAndHangingBuilds) {
  passes::PassRegistry registry;
  testing::RegisterPassesWithMockTune(registry);
  auto runner = std::make_shared<testing::MockRunner>();
  std::shared_ptr<Database> database = MakeInMemoryDatabase();
  LocalBuilder::Options build_options;
  build_options.timeout_seconds = 1.5;
  build_options.in_child_before_compile = [](const BuildInput& input) {
    int64_t choice = input.module.attrs().GetInt("mock.t", -1);
    if (choice == 0) raise(SIGSEGV);
    if (choice == 2) {
      while (true) pause();
    }
  };
  TuningSession::Options options;
  options.confirm_rounds = 0;
  passes::PassContext context;
  context.tuning = std::make_shared<TuningSession>(
      ir::Target{}, database, std::make_shared<LocalBuilder>(build_options), runner, options);
  ir::IRModule out = context.RunPipeline(
      *passes::ParsePipeline(R"(MockTune(choices=3, label="t"))", registry), testing::MockModule());
  EXPECT_EQ(out.attrs().GetInt("mock.t"), 1);
  EvaluationCounts counts = context.tuning->TotalCounts();
  EXPECT_EQ(counts.measured, 3);
  EXPECT_EQ(counts.failed, 2);
  EXPECT_EQ(runner->runs, 1);  // only c1 was built
  std::vector<std::string> errors;
  for (const Workload& workload : database->Workloads()) {
    for (const std::string& target : database->Targets(workload.hash)) {
      for (const TuningRecord& record : database->Records(workload.hash, target)) {
        if (!record.error.empty()) errors.push_back(record.error);
      }
    }
  }
  std::sort(errors.begin(), errors.end());
  EXPECT_EQ(errors, (std::vector<std::string>{"build crashed: signal 11 (SIGSEGV)",
                                              "build timed out after 1.5 s"}));
  EXPECT_TRUE(NoChildProcesses());
}

}  // namespace
}  // namespace tandem::tuning
