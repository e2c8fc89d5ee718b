// Test doubles for tuning: MockTune, a one-knob tuning pass with N choices that tags the module
// with an attribute, and a deterministic runner whose latency is a known function of those tags
// (so the optimum is known: choice 1 of every knob), counting the candidates it runs.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <memory>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "ir/parser.h"
#include "passes/pass_registry.h"
#include "passes/tuning/knob_pass.h"
#include "tuning/measure/runner.h"
#include "tuning/session/tuning_session.h"

namespace tandem::testing {

// The relative error of `output` (a module the passes made from `model`), built and run, against
// the reference interpreter on `model`, on random inputs from `seed`.
inline double ErrorAgainstReference(const ir::IRModule& output, const ir::IRModule& model,
                                    uint64_t seed) {
  std::vector<ir::Tensor> inputs = backends::RandomInputs(model.Get("main"), seed);
  return ir::RelativeError(backends::Build(output)->Run(inputs)[0],
                           backends::RunReference(model, inputs)[0]);
}

inline constexpr const char* kMockPrefix = "mock.";

// MockTune(choices=N, label="x"): choices c0..c{N-1}; choice i sets module attribute
// mock.<label> = i.
struct MockTuneOptions : passes::SearchOptions {
  int64_t choices = 2;
  std::string label = "t";
};
inline void RegisterMockTune(passes::PassRegistry& registry) {
  passes::RegisterKnobPass<MockTuneOptions>(
      registry,
      {.name = "MockTune",
       .summary = "test knob",
       .arguments = {{"choices", &MockTuneOptions::choices, "number of choices"},
                     {"label", &MockTuneOptions::label, "attribute suffix"}}},
      [](const ir::IRModule&, passes::PassContext&, const MockTuneOptions& options) {
        int64_t count = options.choices;
        std::string label = options.label;
        std::vector<tuning::Choice> choices;
        for (int64_t i = 0; i < count; ++i) {
          choices.push_back({fmt::format("c{}", i), [label, i](const ir::IRModule& m) {
                               ir::IRModule out = m;
                               out.attrs().Set(kMockPrefix + label, i);
                               return out;
                             }});
        }
        return tuning::Knob("MockTune", std::move(choices));
      });
}

// Every registered pass plus MockTune.
inline void RegisterPassesWithMockTune(passes::PassRegistry& registry) {
  passes::RegisterAllPasses(registry);
  RegisterMockTune(registry);
}

// relu(x @ w + b) with constant weights of `seed`; `columns` varies the kernels between modules.
// For tests of the builder and the runner, which need real kernels.
inline ir::IRModule MatmulReluModule(int64_t columns, uint64_t seed) {
  auto f32 = [](ir::Shape shape) {
    return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
  };
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", f32({8, 16}));
  ir::ValueId w = b.Constant(ir::Tensor::Random(f32({16, columns}), seed), "w");
  ir::ValueId bias = b.Constant(ir::Tensor::Random(f32({columns}), seed + 1), "bias");
  ir::ValueId sum = b.Call("add", {b.Call("matmul", {x, w}), bias});
  ir::IRModule module;
  module.Add(b.Finish(b.Call("relu", {sum})));
  return module;
}

// The module mock-knob tests tune (the knobs only tag its attributes): one relu.
inline ir::IRModule MockModule() {
  return ir::ParseModule(R"(
graph @main(%x: f32[8]) -> f32[8] {
  %r = relu(%x) : f32[8]
  return %r
})");
}

// Latency 1 ms + 0.1 ms * sum over mock tags of |tag - 1|; counts runs.
class MockRunner : public tuning::Runner {
 public:
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    std::vector<tuning::MeasureResult> results;
    for (const tuning::RunInput& input : inputs) {
      ++runs;
      double seconds = 1e-3;
      for (const auto& [key, value] : input.executable->module().attrs().values()) {
        if (key.rfind(kMockPrefix, 0) == 0) {
          seconds += 1e-4 * std::abs(static_cast<double>(std::get<int64_t>(value) - 1));
        }
      }
      results.push_back(tuning::MeasureResult::FromRunSeconds({seconds, seconds, seconds}, 0));
    }
    return results;
  }
  int64_t runs = 0;
};

// A runner whose latency is a function of the module it runs (every repeat the same): for tests
// that decide on known latencies.
class LatencyRunner : public tuning::Runner {
 public:
  explicit LatencyRunner(std::function<double(const ir::IRModule&)> seconds_of)
      : seconds_of_(std::move(seconds_of)) {}
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    std::vector<tuning::MeasureResult> results;
    for (const tuning::RunInput& input : inputs) {
      double seconds = seconds_of_(input.executable->module());
      results.push_back(tuning::MeasureResult::FromRunSeconds({seconds, seconds, seconds}, 0));
    }
    return results;
  }

 private:
  std::function<double(const ir::IRModule&)> seconds_of_;
};

// Kernels that break a measurement, for the builder, runner and tuning-pass tests.
// Stores 2^40 elements (4 TiB) past the end of its output: the generated code segfaults.
constexpr char kCrashingKernel[] = R"(
  kernel @crash(%a: f32[4]) -> (%b: f32[4]) {
    for %i in 4 {
      %b[%i + 1099511627776] = %a[%i]
    }
  })";

// Adds %a[1] to %b[0] 2^60 times, in order (no reassociation): it never ends in practice.
constexpr char kHangingKernel[] = R"(
  kernel @hang(%a: f32[4]) -> (%b: f32[4]) {
    for %i in 4 {
      %b[%i] = %a[%i]
    }
    for %k in 1152921504606846976 {
      %b[0] = %b[0] + %a[1]
    }
  })";

// b = a * 2, computed in a way the reference can check.
constexpr char kDoublingKernel[] = R"(
  kernel @twice(%a: f32[4]) -> (%b: f32[4]) {
    for %i in 4 {
      %b[%i] = %a[%i] * 2.0
    }
  })";

}  // namespace tandem::testing
