// Whole models built with backends::Build (legalize, default schedules, LLVM) and run with
// Executable::Run: the C++ model builders (frontend/model_builders.h, default configs) against
// backends::RunReference on random inputs, and the shared ONNX models (resnet18, mobilenet_v2,
// bert_small under TANDEM_MODELS_DIR; skipped when absent) against the outputs PyTorch recorded
// with them, at relative error below 1e-4. Build time and the latency of one run are printed,
// not asserted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "frontend/model_builders.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "tests/backends/compiled_test_util.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Builds `module`, runs it on `inputs` and expects `expected` within `tolerance` (relative
// error per output). A second run must give the same outputs again; its latency is printed.
void ExpectCompiledModelComputes(const std::string& label, const ir::IRModule& module,
                                 const std::vector<ir::Tensor>& inputs,
                                 const std::vector<ir::Tensor>& expected, double tolerance) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<backends::Executable> executable = backends::Build(module);
  double build_seconds = SecondsSince(start);
  std::vector<ir::KernelFunction> kernels;
  for (const auto& [name, kernel] : executable->module().kernel_functions()) {
    kernels.push_back(*kernel);
  }
  ASSERT_TRUE(testing::FunctionsWithInvalidGathers(backends::EmitAssembly(kernels)).empty())
      << "LLVM generated an invalid gather (see codegen_gather_test.cc); not run";

  std::vector<ir::Tensor> first = executable->Run(inputs);
  ASSERT_EQ(first.size(), expected.size());
  for (size_t i = 0; i < first.size(); ++i) {
    double error = ir::RelativeError(first[i], expected[i]);
    EXPECT_LT(error, tolerance) << label << " output " << i;
    std::cout << "[ model    ] " << label << " output " << i << ": relative error " << error
              << "\n";
  }
  start = std::chrono::steady_clock::now();
  std::vector<ir::Tensor> second = executable->Run(inputs);
  double run_seconds = SecondsSince(start);
  EXPECT_EQ(testing::Mismatch(second, first, 1e-12), "") << "a second run differs";
  std::cout << "[ model    ] " << label << ": build " << build_seconds << " s ("
            << executable->module().kernel_functions().size() << " kernels, "
            << executable->num_kernel_calls() << " calls, arena " << executable->arena_bytes()
            << " bytes), run " << run_seconds * 1e3 << " ms\n";
}

// A builder model against the reference interpreter on random inputs in [-1, 1).
void ExpectMatchesReference(const std::string& label, const ir::IRModule& module) {
  std::vector<ir::Tensor> inputs = backends::RandomInputs(module.Get("main"), 11);
  auto start = std::chrono::steady_clock::now();
  std::vector<ir::Tensor> expected = backends::RunReference(module, inputs);
  std::cout << "[ model    ] " << label << ": reference interpreter " << SecondsSince(start)
            << " s\n";
  ExpectCompiledModelComputes(label, module, inputs, expected, 1e-4);
}

TEST(CompiledModels, ResNetBasicBlock) {
  ExpectMatchesReference("resnet_basic_block", frontend::ResNetBasicBlock());
}

TEST(CompiledModels, ResNetBottleneck) {
  ExpectMatchesReference("resnet_bottleneck", frontend::ResNetBottleneck());
}

TEST(CompiledModels, MobileNetV2InvertedResidual) {
  ExpectMatchesReference("mobilenet_v2_inverted_residual", frontend::MobileNetV2InvertedResidual());
}

// Stride 2 on an odd extent, without the residual add.
TEST(CompiledModels, MobileNetV2InvertedResidualStride2) {
  ExpectMatchesReference(
      "mobilenet_v2_inverted_residual_stride2",
      frontend::MobileNetV2InvertedResidual(
          {.in_channels = 24, .out_channels = 32, .stride = 2, .height = 27, .width = 27}));
}

TEST(CompiledModels, BertEncoderLayer) {
  ExpectMatchesReference("bert_encoder_layer", frontend::BertEncoderLayer());
}

fs::path SharedModel(const std::string& name) {
  return fs::path(TANDEM_MODELS_DIR) / name;
}

// An imported ONNX model against the outputs recorded with it.
void ExpectOnnxModelMatchesRecordedOutputs(const std::string& name) {
  fs::path dir = SharedModel(name);
  if (!fs::exists(dir / "model.onnx")) {
    GTEST_SKIP() << "shared model " << dir << " is not available (TANDEM_MODELS_DIR)";
  }
  ir::IRModule module = frontend::ImportOnnxFile((dir / "model.onnx").string());
  std::string data = (dir / "test_data_set_0").string();
  ExpectCompiledModelComputes(name, module, frontend::ReadTensorProtoDirectory(data, "input"),
                              frontend::ReadTensorProtoDirectory(data, "output"), 1e-4);
}

TEST(CompiledModels, OnnxResNet18) {
  ExpectOnnxModelMatchesRecordedOutputs("resnet18");
}

TEST(CompiledModels, OnnxMobileNetV2) {
  ExpectOnnxModelMatchesRecordedOutputs("mobilenet_v2");
}

TEST(CompiledModels, OnnxBertSmall) {
  ExpectOnnxModelMatchesRecordedOutputs("bert_small");
}

}  // namespace
}  // namespace tandem
