// Executables whose external functions cannot run in a forked child (cuBLAS: CUDA refuses a
// process forked after its parent initialized it) are measured by ProcessRunner in the tuning
// process. A test backend plays CUDA's part: its functions throw when they run in any process
// but the one that compiled them. Found on a GPU machine, where every cuBLAS candidate failed
// with "initialization error".
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "backends/external/external_backend.h"
#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "tuning/runner.h"

namespace tandem::tuning {
namespace {

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

void RegisterTestBackends() {
  static bool registered = false;
  if (registered) return;
  registered = true;
  auto& registry = backends::ExternalBackendRegistry::Global();
  registry.Register(std::make_shared<ProcessBoundBackend>("process_bound_test", true));
  registry.Register(std::make_shared<ProcessBoundBackend>("process_bound_undeclared_test", false));
}

RunInput PlacedRelu(const std::string& backend) {
  ir::IRModule module = ir::ParseModule(fmt::format(R"(module {{
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
  RunInput input;
  input.executable = backends::Build(module);
  input.inputs = backends::RandomInputs(module.Get("main"), 3);
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

TEST(ProcessRunner, MeasuresWhatCannotRunInAForkedProcessInThisProcess) {
  RegisterTestBackends();
  struct Enabled {
    Enabled() { ProcessBoundBackend::in_test = true; }
    ~Enabled() { ProcessBoundBackend::in_test = false; }
  } enabled;
  RunInput bound = PlacedRelu("process_bound_test");
  RunInput undeclared = PlacedRelu("process_bound_undeclared_test");
  EXPECT_FALSE(bound.executable->runs_in_forked_process());
  EXPECT_TRUE(undeclared.executable->runs_in_forked_process());
  ProcessRunner runner;
  std::vector<MeasureResult> results = runner.Run({undeclared, bound, undeclared}, FastOptions());
  ASSERT_EQ(results.size(), 3u);
  // Run in the tuning process, the bound function computes and is checked.
  EXPECT_TRUE(results[1].ok()) << results[1].error;
  EXPECT_LT(results[1].max_relative_error, 1e-6);
  // One that does not declare it fails in the worker, as cuBLAS did: the test's own control.
  for (size_t i : {0u, 2u}) {
    EXPECT_FALSE(results[i].ok());
    EXPECT_NE(results[i].error.find("other than the one that compiled it"), std::string::npos)
        << results[i].error;
  }
}

}  // namespace
}  // namespace tandem::tuning
