// tandem_gpu_operator_bench: Tandem's default GPU schedules against cuBLAS on the operator
// workloads of the MetaSchedule paper (bench/operator_workloads.h) plus GMM-4096, printed as one
// table on the CUDA device of this machine.
//
// Each workload's graph is lowered into one kernel (kernels::LowerGraphFunction), given its
// default GPU schedule, compiled to PTX for the device's architecture and loaded. Timing: CUDA
// events around the launches alone (operands already on the device), the median of --repeat
// timed runs after a warm-up; cuBLAS (f32 SGEMM, default math mode: no TF32) timed the same way
// on the same data, for the workloads that are one cuBLAS call: GMM at every size, and TBG's
// batched product (on operands already transposed, so cuBLAS skips the transposes Tandem's
// kernel performs). Results are checked: against the graph reference interpreter where it is
// quick (under 3e8 FLOP), and against cuBLAS's result where cuBLAS ran.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ptxas.h"
#include "backends/reference/interpreter.h"
#include "bench/operator_workloads.h"
#include "ir/error.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"

namespace tandem::bench {
namespace {

constexpr double kReferenceFlopLimit = 3e8;

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw ir::Error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}
void Check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw ir::Error(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(status)));
  }
}

// One batched row-major product C[b] = A[b] x B[b] for cuBLAS.
struct Product {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

struct CublasResult {
  double milliseconds = 0;
  ir::Tensor output;
};

// Times C = A x B (row-major, as the column-major C^T = B^T A^T) with cublasSgemmStridedBatched.
CublasResult RunCublas(const Product& p, const ir::Tensor& a, const ir::Tensor& b, int repeat) {
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  size_t a_bytes = a.num_bytes(), b_bytes = b.num_bytes();
  size_t c_bytes = static_cast<size_t>(p.batch * p.m * p.n) * sizeof(float);
  Check(cudaMalloc(reinterpret_cast<void**>(&da), a_bytes), "cudaMalloc");
  Check(cudaMalloc(reinterpret_cast<void**>(&db), b_bytes), "cudaMalloc");
  Check(cudaMalloc(reinterpret_cast<void**>(&dc), c_bytes), "cudaMalloc");
  Check(cudaMemcpy(da, a.raw_data(), a_bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  Check(cudaMemcpy(db, b.raw_data(), b_bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  cublasHandle_t handle;
  Check(cublasCreate(&handle), "cublasCreate");
  Check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  float one = 1, zero = 0;
  auto run = [&] {
    Check(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(p.n),
                                    static_cast<int>(p.m), static_cast<int>(p.k), &one, db,
                                    static_cast<int>(p.n), p.k * p.n, da, static_cast<int>(p.k),
                                    p.m * p.k, &zero, dc, static_cast<int>(p.n), p.m * p.n,
                                    static_cast<int>(p.batch)),
          "cublasSgemmStridedBatched");
  };
  run();
  Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "cudaEventCreate");
  Check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    Check(cudaEventRecord(start), "cudaEventRecord");
    run();
    Check(cudaEventRecord(stop), "cudaEventRecord");
    Check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  CublasResult result;
  result.milliseconds = times[times.size() / 2];
  result.output = ir::Tensor(ir::TensorType{{p.batch * p.m * p.n}, ir::DataType::kFloat32, ""});
  Check(cudaMemcpy(result.output.raw_data(), dc, c_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasDestroy(handle);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return result;
}

Workload MakeSquareMatmul(int64_t size, uint64_t seed) {
  Workload w;
  w.name = fmt::format("GMM-{}", size);
  w.shapes = fmt::format("[{0},{0}] x [{0},{0}]", size);
  w.flops = 2.0 * static_cast<double>(size * size * size);
  ir::GraphBuilder builder("main");
  ir::TensorType type{{size, size}, ir::DataType::kFloat32, ""};
  ir::ValueId a = builder.Input("a", type);
  ir::ValueId b = builder.Input("b", type);
  w.module.Add(builder.Finish(builder.Call("matmul", {a, b})));
  w.inputs = {ir::Tensor::Random(type, seed, -1, 1), ir::Tensor::Random(type, seed + 1, -1, 1)};
  return w;
}

// The product cuBLAS computes for the workload, when it is one call; with its operands.
std::optional<std::pair<Product, std::vector<ir::Tensor>>> CublasProduct(const Workload& w) {
  if (w.name.rfind("GMM", 0) == 0) {
    const ir::Shape& a = w.inputs[0].shape();
    const ir::Shape& b = w.inputs[1].shape();
    return std::make_pair(Product{1, a[0], b[1], a[1]}, w.inputs);
  }
  if (w.name == "TBG") {  // Q,K [1,128,12,64]: Q^T [12,128,64] x K^T [12,64,128]
    const ir::Tensor& q = w.inputs[0];
    const ir::Tensor& k = w.inputs[1];
    int64_t s = q.shape()[1], h = q.shape()[2], d = q.shape()[3];
    ir::Tensor qt(ir::TensorType{{h, s, d}, ir::DataType::kFloat32, ""});
    ir::Tensor kt(ir::TensorType{{h, d, s}, ir::DataType::kFloat32, ""});
    const float* qd = q.data<float>();
    const float* kd = k.data<float>();
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < h; ++j) {
        for (int64_t l = 0; l < d; ++l) {
          qt.data<float>()[(j * s + i) * d + l] = qd[(i * h + j) * d + l];
          kt.data<float>()[(j * d + l) * s + i] = kd[(i * h + j) * d + l];
        }
      }
    }
    return std::make_pair(Product{h, s, s, d}, std::vector<ir::Tensor>{qt, kt});
  }
  return std::nullopt;
}

double RelativeErrorFlat(const ir::Tensor& actual, const ir::Tensor& expected) {
  ir::Tensor flat(ir::TensorType{{actual.type().num_elements()}, actual.dtype(), ""});
  std::copy_n(static_cast<const uint8_t*>(actual.raw_data()), actual.num_bytes(),
              static_cast<uint8_t*>(flat.raw_data()));
  return ir::RelativeError(flat, expected);
}

// The graph's constants (the weights of the MM-* and DW* workloads) made inputs, appended to
// `w.inputs`: a GPU kernel takes every tensor as a parameter, as fusion hoists a model's weights.
void ConstantsAsInputs(Workload& w) {
  ir::GraphFunction main = w.module.Get("main");
  for (size_t id = 0; id < main.nodes.size(); ++id) {
    ir::Node& node = main.nodes[id];
    if (node.kind != ir::NodeKind::kConstant) continue;
    w.inputs.push_back(node.value);
    node.kind = ir::NodeKind::kInput;
    node.value = ir::Tensor();
    main.params.push_back(static_cast<ir::ValueId>(id));
  }
  w.module.Add(std::move(main));
}

int Main(int argc, char** argv) {
  CLI::App app{"Tandem's default GPU schedules against cuBLAS on the operator workloads"};
  std::string list;
  int repeat = 10;
  app.add_option("--workloads", list, "comma-separated workload names (default: all)");
  app.add_option("--repeat", repeat, "timed runs per contender (the median is reported)")
      ->check(CLI::PositiveNumber);
  std::string compile_only;
  app.add_option("--compile-only", compile_only,
                 "no device: only lower, schedule and compile every workload for this "
                 "architecture (sm_80, sm_90) and report launches and registers");
  CLI11_PARSE(app, argc, argv);
  std::string arch = compile_only;
  if (compile_only.empty()) {
    std::string reason = backends::cuda::CudaUnavailableReason();
    if (!reason.empty()) {
      std::cerr << reason << "\n";
      return 2;
    }
    const backends::cuda::DeviceInfo& device = backends::cuda::Device();
    arch = backends::cuda::DeviceArchitecture();
    fmt::print("device: {} ({}, {} SMs, driver {}); code for {}; {} timed runs, median\n",
               device.name, device.arch(), device.multiprocessor_count, device.driver_version, arch,
               repeat);
  } else {
    backends::CheckCudaArchitecture(arch);
  }
  std::vector<std::string> names = WorkloadNames();
  names.push_back("GMM-4096");
  if (!list.empty()) {
    names.clear();
    for (size_t at = 0; at <= list.size();) {
      size_t comma = std::min(list.find(',', at), list.size());
      names.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  backends::OnednnContext context;
  fmt::print(
      "| workload | shapes | Tandem ms | Tandem GFLOP/s | cuBLAS ms | cuBLAS GFLOP/s | "
      "Tandem/cuBLAS | launches | registers | checked against | rel. error |\n");
  fmt::print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  for (const std::string& name : names) {
    Workload w = name == "GMM-4096" ? MakeSquareMatmul(4096, 1) : MakeWorkload(name, context, 1);
    ConstantsAsInputs(w);
    ir::KernelFunction kernel =
        kernels::LowerGraphFunction(w.module.Get("main"), "gpu_" + std::to_string(w.name.size()));
    kernel = kernels::ApplyGpuDefaultSchedule(kernel).function();
    backends::GpuProgram program = backends::CompileGpuKernel(kernel, {arch, 3});
    std::string registers = "-";
    if (!backends::cuda::PtxasPath().empty()) {
      backends::cuda::PtxasReport report = backends::cuda::AssemblePtx(program.ptx, arch);
      registers = fmt::format("{} ({} B spilled)", report.max_registers, report.spill_bytes);
    }
    size_t launches = program.launches.size();
    if (!compile_only.empty()) {
      fmt::print("| {} | {} | - | - | - | - | - | {} | {} | - | - |\n", w.name, w.shapes, launches,
                 registers);
      continue;
    }
    backends::cuda::GpuKernel compiled(std::move(program));
    std::vector<ir::Tensor> outputs = compiled.Run(w.inputs);
    double ms = compiled.TimeMilliseconds(w.inputs, repeat);
    double gflops = w.flops / (ms * 1e6);
    std::string cublas_ms = "-", cublas_gflops = "-", ratio = "-", checked = "-", error = "-";
    if (auto product = CublasProduct(w)) {
      CublasResult result =
          RunCublas(product->first, product->second[0], product->second[1], repeat);
      cublas_ms = fmt::format("{:.4f}", result.milliseconds);
      cublas_gflops = fmt::format("{:.0f}", w.flops / (result.milliseconds * 1e6));
      ratio = fmt::format("{:.3f}x", result.milliseconds / ms);
      checked = "cuBLAS";
      error = fmt::format("{:.1e}", RelativeErrorFlat(outputs[0], result.output));
    } else if (w.flops < kReferenceFlopLimit) {
      std::vector<ir::Tensor> expected = backends::RunReference(w.module, w.inputs);
      checked = "reference";
      error = fmt::format("{:.1e}", ir::RelativeError(outputs[0], expected[0]));
    }
    fmt::print("| {} | {} | {:.4f} | {:.0f} | {} | {} | {} | {} | {} | {} | {} |\n", w.name,
               w.shapes, ms, gflops, cublas_ms, cublas_gflops, ratio, launches, registers, checked,
               error);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tandem::bench

int main(int argc, char** argv) {
  try {
    return tandem::bench::Main(argc, argv);
  } catch (const tandem::ir::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
