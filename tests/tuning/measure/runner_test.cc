// The tuning builder and runners with real builds: LocalBuilder isolates a failing build and
// builds in parallel what it builds serially; ProcessRunner and InProcessRunner measure and check
// outputs against the reference interpreter; ProcessRunner survives candidates whose generated
// code really segfaults or never ends, and leaves no child process behind; it measures what
// cannot run in a forked child (a GPU context) in its measurement server, which rebuilds the
// candidates and isolates them the same way (tested with CPU candidates sent there).
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <tuple>

#include <fmt/format.h>

#include "backends/external/external_backend.h"
#include "backends/reference/interpreter.h"
#include "backends/runtime/thread_pool.h"
#include "ir/error.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/parser.h"
#include "tests/common/mock_tuning.h"
#include "tuning/measure/builder.h"
#include "tuning/measure/runner.h"

namespace tandem::tuning {
namespace {

ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

ir::IRModule MatmulRelu(int64_t columns = 12, uint64_t seed = 1) {
  return testing::MatmulReluModule(columns, seed);
}

// A module whose graph calls one hand-written kernel of signature f32[4] -> f32[4].
ir::IRModule KernelModule(const std::string& kernel_text, bool add_kernel = true) {
  ir::KernelFunction kernel = ir::ParseKernel(kernel_text);
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", F32({4}));
  ir::ValueId y = b.CallKernel(kernel, {x}, "custom");
  ir::IRModule module;
  module.Add(b.Finish(y));
  if (add_kernel) module.AddKernel(kernel);
  return module;
}

std::shared_ptr<backends::Executable> BuildOrFail(const ir::IRModule& module) {
  std::vector<BuildOutput> built = LocalBuilder(1).Build({BuildInput{module, {}}});
  EXPECT_TRUE(built[0].ok()) << built[0].error;
  return built[0].executable;
}

// A candidate with random inputs and the reference interpreter's outputs as expected ones.
RunInput CheckedInput(const ir::IRModule& module, std::shared_ptr<backends::Executable> exe,
                      uint64_t seed = 7) {
  RunInput input;
  input.executable = std::move(exe);
  input.inputs = backends::RandomInputs(module.Get("main"), seed);
  input.expected = backends::RunReference(module, input.inputs);
  return input;
}

MeasureOptions FastOptions() {
  MeasureOptions options;
  options.warmup_runs = 1;
  options.repeats = 3;
  options.min_repeat_seconds = 0.001;
  options.timeout_seconds = 20;
  return options;
}

// True when this process has no child left, running or zombie.
bool NoChildProcesses() {
  return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

void ExpectMeasured(const MeasureResult& result, const MeasureOptions& options) {
  EXPECT_TRUE(result.ok()) << result.error;
  EXPECT_GT(result.median_seconds, 0);
  EXPECT_EQ(result.run_seconds.size(), static_cast<size_t>(options.repeats));
  for (double seconds : result.run_seconds) EXPECT_GT(seconds, 0);
  EXPECT_LT(result.max_relative_error, 1e-5);
}

// Runs the good and the wrong-expectation candidates through `runner`.
void MeasuresAndChecks(Runner& runner) {
  ir::IRModule module = MatmulRelu();
  RunInput good = CheckedInput(module, BuildOrFail(module));
  ASSERT_TRUE(good.executable);
  RunInput wrong = good;
  wrong.expected = {good.expected[0].Clone()};
  for (int64_t k = 0; k < wrong.expected[0].num_elements(); ++k) {
    wrong.expected[0].SetDouble(k, good.expected[0].GetDouble(k) + 1.0);
  }
  RunInput unchecked = good;
  unchecked.expected.clear();
  MeasureOptions options = FastOptions();
  std::vector<MeasureResult> results = runner.Run({good, wrong, unchecked}, options);
  ASSERT_EQ(results.size(), 3u);
  ExpectMeasured(results[0], options);
  EXPECT_EQ(results[1].error.rfind("wrong result: relative error ", 0), 0u) << results[1].error;
  EXPECT_NE(results[1].error.find("> 0.0001 on output 0"), std::string::npos) << results[1].error;
  EXPECT_GT(results[1].max_relative_error, 1e-4);
  ExpectMeasured(results[2], options);
  EXPECT_EQ(results[2].max_relative_error, 0);
}

TEST(ProcessRunner, MeasuresAndChecksOutputs) {
  {
    ProcessRunner runner;
    MeasuresAndChecks(runner);
  }
  EXPECT_TRUE(NoChildProcesses());  // the workers and, with the runner, its server are gone
}

// A runner that sends every candidate to its measurement server.
ProcessRunner ServerOnlyRunner() {
  return ProcessRunner(ProcessRunner::Options{[](const backends::Executable&) { return true; }});
}

TEST(ProcessRunner, MeasurementServerRebuildsMeasuresAndChecks) {
  {
    ProcessRunner runner = ServerOnlyRunner();
    MeasuresAndChecks(runner);
    // The server measures batch after batch.
    ir::IRModule module = KernelModule(testing::kDoublingKernel);
    RunInput twice = CheckedInput(module, BuildOrFail(module));
    std::vector<MeasureResult> results = runner.Run({twice}, FastOptions());
    ExpectMeasured(results[0], FastOptions());
  }
  EXPECT_TRUE(NoChildProcesses());
}

// A candidate that hangs, one that crashes (both on the same inputs) and one that computes and is
// checked (it doubles its input).
std::tuple<RunInput, RunInput, RunInput> HangCrashAndGoodInputs() {
  ir::IRModule hang_module = KernelModule(testing::kHangingKernel);
  ir::IRModule crash_module = KernelModule(testing::kCrashingKernel);
  ir::IRModule twice_module = KernelModule(testing::kDoublingKernel);
  RunInput hang;
  hang.executable = BuildOrFail(hang_module);
  hang.inputs = backends::RandomInputs(hang_module.Get("main"), 3);
  RunInput crash;
  crash.executable = BuildOrFail(crash_module);
  crash.inputs = hang.inputs;
  return {hang, crash, CheckedInput(twice_module, BuildOrFail(twice_module))};
}

TEST(ProcessRunner, MeasurementServerSurvivesCrashingAndHangingCandidates) {
  auto [hang, crash, twice] = HangCrashAndGoodInputs();
  ASSERT_TRUE(hang.executable && crash.executable && twice.executable);

  MeasureOptions options = FastOptions();
  options.timeout_seconds = 1;
  auto start = std::chrono::steady_clock::now();
  {
    std::vector<MeasureResult> results =
        ServerOnlyRunner().Run({twice, crash, hang, twice}, options);
    ASSERT_EQ(results.size(), 4u);
    ExpectMeasured(results[0], options);
    EXPECT_EQ(results[1].error, "crashed: signal 11 (SIGSEGV)");
    EXPECT_TRUE(results[1].run_seconds.empty());
    EXPECT_EQ(results[2].error, "timed out after 1 s");
    ExpectMeasured(results[3], options);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 1.0);  // the hang was given its whole second
  EXPECT_LT(seconds, 10.0);
  EXPECT_TRUE(NoChildProcesses());
}

TEST(InProcessRunner, MeasuresAndChecksOutputs) {
  InProcessRunner runner;
  MeasuresAndChecks(runner);
}

TEST(ProcessRunner, CrashingCandidateIsRecordedAndTheBatchGoesOn) {
  ir::IRModule good_module = MatmulRelu();
  ir::IRModule crash_module = KernelModule(testing::kCrashingKernel);
  ir::IRModule twice_module = KernelModule(testing::kDoublingKernel);
  RunInput good = CheckedInput(good_module, BuildOrFail(good_module));
  RunInput crash;
  crash.executable = BuildOrFail(crash_module);
  crash.inputs = backends::RandomInputs(crash_module.Get("main"), 3);
  RunInput twice = CheckedInput(twice_module, BuildOrFail(twice_module));
  ASSERT_TRUE(good.executable && crash.executable && twice.executable);

  MeasureOptions options = FastOptions();
  std::vector<MeasureResult> results = ProcessRunner().Run({good, crash, twice, good}, options);
  ASSERT_EQ(results.size(), 4u);
  ExpectMeasured(results[0], options);
  EXPECT_EQ(results[1].error, "crashed: signal 11 (SIGSEGV)");
  EXPECT_TRUE(results[1].run_seconds.empty());
  ExpectMeasured(results[2], options);
  ExpectMeasured(results[3], options);
  EXPECT_TRUE(NoChildProcesses());
}

TEST(ProcessRunner, HangingCandidateTimesOutAndTheBatchGoesOn) {
  auto [hang, crash, twice] = HangCrashAndGoodInputs();
  ASSERT_TRUE(hang.executable && crash.executable && twice.executable);

  // Three workers: the first hangs, its successor crashes, the third finishes the batch.
  MeasureOptions options = FastOptions();
  options.timeout_seconds = 1;
  auto start = std::chrono::steady_clock::now();
  std::vector<MeasureResult> results = ProcessRunner().Run({twice, hang, crash, twice}, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(results.size(), 4u);
  ExpectMeasured(results[0], options);
  EXPECT_EQ(results[1].error, "timed out after 1 s");
  EXPECT_EQ(results[2].error, "crashed: signal 11 (SIGSEGV)");
  ExpectMeasured(results[3], options);
  EXPECT_GE(seconds, 1.0);  // the hang was given its whole second
  EXPECT_LT(seconds, 10.0);
  EXPECT_TRUE(NoChildProcesses());
}

TEST(ProcessRunner, WorkerThreadCountStaysInTheWorker) {
  ir::IRModule module = MatmulRelu();
  RunInput good = CheckedInput(module, BuildOrFail(module));
  int threads = backends::ThreadPool::Global().num_threads();
  MeasureOptions options = FastOptions();
  options.num_threads = threads == 1 ? 2 : 1;
  std::vector<MeasureResult> results = ProcessRunner().Run({good}, options);
  ExpectMeasured(results[0], options);
  EXPECT_EQ(backends::ThreadPool::Global().num_threads(), threads);
}

// Executables whose external functions cannot run in a forked child (cuBLAS: CUDA refuses a
// process forked after its parent initialized it) are measured by ProcessRunner in the tuning
// process's measurement server. A test backend plays CUDA's part: its functions throw when they run
// in any process but the one that compiled them. Found on a GPU machine, where every cuBLAS
// candidate failed with "initialization error".
class ProcessBoundRelu : public backends::ExternalFunction {
 public:
  ProcessBoundRelu(int64_t elements, bool declared) : elements_(elements), declared_(declared) {}
  void Run(void* const* arguments) override {
    if (getpid() != owner_) throw ir::Error("ran in a process other than the one that compiled it");
    const float* in = static_cast<const float*>(arguments[0]);
    float* out = static_cast<float*>(arguments[1]);
    for (int64_t i = 0; i < elements_; ++i) out[i] = std::max(in[i], 0.0f);
  }
  std::string Describe() const override { return "process-bound relu"; }
  bool runs_in_forked_process() const override { return !declared_; }

 private:
  pid_t owner_ = getpid();
  int64_t elements_;
  bool declared_;  // whether it says it cannot run in a forked child
};

class ProcessBoundBackend : public backends::ExternalBackend {
 public:
  ProcessBoundBackend(std::string name, bool declared)
      : name_(std::move(name)), declared_(declared) {}
  std::string name() const override { return name_; }
  // Available to placement passes only inside the test below: the registry is global, and the
  // other tests of this program must not see these backends.
  bool Available(std::string*) const override { return in_test; }
  static inline bool in_test = false;
  const std::vector<backends::Pattern>& patterns() const override {
    static const std::vector<backends::Pattern> patterns = {
        backends::Pattern{"relu", backends::OpMatcher{{"relu"}, nullptr, "", false}, {}}};
    return patterns;
  }
  std::unique_ptr<backends::ExternalFunction> Compile(
      const ir::GraphFunction& subgraph) const override {
    int64_t elements = subgraph.OutputTensorTypes().at(0).num_elements();
    return std::make_unique<ProcessBoundRelu>(elements, declared_);
  }

 private:
  std::string name_;
  bool declared_;
};

// A backend that compiles only in the test's process: what the measurement server cannot rebuild.
class CompilesHereOnlyBackend : public ProcessBoundBackend {
 public:
  CompilesHereOnlyBackend() : ProcessBoundBackend("compiles_here_only_test", true) {}
  std::unique_ptr<backends::ExternalFunction> Compile(
      const ir::GraphFunction& subgraph) const override {
    if (getpid() != owner_) throw ir::Error("compiled outside the test process");
    return ProcessBoundBackend::Compile(subgraph);
  }

 private:
  pid_t owner_ = getpid();
};

void RegisterTestBackends() {
  static bool registered = false;
  if (registered) return;
  registered = true;
  auto& registry = backends::ExternalBackendRegistry::Global();
  registry.Register(std::make_shared<ProcessBoundBackend>("process_bound_test", true));
  registry.Register(std::make_shared<ProcessBoundBackend>("process_bound_undeclared_test", false));
  registry.Register(std::make_shared<CompilesHereOnlyBackend>());
}

// A module whose main function calls relu through `backend` (a call_extern).
ir::IRModule PlacedRelu(const std::string& backend) {
  return ir::ParseModule(fmt::format(R"(module {{
graph @main(%x: f32[64]) -> f32[64] {{
  %0 = call_extern @ext_0 relu(%x) : f32[64] @{{backend="{0}", pattern="relu"}}
  return %0
}}

graph @ext_0(%x: f32[64]) -> f32[64] attributes {{extern_backend="{0}", pattern="relu"}} {{
  %0 = relu(%x) : f32[64]
  return %0
}}
}})",
                                     backend));
}

TEST(ProcessRunner, MeasuresWhatCannotRunInAForkedProcessInTheMeasurementServer) {
  RegisterTestBackends();
  struct Enabled {
    Enabled() { ProcessBoundBackend::in_test = true; }
    ~Enabled() { ProcessBoundBackend::in_test = false; }
  } enabled;
  ir::IRModule bound_module = PlacedRelu("process_bound_test");
  ir::IRModule undeclared_module = PlacedRelu("process_bound_undeclared_test");
  RunInput bound = CheckedInput(bound_module, BuildOrFail(bound_module));
  RunInput undeclared = CheckedInput(undeclared_module, BuildOrFail(undeclared_module));
  EXPECT_FALSE(bound.executable->runs_in_forked_process());
  EXPECT_TRUE(undeclared.executable->runs_in_forked_process());
  ProcessRunner runner;
  std::vector<MeasureResult> results = runner.Run({undeclared, bound, undeclared}, FastOptions());
  ASSERT_EQ(results.size(), 3u);
  // Rebuilt and run in one measurement process, the bound function computes and is checked.
  EXPECT_TRUE(results[1].ok()) << results[1].error;
  EXPECT_LT(results[1].max_relative_error, 1e-6);
  // One that does not declare it fails in the worker, as cuBLAS did: the test's own control.
  for (size_t i : {0u, 2u}) {
    EXPECT_FALSE(results[i].ok());
    EXPECT_NE(results[i].error.find("other than the one that compiled it"), std::string::npos)
        << results[i].error;
  }
}

TEST(ProcessRunner, ACandidateTheMeasurementServerCannotRebuildFailsWithTheReason) {
  RegisterTestBackends();
  struct Enabled {
    Enabled() { ProcessBoundBackend::in_test = true; }
    ~Enabled() { ProcessBoundBackend::in_test = false; }
  } enabled;
  ir::IRModule here_only = PlacedRelu("compiles_here_only_test");
  ir::IRModule bound_module = PlacedRelu("process_bound_test");
  RunInput unbuildable = CheckedInput(here_only, BuildOrFail(here_only));
  RunInput bound = CheckedInput(bound_module, BuildOrFail(bound_module));
  std::vector<MeasureResult> results = ProcessRunner().Run({unbuildable, bound}, FastOptions());
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error.rfind("build failed in the measurement server: ", 0), 0u)
      << results[0].error;
  EXPECT_NE(results[0].error.find("compiled outside the test process"), std::string::npos)
      << results[0].error;
  EXPECT_TRUE(results[1].ok()) << results[1].error;
}

// A backend playing cuBLAS's part in CUDA's rules, on any machine: it checks availability with
// backends::MayInitializeCuda as the cuBLAS backend does (so it is unavailable in a process forked
// after its parent "initialized CUDA"), and its functions, which hold a "GPU context", fail when
// they run in a process that did not initialize it itself. Found on a GPU machine: a test program
// that used cuBLAS before constructing a ProcessRunner had its cuBLAS candidates fail in the
// measurement server, forked after CUDA was initialized.
std::atomic<int> fake_cuda_runs_here{0};  // runs of FakeCudaRelu in this process

class FakeCudaRelu : public backends::ExternalFunction {
 public:
  explicit FakeCudaRelu(int64_t elements) : elements_(elements) {}
  void Run(void* const* arguments) override {
    if (backends::CudaStateOfThisProcess() != backends::CudaState::kInitializedHere) {
      throw ir::Error("initialization error: CUDA used in a process that did not initialize it");
    }
    ++fake_cuda_runs_here;
    const float* in = static_cast<const float*>(arguments[0]);
    float* out = static_cast<float*>(arguments[1]);
    for (int64_t i = 0; i < elements_; ++i) out[i] = std::max(in[i], 0.0f);
  }
  std::string Describe() const override { return "fake CUDA relu"; }
  bool runs_in_forked_process() const override { return false; }

 private:
  int64_t elements_;
};

class FakeCudaBackend : public backends::ExternalBackend {
 public:
  std::string name() const override { return "fake_cuda_test"; }
  // Registered, and available, only in the forked child of the tests below (InForkedChild):
  // this process's registry and CUDA state stay as they were.
  bool Available(std::string* why) const override { return backends::MayInitializeCuda(why); }
  const std::vector<backends::Pattern>& patterns() const override {
    static const std::vector<backends::Pattern> patterns = {
        backends::Pattern{"relu", backends::OpMatcher{{"relu"}, nullptr, "", false}, {}}};
    return patterns;
  }
  std::unique_ptr<backends::ExternalFunction> Compile(
      const ir::GraphFunction& subgraph) const override {
    std::string why;
    if (!Available(&why)) throw ir::Error("fake CUDA backend: " + why);
    return std::make_unique<FakeCudaRelu>(subgraph.OutputTensorTypes().at(0).num_elements());
  }
};

// Runs `scenario` in a forked child of this process (whose registry and CUDA state it may change)
// and returns what it returned: "" when it went as expected, else what did not.
std::string InForkedChild(const std::function<std::string()>& scenario) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  omp_pause_resource_all(omp_pause_hard);  // (see tuning_resume_test.cc)
  pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    std::string report;
    try {
      backends::ExternalBackendRegistry::Global().Register(std::make_shared<FakeCudaBackend>());
      report = scenario();
    } catch (const std::exception& e) {
      report = std::string("threw: ") + e.what();
    }
    if (report.empty()) report = "ok";
    ssize_t written = write(fds[1], report.data(), report.size());
    _exit(written == static_cast<ssize_t>(report.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string received;
  char chunk[4096];
  for (ssize_t n; (n = read(fds[0], chunk, sizeof(chunk))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    received.append(chunk, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fmt::format("the child ended with wait status {}: {}", status, received);
  }
  return received == "ok" ? "" : received;
}

// A GPU candidate and a CPU candidate through `runner`: "" when both are measured and correct and
// the GPU one ran in this process exactly when `expect_here`.
std::string MeasureGpuAndCpu(ProcessRunner& runner, const RunInput& gpu, bool expect_here) {
  ir::IRModule cpu_module = MatmulRelu();
  RunInput cpu = CheckedInput(cpu_module, BuildOrFail(cpu_module));
  int runs_before = fake_cuda_runs_here.load();
  std::vector<MeasureResult> results = runner.Run({gpu, cpu, gpu}, FastOptions());
  std::string problems;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) problems += fmt::format("candidate {}: {}; ", i, results[i].error);
  }
  bool ran_here = fake_cuda_runs_here.load() != runs_before;
  if (ran_here != expect_here) {
    problems +=
        fmt::format("the GPU candidate ran {}in the tuning process", ran_here ? "" : "not ");
  }
  return problems;
}

TEST(ProcessRunner, GpuCandidatesRunOnlyInProcessesThatInitializedCudaThemselves) {
  ir::IRModule gpu_module = PlacedRelu("fake_cuda_test");
  // The runner first (as tuning sessions are made): its server was forked before this process
  // initialized CUDA (building the candidate does), so the server measures GPU candidates, each
  // in a measurement process that initializes CUDA itself.
  EXPECT_EQ(InForkedChild([&] {
              ProcessRunner runner;
              RunInput gpu = CheckedInput(gpu_module, BuildOrFail(gpu_module));
              if (backends::CudaStateOfThisProcess() != backends::CudaState::kInitializedHere) {
                return std::string("building the candidate did not initialize CUDA");
              }
              return MeasureGpuAndCpu(runner, gpu, /*expect_here=*/false);
            }),
            "");
  // The candidates first (a program that used the GPU before it made the runner): no process
  // forked from this one can use CUDA, so the GPU candidate is measured here, not failed (nor hung)
  // in the server; the CPU one still in a worker. Also with a runner that sends nothing to its
  // server: a GPU candidate never goes to a forked worker.
  EXPECT_EQ(InForkedChild([&] {
              RunInput gpu = CheckedInput(gpu_module, BuildOrFail(gpu_module));
              ProcessRunner runner;
              std::string problems = MeasureGpuAndCpu(runner, gpu, /*expect_here=*/true);
              ProcessRunner no_server(
                  ProcessRunner::Options{[](const backends::Executable&) { return false; }});
              return problems + MeasureGpuAndCpu(no_server, gpu, /*expect_here=*/true);
            }),
            "");
}

// A process forked after its parent initialized CUDA is told so, and never counts as having
// initialized it; one forked before may initialize it itself.
TEST(CudaState, AProcessForkedAfterInitializationMayNotUseCuda) {
  EXPECT_EQ(InForkedChild([] {
              auto in_grandchild = [](bool expect_allowed) {
                pid_t pid = fork();
                if (pid == 0) {
                  std::string why;
                  bool allowed = backends::MayInitializeCuda(&why);
                  bool told = allowed || why.find("forked from process") != std::string::npos;
                  _exit(allowed == expect_allowed && told ? 0 : 1);
                }
                int status = 0;
                waitpid(pid, &status, 0);
                return WIFEXITED(status) && WEXITSTATUS(status) == 0;
              };
              if (backends::CudaStateOfThisProcess() != backends::CudaState::kUntouched) {
                return std::string("CUDA initialized before the test");
              }
              if (!in_grandchild(true)) return std::string("refused before initialization");
              if (!backends::MayInitializeCuda()) return std::string("refused here");
              if (!in_grandchild(false)) return std::string("allowed after initialization");
              if (!backends::MayInitializeCuda()) return std::string("refused here again");
              return std::string();
            }),
            "");
}

TEST(ProcessRunner, CandidatesWithoutExecutableFailWithoutRunning) {
  ir::IRModule module = MatmulRelu();
  RunInput good = CheckedInput(module, BuildOrFail(module));
  std::vector<MeasureResult> results = ProcessRunner().Run({RunInput{}, good}, FastOptions());
  EXPECT_EQ(results[0].error, "no executable to measure");
  ExpectMeasured(results[1], FastOptions());
  EXPECT_TRUE(ProcessRunner().Run({}, FastOptions()).empty());
}

TEST(MeasureHere, RepeatsLastAtLeastTheMinimumTime) {
  ir::IRModule module = KernelModule(testing::kDoublingKernel);
  RunInput twice = CheckedInput(module, BuildOrFail(module));
  MeasureOptions options = FastOptions();
  options.min_repeat_seconds = 0.02;
  options.repeats = 3;
  options.flush_cache = true;
  auto start = std::chrono::steady_clock::now();
  MeasureResult result = MeasureHere(twice, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ExpectMeasured(result, options);
  EXPECT_GE(seconds, 0.06);
  // A tiny kernel looped for 20 ms: far less than a millisecond per run.
  EXPECT_LT(result.median_seconds, 1e-3);
}

TEST(MeasureHere, RejectsAWrongNumberOfExpectedOutputsAndBadOptions) {
  ir::IRModule module = KernelModule(testing::kDoublingKernel);
  RunInput twice = CheckedInput(module, BuildOrFail(module));
  twice.expected.push_back(twice.expected[0]);
  MeasureResult result = MeasureHere(twice, FastOptions());
  EXPECT_EQ(result.error, "wrong result: 2 expected outputs were given but the candidate has 1");
  twice.expected.pop_back();
  MeasureOptions options = FastOptions();
  options.repeats = 0;
  EXPECT_EQ(MeasureHere(twice, options).error.rfind("invalid measure options: repeats", 0), 0u);
  // Inputs of the wrong shape are the candidate's failure, not an exception.
  twice.inputs = {ir::Tensor(F32({5}))};
  EXPECT_EQ(MeasureHere(twice, FastOptions()).error.rfind("run failed: ", 0), 0u);
}

TEST(LocalBuilder, AFailedBuildIsThatCandidatesError) {
  std::vector<BuildInput> inputs = {
      {MatmulRelu(), {}},
      {KernelModule(testing::kDoublingKernel, /*add_kernel=*/false), {}},
      {KernelModule(testing::kDoublingKernel), {}}};
  std::vector<BuildOutput> outputs = LocalBuilder(3).Build(inputs);
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_TRUE(outputs[0].ok()) << outputs[0].error;
  EXPECT_FALSE(outputs[1].ok());
  EXPECT_EQ(outputs[1].error.rfind("build failed: ", 0), 0u) << outputs[1].error;
  EXPECT_NE(outputs[1].error.find("twice"), std::string::npos) << outputs[1].error;
  EXPECT_TRUE(outputs[2].ok()) << outputs[2].error;
  for (const BuildOutput& output : outputs) EXPECT_GT(output.seconds, 0);
  EXPECT_EQ(outputs[0].error, "");
  // The built ones work.
  ir::Tensor x = ir::Tensor::FromFloats({4}, {1, -2, 3.5, 0});
  std::vector<ir::Tensor> y = outputs[2].executable->Run({x});
  EXPECT_EQ(y[0].ToDoubles(), (std::vector<double>{2, -4, 7, 0}));
}

TEST(LocalBuilder, ParallelBuildsComputeWhatSerialBuildsCompute) {
  std::vector<BuildInput> inputs;
  for (int64_t columns : {12, 20, 7, 33, 16}) {
    inputs.push_back({MatmulRelu(columns, static_cast<uint64_t>(columns)), {}});
  }
  std::vector<BuildOutput> parallel = LocalBuilder(4).Build(inputs);
  std::vector<BuildOutput> serial = LocalBuilder(1).Build(inputs);
  std::vector<BuildOutput> per_core = LocalBuilder().Build(inputs);
  ASSERT_EQ(parallel.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(parallel[i].ok() && serial[i].ok() && per_core[i].ok()) << i;
    const ir::GraphFunction& main = inputs[i].module.Get("main");
    std::vector<ir::Tensor> x = backends::RandomInputs(main, 11);
    std::vector<ir::Tensor> want = backends::RunReference(inputs[i].module, x);
    std::vector<ir::Tensor> got = parallel[i].executable->Run(x);
    std::vector<ir::Tensor> got_serial = serial[i].executable->Run(x);
    std::vector<ir::Tensor> got_per_core = per_core[i].executable->Run(x);
    // Output i belongs to input i: its shape is that module's.
    ASSERT_EQ(got[0].shape(), want[0].shape()) << i;
    EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-5) << i;
    EXPECT_EQ(got[0].ToDoubles(), got_serial[0].ToDoubles()) << i;
    EXPECT_EQ(got[0].ToDoubles(), got_per_core[0].ToDoubles()) << i;
  }
  EXPECT_TRUE(LocalBuilder(2).Build({}).empty());
  EXPECT_THROW(LocalBuilder(-1), ir::Error);
}

}  // namespace
}  // namespace tandem::tuning
