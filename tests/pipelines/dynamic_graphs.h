// Helpers the tests of dynamic builds of graphs share (kernels/dynamic_extent.h): one build of a
// graph made at each size n, random inputs for all its parameters, the comparison of every
// output with the reference interpreter on the graph made at n, an expected build error, and a
// schedule provider that serves programs sampled from the CPU design space, as a tuning database
// would.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "backends/runtime/dynamic_executable.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/kernel/functor.h"
#include "ir/tensor.h"
#include "kernels/search/search_space.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::testing {

// A graph (module with "main") at the size n of its one symbol.
using MakeGraph = std::function<ir::IRModule(int64_t)>;

// The graph part of default_heuristic: its passes without the final Legalize.
inline std::string HeuristicGraphPasses() {
  return pipelines::WithoutFinalLegalize(
      pipelines::PipelineRegistry::Global().Get("default_heuristic").text);
}

// One build of `make` for n in [minimum, bound], after the graph passes `pipeline` (none when
// empty).
inline std::unique_ptr<backends::DynamicExecutable> BuildGraph(
    const MakeGraph& make, int64_t minimum, int64_t bound, const std::string& pipeline,
    const backends::BuildOptions& options = {}) {
  backends::DynamicModuleSource source;
  source.ranges = {{.symbol = "n", .minimum = minimum, .bound = bound}};
  source.make = [make, pipeline](const std::vector<int64_t>& n) {
    if (pipeline.empty()) return make(n.front());
    passes::PassContext context;
    return context.RunPipeline(*passes::ParsePipeline(pipeline), make(n.front()));
  };
  return backends::BuildDynamic(source, options);
}

// Random values for every parameter of `module`'s main, in order; deterministic in `seed`.
inline std::vector<ir::Tensor> RandomInputs(const ir::IRModule& module, uint64_t seed) {
  const ir::GraphFunction& main = module.Get("main");
  std::vector<ir::Tensor> inputs;
  for (size_t k = 0; k < main.params.size(); ++k) {
    inputs.push_back(ir::Tensor::Random(main.type_of(main.params[k]).tensor(), seed + 101 * k));
  }
  return inputs;
}

// Runs `dynamic` at the size n on random inputs and expects every output to have the shape and,
// within `tolerance` (relative), the values of the interpreter's on make(n).
inline void ExpectMatchesAt(backends::DynamicExecutable& dynamic, const MakeGraph& make, int64_t n,
                            uint64_t seed, double tolerance) {
  SCOPED_TRACE("n = " + std::to_string(n));
  ir::IRModule at_n = make(n);
  std::vector<ir::Tensor> inputs = RandomInputs(at_n, seed);
  std::vector<ir::Tensor> expected = backends::RunReference(at_n, inputs);
  std::vector<ir::Tensor> outputs = dynamic.Run(inputs);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    EXPECT_EQ(outputs[k].shape(), expected[k].shape()) << "output " << k;
    EXPECT_LT(ir::RelativeError(outputs[k], expected[k]), tolerance) << "output " << k;
  }
}

// Builds `make` once for n in [minimum, bound], with no graph passes and with
// default_heuristic's, and compares every output at several sizes with the interpreter's on the
// graph at that size.
inline void ExpectEverySizeMatches(const MakeGraph& make, int64_t minimum, int64_t bound = 40) {
  for (const std::string& pipeline : {std::string(), HeuristicGraphPasses()}) {
    SCOPED_TRACE("pipeline '" + pipeline + "'");
    std::unique_ptr<backends::DynamicExecutable> dynamic =
        BuildGraph(make, minimum, bound, pipeline);
    for (int64_t n : {bound, minimum, minimum + 1, int64_t{17}, bound - 1}) {
      ExpectMatchesAt(*dynamic, make, n, static_cast<uint64_t>(n), 1e-5);
    }
  }
}

// Expects building `make` dynamically (n in [1, 16], no graph passes) to fail with an Error
// containing `part`.
inline void ExpectBuildError(const MakeGraph& make, const std::string& part) {
  try {
    BuildGraph(make, 1, 16, "");
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// What a sampling schedule provider served.
struct SampledKernels {
  int sampled = 0;  // kernels served a sampled program
  int means = 0;    // blocks named "mean_sum..." among the kernels it was asked for
};

// A schedule provider that serves each kernel a program sampled (seeded by `seed`) from the CPU
// design space (multi-level tiling, cache_write, rfactor, parallel, vectorize, unroll, compute
// locations); counts into `counts`, which must outlive the build.
inline backends::BuildOptions SampledScheduleOptions(uint64_t seed, SampledKernels& counts) {
  auto random = std::make_shared<kernels::RandomState>(seed);
  backends::BuildOptions options;
  options.legalize.schedule_provider =
      [&counts, random,
       seed](const ir::KernelFunction& kernel) -> std::optional<ir::KernelFunction> {
    ir::VisitStmtTree(kernel.body, [&](const ir::Stmt& st) {
      const auto* realize = ir::As<ir::BlockRealizeNode>(st);
      counts.means += realize && realize->block->name.rfind("mean_sum", 0) == 0;
    });
    kernels::SearchSpace space = kernels::DefaultCpuSearchSpace(kernels::SearchTarget{});
    std::vector<kernels::Schedule> designs = kernels::GenerateDesignSpaces(kernel, space, seed);
    for (int attempt = 0; attempt < 8; ++attempt) {
      const kernels::Schedule& design = designs[static_cast<size_t>(attempt) % designs.size()];
      if (auto program = kernels::SampleProgram(kernel, design.trace(), space, *random)) {
        ++counts.sampled;
        ir::KernelFunction out = program->function();
        out.name = kernel.name;
        return out;
      }
    }
    return std::nullopt;
  };
  return options;
}

}  // namespace tandem::testing
