// Helpers for pass tests: IR text in / expected IR text out, and semantic checks on models.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

#include "backends/reference/interpreter.h"
#include "frontend/model_builders.h"
#include "frontend/onnx_importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"

namespace tandem::passes::testing {

inline ir::IRModule RunText(const std::string& pipeline, const ir::IRModule& module) {
  PassContext context;
  context.verify_each = true;
  return context.RunPipeline(*ParsePipeline(pipeline), module);
}

// Parses `input`, runs `pipeline`, and compares with `expected` (also parsed).
inline void ExpectTransforms(const std::string& pipeline, const std::string& input,
                             const std::string& expected) {
  ir::IRModule got = RunText(pipeline, ir::ParseModule(input, "input"));
  ir::IRModule want = ir::ParseModule(expected, "expected");
  EXPECT_TRUE(ir::StructuralEqual(got, want))
      << ir::StructuralDiff(got, want) << "\n--- got:\n" << ir::PrintModule(got) << "--- expected:\n"
      << ir::PrintModule(want);
}

// The models every pass is checked on: the C++ builders at reduced sizes, and the shared ONNX
// models when present.
inline std::vector<std::pair<std::string, ir::IRModule>> TestModels(bool with_onnx = true) {
  std::vector<std::pair<std::string, ir::IRModule>> models = {
      {"resnet_basic_block", frontend::ResNetBasicBlock({.channels = 16, .height = 14, .width = 14})},
      {"resnet_bottleneck", frontend::ResNetBottleneck({.in_channels = 32, .mid_channels = 16, .height = 8, .width = 8})},
      {"mobilenet_v2_block", frontend::MobileNetV2InvertedResidual({.in_channels = 16, .out_channels = 16, .height = 14, .width = 14})},
      {"bert_layer", frontend::BertEncoderLayer({.seq = 16, .hidden = 64, .heads = 4, .ffn = 128})},
  };
  std::filesystem::path dir = TANDEM_MODELS_DIR;
  if (with_onnx && std::filesystem::exists(dir)) {
    for (const char* name : {"resnet18", "mobilenet_v2", "bert_small"}) {
      models.emplace_back(name, frontend::ImportOnnxFile((dir / name / "model.onnx").string()));
    }
  }
  return models;
}

// Runs `pipeline` on every test model and checks the outputs against the unmodified model on
// random inputs.
inline void ExpectPreservesSemantics(const std::string& pipeline, double tolerance = 1e-4,
                                     bool with_onnx = true) {
  for (auto& [name, module] : TestModels(with_onnx)) {
    SCOPED_TRACE(name + " with " + pipeline);
    ir::IRModule out = RunText(pipeline, module);
    auto inputs = backends::RandomInputs(module.Get("main"), 11);
    auto want = backends::RunReference(module, inputs);
    auto got = backends::RunReference(out, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(ir::RelativeError(got[i], want[i]), tolerance);
  }
}

inline int CountOps(const ir::IRModule& m, const std::string& op) {
  int n = 0;
  for (const ir::Node& node : m.Get("main").nodes) n += node.kind == ir::NodeKind::kCall && node.op == op;
  return n;
}

}  // namespace tandem::passes::testing
