// The cuda target end to end without a GPU: target text, default_heuristic@cuda on the shared
// models, their kernels compiled to PTX and assembled by ptxas for every supported architecture,
// and the GPU-scheduled kernels computing the models' stored outputs (run on the CPU with their
// thread bindings as serial loops, which is what a binding means for a single thread).
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/cuda/gpu_executable.h"
#include "backends/cuda/ptxas.h"
#include "backends/external/external_backend.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/runtime/executable.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/kernel/functor.h"
#include "ir/target.h"
#include "passes/pass.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::passes {
namespace {

// The kernel with every thread-bound loop made serial.
class SerializeBindings : public ir::StmtMutator {
 protected:
  ir::Stmt VisitFor(const ir::ForNode* op, const ir::Stmt& s) override {
    ir::Stmt body = VisitStmt(op->body);
    if (!ir::IsThreadBinding(op->for_kind) && body == op->body) return s;
    ir::ForKind kind = ir::IsThreadBinding(op->for_kind) ? ir::ForKind::kSerial : op->for_kind;
    return ir::MakeFor(op->loop_var, op->extent, kind, body, op->annotations);
  }
};

TEST(CudaTarget, TextNamesTheArchitectureAndRejectsWhatDoesNotApply) {
  ir::Target target = ir::ParseTarget("cuda -arch=sm_90");
  EXPECT_EQ(target.kind, "cuda");
  EXPECT_EQ(target.arch, "sm_90");
  EXPECT_EQ(ir::ToString(target), "cuda -arch=sm_90");
  EXPECT_EQ(ir::ParseTarget(ir::ToString(target)), target);
  try {
    ir::ParseTarget("cuda -arch=sm_75");
    FAIL() << "an unknown architecture was accepted";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("supported: sm_80, sm_90"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ir::ParseTarget("cuda -cpu=znver3"), ir::Error);
  EXPECT_THROW(ir::ParseTarget("llvm -arch=sm_90"), ir::Error);
  // Build makes CPU executables: for a cuda target it says so instead of building CPU code.
  EXPECT_THROW(backends::BuildOptionsFor(target), ir::Error);
}

TEST(CudaTarget, SharedModelsBuildForCudaAssembleAndComputeTheirOutputs) {
  std::filesystem::path dir = TANDEM_MODELS_DIR;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no shared models at " << dir;
  PassContext context;
  context.target = ir::ParseTarget("cuda -arch=sm_90");
  context.verify_each = true;
  for (const char* name : {"resnet18", "mobilenet_v2", "bert_small"}) {
    SCOPED_TRACE(name);
    ir::IRModule module = frontend::ImportOnnxFile((dir / name / "model.onnx").string());
    ir::IRModule optimized = context.RunPipeline(
        *pipelines::PipelineRegistry::Global().Create("default_heuristic", context.target), module);
    ASSERT_FALSE(optimized.kernel_functions().empty());
    ir::IRModule serial = optimized;
    for (const auto& [kernel_name, kernel] : optimized.kernel_functions()) {
      bool bound = false;
      ir::VisitStmtTree(kernel->body, [&](const ir::Stmt& s) {
        const auto* loop = ir::As<ir::ForNode>(s);
        bound = bound || (loop && ir::IsThreadBinding(loop->for_kind));
      });
      EXPECT_TRUE(bound) << kernel_name << " has no thread binding";
      for (const std::string& arch : ir::CudaArchitectures()) {
        backends::GpuProgram program = backends::CompileGpuKernel(*kernel, {arch, 3});
        if (backends::cuda::PtxasPath().empty()) continue;
        backends::cuda::PtxasReport report = backends::cuda::AssemblePtx(program.ptx, arch);
        EXPECT_TRUE(report.accepted) << kernel_name << " for " << arch << ": " << report.log;
      }
      ir::KernelFunction serialized = *kernel;
      serialized.body = SerializeBindings().VisitStmt(kernel->body);
      serial.RemoveKernel(kernel_name);
      serial.AddKernel(std::move(serialized));
    }
    std::string data = (dir / name / "test_data_set_0").string();
    std::vector<ir::Tensor> inputs = frontend::ReadTensorProtoDirectory(data, "input");
    std::vector<ir::Tensor> expected = frontend::ReadTensorProtoDirectory(data, "output");
    std::vector<ir::Tensor> outputs = backends::Build(serial)->Run(inputs);
    ASSERT_EQ(outputs.size(), expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_LT(ir::RelativeError(outputs[i], expected[i]), 1e-4) << "output " << i;
    }
    // On a GPU: the model itself, run by the GPU executable.
    if (!backends::cuda::CudaAvailable()) continue;
    auto gpu = backends::cuda::GpuExecutable::Build(optimized);
    std::vector<ir::Tensor> gpu_outputs = gpu->Run(inputs);
    ASSERT_EQ(gpu_outputs.size(), expected.size());
    for (size_t i = 0; i < gpu_outputs.size(); ++i) {
      EXPECT_LT(ir::RelativeError(gpu_outputs[i], expected[i]), 1e-4) << "GPU output " << i;
    }
  }
}

// all_cublas@cuda: with a device, the matrix products of bert_small run in cuBLAS on the GPU
// executable's stream, in its device memory, and the model matches its stored outputs; without
// one, cuBLAS is unavailable and the pipeline places nothing (its kernels all ours).
TEST(CudaTarget, AllCublasRunsMatrixProductsInCublasOnTheDevice) {
  std::filesystem::path dir = std::filesystem::path(TANDEM_MODELS_DIR) / "bert_small";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no shared model at " << dir;
  PassContext context;
  context.target = ir::ParseTarget("cuda -arch=sm_90");
  ir::IRModule module = frontend::ImportOnnxFile((dir / "model.onnx").string());
  ir::IRModule optimized = context.RunPipeline(
      *pipelines::PipelineRegistry::Global().Create("all_cublas", context.target), module);
  int placed = 0;
  for (const ir::Node& node : optimized.Get("main").nodes) {
    placed += node.kind == ir::NodeKind::kCallExtern;
  }
  std::string why;
  const backends::ExternalBackend* cublas =
      backends::ExternalBackendRegistry::Global().Find("cublas");
  if (cublas == nullptr || !cublas->Available(&why)) {
    EXPECT_EQ(placed, 0);
    GTEST_SKIP() << "cuBLAS unavailable: " << (cublas ? why : "not compiled in");
  }
  EXPECT_GT(placed, 0);
  std::string data = (dir / "test_data_set_0").string();
  std::vector<ir::Tensor> inputs = frontend::ReadTensorProtoDirectory(data, "input");
  std::vector<ir::Tensor> expected = frontend::ReadTensorProtoDirectory(data, "output");
  auto gpu = backends::cuda::GpuExecutable::Build(optimized);
  for (int run = 0; run < 2; ++run) {  // the second run reuses the uploaded weights
    std::vector<ir::Tensor> outputs = gpu->Run(inputs);
    ASSERT_EQ(outputs.size(), expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_LT(ir::RelativeError(outputs[i], expected[i]), 1e-4) << "output " << i;
    }
  }
}

TEST(CudaTarget, GpuExecutableNeedsADevice) {
  if (backends::cuda::CudaAvailable()) GTEST_SKIP() << "a CUDA device is present";
  ir::IRModule module;
  try {
    backends::cuda::GpuExecutable::Build(module);
    FAIL() << "built without a device";
  } catch (const ir::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace tandem::passes
