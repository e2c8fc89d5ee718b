// Helpers for the tests of the rewriting passes (SimplifyExpr, CombineParallel*, AnnotateBackend):
// IR text in / expected IR text out, and semantic checks on the test models with the reference
// interpreter.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "frontend/model_builders.h"
#include "frontend/onnx_importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"

namespace tandem::passes::rewrite_testing {

// Runs `pipeline` (pipeline text) on `module`, verifying the IR after every pass.
inline ir::IRModule Run(const std::string& pipeline, const ir::IRModule& module,
                        const ir::Target& target = {}) {
  PassContext context;
  context.target = target;
  context.verify_each = true;
  return context.RunPipeline(*ParsePipeline(pipeline), module);
}

// Parses `input`, runs `pipeline` and expects the result to be structurally equal to `expected`
// (parsed the same way).
inline void ExpectRewrite(const std::string& pipeline, const std::string& input,
                          const std::string& expected) {
  ir::IRModule got = Run(pipeline, ir::ParseModule(input, "input"));
  ir::IRModule want = ir::ParseModule(expected, "expected");
  EXPECT_TRUE(ir::StructuralEqual(got, want)) << ir::StructuralDiff(got, want) << "\n--- got:\n"
                                              << ir::PrintModule(got) << "--- expected:\n"
                                              << ir::PrintModule(want);
}

// Expects `pipeline` to leave `input` structurally unchanged.
inline void ExpectUnchanged(const std::string& pipeline, const std::string& input) {
  ExpectRewrite(pipeline, input, input);
}

// Number of calls of `op` in the module's function "main".
inline int CountOps(const ir::IRModule& module, const std::string& op) {
  int count = 0;
  for (const ir::Node& node : module.Get("main").nodes) {
    count += node.kind == ir::NodeKind::kCall && node.op == op;
  }
  return count;
}

// The model names of the semantic checks: the four C++ builders at reduced sizes, and the
// shared ONNX models that are present.
inline std::vector<std::string> ModelNames() {
  std::vector<std::string> names = {"resnet_basic_block", "resnet_bottleneck", "mobilenet_v2_block",
                                    "bert_layer"};
  for (const char* name : {"resnet18", "mobilenet_v2", "bert_small"}) {
    if (std::filesystem::exists(std::filesystem::path(TANDEM_MODELS_DIR) / name / "model.onnx")) {
      names.push_back(name);
    }
  }
  return names;
}

// A test model by name (built or imported once per test program).
inline const ir::IRModule& Model(const std::string& name) {
  static std::map<std::string, ir::IRModule> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  ir::IRModule module;
  if (name == "resnet_basic_block") {
    module = frontend::ResNetBasicBlock({.channels = 8, .height = 10, .width = 10, .seed = 3});
  } else if (name == "resnet_bottleneck") {
    module = frontend::ResNetBottleneck(
        {.in_channels = 16, .mid_channels = 8, .height = 8, .width = 8, .seed = 4});
  } else if (name == "mobilenet_v2_block") {
    module = frontend::MobileNetV2InvertedResidual({.in_channels = 8,
                                                    .out_channels = 8,
                                                    .expansion = 4,
                                                    .height = 10,
                                                    .width = 10,
                                                    .seed = 5});
  } else if (name == "bert_layer") {
    module =
        frontend::BertEncoderLayer({.seq = 12, .hidden = 32, .heads = 4, .ffn = 64, .seed = 6});
  } else {
    module = frontend::ImportOnnxFile(
        (std::filesystem::path(TANDEM_MODELS_DIR) / name / "model.onnx").string());
  }
  return cache.emplace(name, std::move(module)).first->second;
}

// Random inputs of a model and its reference outputs on them (computed once per model).
struct ReferenceRun {
  std::vector<ir::Tensor> inputs;
  std::vector<ir::Tensor> outputs;
};

inline const ReferenceRun& Reference(const std::string& name) {
  static std::map<std::string, ReferenceRun> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const ir::IRModule& module = Model(name);
  ReferenceRun run;
  run.inputs = backends::RandomInputs(module.Get("main"), 17);
  run.outputs = backends::RunReference(module, run.inputs);
  return cache.emplace(name, std::move(run)).first->second;
}

// Expects `module` (a transformed test model) to compute what the model `name` computes on its
// random inputs, to a relative error below 1e-4.
inline void ExpectSameOutputs(const std::string& name, const ir::IRModule& module) {
  const ReferenceRun& reference = Reference(name);
  std::vector<ir::Tensor> got = backends::RunReference(module, reference.inputs);
  ASSERT_EQ(got.size(), reference.outputs.size()) << name;
  for (size_t i = 0; i < got.size(); ++i) {
    double error = ir::RelativeError(got[i], reference.outputs[i]);
    EXPECT_LT(error, 1e-4) << name << " output " << i;
  }
}

// Expects `module` (a transformed test model), lowered with default schedules and compiled, to
// compute what the model `name` computes on its random inputs, to a relative error below 1e-4.
inline void ExpectCompiledSameOutputs(const std::string& name, const ir::IRModule& module) {
  const ReferenceRun& reference = Reference(name);
  std::vector<ir::Tensor> got = backends::Build(Run("Legalize", module))->Run(reference.inputs);
  ASSERT_EQ(got.size(), reference.outputs.size()) << name;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LT(ir::RelativeError(got[i], reference.outputs[i]), 1e-4) << name << " output " << i;
  }
}

}  // namespace tandem::passes::rewrite_testing
