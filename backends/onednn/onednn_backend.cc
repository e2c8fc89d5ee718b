// The oneDNN backend: convolutions (1-D to 3-D, grouped, depthwise, dilated, transposed) and
// matmuls (matmul, batch_matmul, dense) with an epilogue of bias / scale, activation and
// residual steps fused as post-ops; softmax; layer normalization; pooling. Patterns refuse
// what the compilers cannot take (other dtypes, layouts oneDNN has no descriptor for), so a
// match is a subgraph this backend can compile.
#include <fmt/format.h>

#include "backends/external/external_backend.h"
#include "backends/onednn/onednn_compiler.h"
#include "backends/onednn/onednn_isa.h"
#include "ir/error.h"
#include "ir/layout.h"

namespace tandem::backends {

namespace {

using Refusal = std::optional<std::string>;

Refusal AllFloat32(const ir::GraphFunction& function, const ir::Node& node) {
  for (ir::ValueId input : node.inputs) {
    const ir::Type& type = function.type_of(input);
    if (!type.is_tensor() || type.tensor().dtype != ir::DataType::kFloat32) {
      return std::string("operands must be f32 tensors");
    }
  }
  if (!node.type.is_tensor() || node.type.tensor().dtype != ir::DataType::kFloat32) {
    return std::string("the result must be an f32 tensor");
  }
  return std::nullopt;
}

Refusal ConvolutionConstraint(const ir::GraphFunction& function, const ir::Node& node) {
  if (Refusal refusal = AllFloat32(function, node)) return refusal;
  if (node.inputs.size() != 2) return std::string("takes data and weight only");
  if (node.op == "conv2d_transpose") {
    if (node.attrs.GetInt("groups") != 1) return std::string("grouped transposed convolution");
    if (!function.type_of(node.inputs[0]).tensor().layout.empty())
      return std::string("a layout tag");
    return std::nullopt;
  }
  const ir::TensorType& data = function.type_of(node.inputs[0]).tensor();
  std::string canonical = "NC";
  for (char axis : ir::Layout(node.attrs.GetString("data_layout")).primal_axes()) {
    if (axis != 'N' && axis != 'C') canonical += axis;
  }
  if (!LayoutDesc(data, canonical)) {
    return fmt::format("data layout {} has no oneDNN descriptor", data.layout);
  }
  const ir::TensorType& weight = function.type_of(node.inputs[1]).tensor();
  bool constant_weight = function.node(node.inputs[1]).kind == ir::NodeKind::kConstant;
  if (!constant_weight && !weight.layout.empty() &&
      weight.layout.find_first_of("0123456789") != std::string::npos) {
    return std::string("blocked weights that are not constants");
  }
  return std::nullopt;
}

Refusal PlainFloat32(const ir::GraphFunction& function, const ir::Node& node) {
  if (Refusal refusal = AllFloat32(function, node)) return refusal;
  for (ir::ValueId input : node.inputs) {
    if (!function.type_of(input).tensor().layout.empty()) return std::string("layout tags");
  }
  if (!node.type.tensor().layout.empty()) return std::string("a layout tag on the result");
  return std::nullopt;
}

Refusal MatmulConstraint(const ir::GraphFunction& function, const ir::Node& node) {
  if (Refusal refusal = PlainFloat32(function, node)) return refusal;
  for (ir::ValueId input : node.inputs) {
    if (function.type_of(input).tensor().shape.size() < 2) return std::string("rank-1 operand");
  }
  return std::nullopt;
}

// An epilogue binary op: the chained value is not broadcast (the result keeps its type).
Refusal EpilogueBinary(const ir::GraphFunction& function, const ir::Node& node) {
  if (Refusal refusal = AllFloat32(function, node)) return refusal;
  for (ir::ValueId input : node.inputs) {
    if (function.type_of(input) == node.type) return std::nullopt;
  }
  return std::string("broadcasts the chained value");
}

OpMatcher Step(std::vector<std::string> ops, bool binary, std::string text) {
  OpMatcher step{std::move(ops), binary ? EpilogueBinary : AllFloat32, std::move(text), true};
  return step;
}

std::vector<OpMatcher> Epilogue() {
  std::vector<std::string> activations = {"relu", "sigmoid", "tanh", "gelu", "clip"};
  return {Step({"add", "multiply", "subtract", "divide"}, true, "bias or scale"),
          Step({"add"}, true, "bias after scale"), Step(activations, false, ""),
          Step({"add"}, true, "residual"), Step({"relu", "clip"}, false, "")};
}

std::vector<Pattern> MakePatterns() {
  std::vector<Pattern> patterns;
  patterns.push_back(Pattern{"convolution",
                             OpMatcher{{"conv1d", "conv2d", "conv3d", "conv2d_transpose"},
                                       ConvolutionConstraint,
                                       "f32, any groups and dilation",
                                       false},
                             Epilogue()});
  patterns.push_back(Pattern{
      "matmul",
      OpMatcher{{"matmul", "batch_matmul", "dense"}, MatmulConstraint, "f32, rank >= 2", false},
      Epilogue()});
  patterns.push_back(
      Pattern{"normalization",
              OpMatcher{{"softmax", "layer_norm"}, PlainFloat32, "f32, no layout tag", false},
              {}});
  patterns.push_back(Pattern{
      "pooling",
      OpMatcher{{"max_pool2d", "avg_pool2d", "global_avg_pool2d"}, AllFloat32, "f32", false},
      {}});
  return patterns;
}

class OnednnBackend : public ExternalBackend {
 public:
  std::string name() const override { return "onednn"; }

  std::string version() const override {
    const dnnl_version_t* version = dnnl_version();
    return fmt::format("{}.{}.{}", version->major, version->minor, version->patch);
  }

  void PrepareForTarget(const ir::Target& target) const override { PinOnednnIsa(target); }

  bool Available(std::string* why) const override {
    try {
      EnsureOnednnIsaFixed();
      dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      return true;
    } catch (const dnnl::error& e) {
      if (why) *why = fmt::format("oneDNN has no CPU engine: {}", e.what());
      return false;
    }
  }

  const std::vector<Pattern>& patterns() const override {
    static const std::vector<Pattern> patterns = MakePatterns();
    return patterns;
  }

  std::unique_ptr<ExternalFunction> Compile(const ir::GraphFunction& subgraph) const override {
    return CompileOnednnSubgraph(subgraph);
  }
};

}  // namespace

void RegisterOnednnBackend(ExternalBackendRegistry& registry) {
  registry.Register(std::make_shared<OnednnBackend>());
}

}  // namespace tandem::backends
