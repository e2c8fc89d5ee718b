// The cuBLAS backend: matmul, batch_matmul and dense on an NVIDIA GPU (f32, plain layouts).
//
// Compiled whenever the CUDA toolkit is present; available only where a CUDA device is (Available
// says why not). A compiled subgraph owns device buffers for its operands and result; constant
// operands (weights) are uploaded once at compile time. Called from the host (the CPU executable,
// measurement of a placement), activations are copied in and the result copied out on every call,
// so a measurement includes the transfers such a placement really costs; called by a GPU
// executable (RunOnCudaDevice), it reads and writes the executable's device memory on its stream.
// Row-major products are computed as the column-major product of the transposes: C^T = B^T A^T.
// Every CUDA call follows Available, which records that this process initializes CUDA
// (MayInitializeCuda) and makes none in a process forked after its parent initialized it: the
// tuning library then never forks a child that would use it (tuning/measure/runner.h).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "backends/external/external_backend.h"
#include "ir/error.h"

namespace tandem::backends {

namespace {

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw ir::Error(fmt::format("cuBLAS backend: {}: {}", what, cudaGetErrorString(status)));
  }
}

void Check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw ir::Error(fmt::format("cuBLAS backend: {}: status {}", what, static_cast<int>(status)));
  }
}

struct DeviceBuffer {
  float* data = nullptr;
  int64_t elements = 0;
  explicit DeviceBuffer(int64_t count) : elements(count) {
    Check(cudaMalloc(reinterpret_cast<void**>(&data), static_cast<size_t>(count) * sizeof(float)),
          "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// The shape of one batched product, as the subgraph's op defines it.
struct Product {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool a_batched = true, b_batched = true;
  bool transpose_a = false, transpose_b = false;
};

int64_t Elements(const ir::Shape& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

Product DescribeProduct(const ir::Node& node, const ir::TensorType& a, const ir::TensorType& b) {
  Product p;
  if (node.op == "dense") {  // [..., K] x [N, K]^T
    p.k = a.shape.back();
    p.m = Elements(a.shape) / p.k;
    p.n = b.shape[0];
    p.transpose_b = true;
    p.b_batched = false;
    return p;
  }
  if (a.shape.size() < 2 || b.shape.size() < 2) throw ir::Error("cuBLAS backend: rank-1 operand");
  if (node.op == "batch_matmul") {
    p.transpose_a = node.attrs.GetInt("transpose_a") != 0;
    p.transpose_b = node.attrs.GetInt("transpose_b") != 0;
  }
  size_t ra = a.shape.size(), rb = b.shape.size();
  p.m = p.transpose_a ? a.shape[ra - 1] : a.shape[ra - 2];
  p.k = p.transpose_a ? a.shape[ra - 2] : a.shape[ra - 1];
  p.n = p.transpose_b ? b.shape[rb - 2] : b.shape[rb - 1];
  int64_t a_batch = Elements(a.shape) / (p.m * p.k), b_batch = Elements(b.shape) / (p.k * p.n);
  if (a_batch != b_batch && a_batch != 1 && b_batch != 1) {
    throw ir::Error("cuBLAS backend: batch axes that broadcast partially");
  }
  p.batch = std::max(a_batch, b_batch);
  p.a_batched = a_batch != 1 || p.batch == 1;
  p.b_batched = b_batch != 1 || p.batch == 1;
  return p;
}

class CublasFunction : public ExternalFunction {
 public:
  explicit CublasFunction(const ir::GraphFunction& subgraph) {
    const ir::Node& node = subgraph.node(subgraph.output);
    if (node.kind != ir::NodeKind::kCall || node.inputs.size() != 2) {
      throw ir::Error("cuBLAS backend: the subgraph must be one matmul");
    }
    const ir::TensorType& a = subgraph.type_of(node.inputs[0]).tensor();
    const ir::TensorType& b = subgraph.type_of(node.inputs[1]).tensor();
    product_ = DescribeProduct(node, a, b);
    Check(cublasCreate(&handle_), "cublasCreate");
    operands_.push_back(std::make_unique<DeviceBuffer>(Elements(a.shape)));
    operands_.push_back(std::make_unique<DeviceBuffer>(Elements(b.shape)));
    result_ = std::make_unique<DeviceBuffer>(Elements(node.type.tensor().shape));
    for (size_t i = 0; i < 2; ++i) {
      const ir::Node& operand = subgraph.node(node.inputs[i]);
      if (operand.kind == ir::NodeKind::kConstant) {
        Check(cudaMemcpy(operands_[i]->data, operand.value.raw_data(),
                         static_cast<size_t>(operand.value.num_bytes()), cudaMemcpyHostToDevice),
              "upload of a constant");
        continue;
      }
      auto param = std::find(subgraph.params.begin(), subgraph.params.end(), node.inputs[i]);
      if (param == subgraph.params.end())
        throw ir::Error("cuBLAS backend: operand is not a parameter");
      uploads_.push_back({static_cast<size_t>(param - subgraph.params.begin()), i});
    }
    num_params_ = subgraph.params.size();
  }
  ~CublasFunction() override { cublasDestroy(handle_); }

  void Run(void* const* arguments) override {
    for (const auto& [argument, operand] : uploads_) {
      Check(cudaMemcpy(operands_[operand]->data, arguments[argument],
                       static_cast<size_t>(operands_[operand]->elements) * sizeof(float),
                       cudaMemcpyHostToDevice),
            "copy in");
    }
    Check(cublasSetStream(handle_, nullptr), "cublasSetStream");
    Multiply(operands_[0]->data, operands_[1]->data, result_->data);
    Check(
        cudaMemcpy(arguments[num_params_], result_->data,
                   static_cast<size_t>(result_->elements) * sizeof(float), cudaMemcpyDeviceToHost),
        "copy out");
  }

  // Activations and the result stay in the caller's device memory; constants are the ones
  // uploaded at compile time.
  bool runs_on_cuda_device() const override { return true; }

  void RunOnCudaDevice(const uint64_t* device_arguments, void* stream) override {
    const float* operands[2] = {operands_[0]->data, operands_[1]->data};
    for (const auto& [argument, operand] : uploads_) {
      operands[operand] = reinterpret_cast<const float*>(device_arguments[argument]);
    }
    Check(cublasSetStream(handle_, static_cast<cudaStream_t>(stream)), "cublasSetStream");
    Multiply(operands[0], operands[1], reinterpret_cast<float*>(device_arguments[num_params_]));
  }

  // Its device buffers belong to the CUDA context of the process that compiled it.
  bool runs_in_forked_process() const override { return false; }

  std::string Describe() const override {
    return fmt::format("cublasSgemmStridedBatched {}x{}x{} batch {}", product_.m, product_.n,
                       product_.k, product_.batch);
  }

 private:
  // Enqueues result = a x b on the handle's stream (all device pointers).
  void Multiply(const float* a, const float* b, float* result) {
    const Product& p = product_;
    const float one = 1.0f, zero = 0.0f;
    // Column-major: C^T [n x m] = op(B)^T-view [n x k] * op(A)^T-view [k x m].
    cublasOperation_t op_b = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_a = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int64_t ldb = p.transpose_b ? p.k : p.n;
    int64_t lda = p.transpose_a ? p.m : p.k;
    Check(cublasSgemmStridedBatched(
              handle_, op_b, op_a, static_cast<int>(p.n), static_cast<int>(p.m),
              static_cast<int>(p.k), &one, b, static_cast<int>(ldb), p.b_batched ? p.k * p.n : 0, a,
              static_cast<int>(lda), p.a_batched ? p.m * p.k : 0, &zero, result,
              static_cast<int>(p.n), p.m * p.n, static_cast<int>(p.batch)),
          "cublasSgemmStridedBatched");
  }

  cublasHandle_t handle_ = nullptr;
  Product product_;
  std::vector<std::unique_ptr<DeviceBuffer>> operands_;
  std::unique_ptr<DeviceBuffer> result_;
  std::vector<std::pair<size_t, size_t>> uploads_;  // (argument, operand)
  size_t num_params_ = 0;
};

std::optional<std::string> PlainFloat32(const ir::GraphFunction& function, const ir::Node& node) {
  for (ir::ValueId input : node.inputs) {
    const ir::TensorType& t = function.type_of(input).tensor();
    if (t.dtype != ir::DataType::kFloat32 || !t.layout.empty())
      return std::string("plain f32 only");
    if (node.op != "dense" && t.shape.size() < 2) return std::string("rank-1 operand");
  }
  return std::nullopt;
}

class CublasBackend : public ExternalBackend {
 public:
  std::string name() const override { return "cublas"; }

  std::string version() const override {
    return fmt::format("{}.{}.{}", CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
  }

  bool Available(std::string* why) const override {
    // In a process forked after its parent initialized CUDA, any CUDA call fails or hangs: none
    // is made there (a measurement process of the tuning library rebuilding a candidate, say).
    std::string forked;
    if (!MayInitializeCuda(&forked)) {
      if (why) *why = forked;
      return false;
    }
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count > 0) return true;
    if (why) {
      *why = status == cudaSuccess ? std::string("no CUDA device")
                                   : fmt::format("no CUDA device: {}", cudaGetErrorString(status));
    }
    return false;
  }

  const std::vector<Pattern>& patterns() const override {
    static const std::vector<Pattern> patterns = {
        Pattern{"matmul",
                OpMatcher{{"matmul", "batch_matmul", "dense"}, PlainFloat32, "f32, plain", false},
                {}}};
    return patterns;
  }

  std::unique_ptr<ExternalFunction> Compile(const ir::GraphFunction& subgraph) const override {
    std::string why;
    if (!Available(&why)) throw ir::Error("cuBLAS backend: " + why);
    return std::make_unique<CublasFunction>(subgraph);
  }
};

}  // namespace

void RegisterCublasBackend(ExternalBackendRegistry& registry) {
  registry.Register(std::make_shared<CublasBackend>());
}

}  // namespace tandem::backends
