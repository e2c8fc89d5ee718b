// The built-in lowering pipelines (ours alone, and with oneDNN placed), on each shared ONNX
// model: optimize, build (LLVM and oneDNN), run, and compare with the outputs stored beside the
// model.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/runtime/executable.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::passes {
namespace {

TEST(BuiltinPipelines, SharedModelsMatchTheirStoredOutputs) {
  std::filesystem::path dir = TANDEM_MODELS_DIR;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no shared models at " << dir;
  for (const char* pipeline : {"default_heuristic", "all_onednn"}) {
    for (const char* name : {"resnet18", "mobilenet_v2", "bert_small"}) {
      SCOPED_TRACE(std::string(pipeline) + " on " + name);
      ir::IRModule module = frontend::ImportOnnxFile((dir / name / "model.onnx").string());
      PassContext context;
      context.verify_each = true;
      ir::IRModule optimized =
          context.RunPipeline(*pipelines::PipelineRegistry::Global().Create(pipeline), module);
      auto exe = backends::Build(optimized);
      auto inputs =
          frontend::ReadTensorProtoDirectory((dir / name / "test_data_set_0").string(), "input");
      auto expected =
          frontend::ReadTensorProtoDirectory((dir / name / "test_data_set_0").string(), "output");
      auto outputs = exe->Run(inputs);
      ASSERT_EQ(outputs.size(), expected.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        EXPECT_LT(ir::RelativeError(outputs[i], expected[i]), 1e-4);
      }
    }
  }
}

// `joint` runs the `sequential` pipeline's chain as its BestOf alternative, after the same
// heuristic passes: the candidate `sequential` picks is always among joint's finalists.
TEST(BuiltinPipelines, JointComparesItsSearchWithTheSequentialChain) {
  PassPtr joint = pipelines::PipelineRegistry::Global().Create("joint");
  PassPtr sequential = pipelines::PipelineRegistry::Global().Create("sequential");
  std::vector<PassPtr> before;
  PassPtr best_of;
  for (const PassPtr& pass : joint->nested()) {
    if (pass->name() == "BestOf") {
      best_of = pass;
      break;
    }
    before.push_back(pass);
  }
  ASSERT_TRUE(best_of);
  ASSERT_EQ(best_of->side_pipelines().size(), 1u);
  EXPECT_EQ(best_of->side_pipelines()[0].first, "alternative");
  std::vector<PassPtr> chain = before;
  for (const PassPtr& pass : best_of->side_pipelines()[0].second->nested()) chain.push_back(pass);
  EXPECT_EQ(PrintPipeline(*MakeSequential(chain)), PrintPipeline(*sequential));
  // BestOf is joint's last pass: nothing runs after the comparison.
  EXPECT_EQ(joint->nested().back(), best_of);
}

}  // namespace
}  // namespace tandem::passes
