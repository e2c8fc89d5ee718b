#include "backends/onednn/onednn_compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ir/error.h"
#include "ir/layout.h"

namespace tandem::backends {

using dnnl::memory;
using Tag = memory::format_tag;

OnednnFunction::OnednnFunction(std::shared_ptr<OnednnContext> context, OnednnProgram program,
                               std::vector<std::vector<dnnl::memory>> bound,
                               std::vector<ir::Tensor> keep_alive)
    : context_(std::move(context)),
      program_(std::move(program)),
      bound_(std::move(bound)),
      keep_alive_(std::move(keep_alive)) {}

void OnednnFunction::Run(void* const* arguments) {
  for (size_t i = 0; i < bound_.size(); ++i) {
    for (dnnl::memory& m : bound_[i]) m.set_data_handle(arguments[i]);
  }
  program_.Run(context_->stream);
}

std::string CanonicalActivation(size_t rank) {
  static const char* spatial[] = {"", "W", "HW", "DHW"};
  if (rank < 3 || rank > 5) {
    throw ir::Error(fmt::format("oneDNN: activations of rank {} are not supported", rank));
  }
  return std::string("NC") + spatial[rank - 2];
}

memory::desc PlainDesc(const ir::Shape& shape) {
  memory::dims dims(shape.begin(), shape.end());
  memory::dims strides(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;)
    strides[k - 1] = strides[k] * std::max<int64_t>(dims[k], 1);
  return memory::desc(dims, memory::data_type::f32, strides);
}

std::optional<memory::desc> LayoutDesc(const ir::TensorType& type, const std::string& canonical) {
  if (type.dtype != ir::DataType::kFloat32) return std::nullopt;
  if (type.layout.empty() || type.layout == canonical) {
    if (!canonical.empty() && type.shape.size() != canonical.size()) return std::nullopt;
    return PlainDesc(type.shape);
  }
  ir::Layout layout(type.layout);
  std::string primal = layout.primal_axes();
  std::string sorted_primal = primal, sorted_canonical = canonical;
  std::sort(sorted_primal.begin(), sorted_primal.end());
  std::sort(sorted_canonical.begin(), sorted_canonical.end());
  if (sorted_primal != sorted_canonical ||
      layout.rank() != static_cast<int64_t>(type.shape.size())) {
    return std::nullopt;
  }
  size_t rank = canonical.size();
  memory::dims dims(rank);
  if (layout.rank() == static_cast<int64_t>(rank)) {  // a permutation: strides
    memory::dims physical_strides(rank, 1);
    for (size_t k = rank; k-- > 1;) physical_strides[k - 1] = physical_strides[k] * type.shape[k];
    memory::dims strides(rank);
    for (size_t k = 0; k < rank; ++k) {
      size_t position = static_cast<size_t>(layout.IndexOf(canonical[k]));
      dims[k] = type.shape[position];
      strides[k] = physical_strides[position];
    }
    return memory::desc(dims, memory::data_type::f32, strides);
  }
  // One split: the second canonical axis blocked innermost by 8 or 16, primal order canonical.
  char blocked = canonical.size() > 1 ? canonical[1] : 0;
  int64_t factor = layout.SplitFactor(blocked);
  char sub = static_cast<char>(blocked - 'A' + 'a');
  if (layout.rank() != static_cast<int64_t>(rank) + 1 || primal != canonical ||
      layout.IndexOf(sub) != layout.rank() - 1 || (factor != 8 && factor != 16)) {
    return std::nullopt;
  }
  for (size_t k = 0; k < rank; ++k) {
    dims[k] = type.shape[static_cast<size_t>(layout.IndexOf(canonical[k]))] * (k == 1 ? factor : 1);
  }
  Tag tag = Tag::undef;
  if (rank == 3) tag = factor == 8 ? Tag::aBc8b : Tag::aBc16b;
  if (rank == 4) tag = factor == 8 ? Tag::aBcd8b : Tag::aBcd16b;
  if (rank == 5) tag = factor == 8 ? Tag::aBcde8b : Tag::aBcde16b;
  if (tag == Tag::undef) return std::nullopt;
  return memory::desc(dims, memory::data_type::f32, tag);
}

OnednnCompiler::OnednnCompiler(const ir::GraphFunction& subgraph)
    : subgraph_(subgraph),
      context_(std::make_shared<OnednnContext>()),
      program_(subgraph.name),
      bound_(subgraph.params.size() + 1) {
  for (size_t i = 0; i < subgraph.nodes.size(); ++i) {
    if (subgraph.nodes[i].kind == ir::NodeKind::kCall)
      chain_.push_back(static_cast<ir::ValueId>(i));
  }
  if (chain_.empty() || chain_.back() != subgraph.output) {
    throw ir::Error(
        fmt::format("oneDNN: subgraph @{} must end with its last op call", subgraph.name));
  }
  for (size_t k = 1; k < chain_.size(); ++k) {
    const ir::Node& node = subgraph.node(chain_[k]);
    if (std::find(node.inputs.begin(), node.inputs.end(), chain_[k - 1]) == node.inputs.end()) {
      throw ir::Error(fmt::format("oneDNN: %{} does not consume %{}: the subgraph is not a chain",
                                  node.name, subgraph.node(chain_[k - 1]).name));
    }
  }
}

std::vector<const ir::Node*> OnednnCompiler::Epilogue() const {
  std::vector<const ir::Node*> nodes;
  for (size_t k = 1; k < chain_.size(); ++k) nodes.push_back(&subgraph_.node(chain_[k]));
  return nodes;
}

ir::Tensor OnednnCompiler::ConstantIn(ir::ValueId id, const std::string& canonical) {
  const ir::Tensor& value = subgraph_.node(id).value;
  const std::string& layout = subgraph_.type_of(id).tensor().layout;
  if (layout.empty() || layout == canonical) return value;
  return ir::TransformLayout(value, ir::Layout(layout), ir::Layout(canonical));
}

dnnl::memory OnednnCompiler::Bind(ir::ValueId id, const memory::desc& desc) {
  const ir::Node& node = subgraph_.node(id);
  if (node.kind == ir::NodeKind::kConstant) return Own(node.value, desc);
  auto param = std::find(subgraph_.params.begin(), subgraph_.params.end(), id);
  if (param == subgraph_.params.end()) {
    throw ir::Error(fmt::format("oneDNN: %{} is neither a parameter nor a constant", node.name));
  }
  memory bound(desc, context_->engine, DNNL_MEMORY_NONE);
  bound_[static_cast<size_t>(param - subgraph_.params.begin())].push_back(bound);
  return bound;
}

dnnl::memory OnednnCompiler::Own(ir::Tensor data, const memory::desc& desc) {
  if (static_cast<int64_t>(desc.get_size()) > data.num_bytes()) {
    throw ir::Error(fmt::format("oneDNN: a constant of {} bytes described as {} bytes",
                                data.num_bytes(), desc.get_size()));
  }
  memory owned(desc, context_->engine, const_cast<void*>(data.raw_data()));
  keep_alive_.push_back(std::move(data));
  return owned;
}

dnnl::memory OnednnCompiler::BindResult(const memory::desc& desc) {
  memory bound(desc, context_->engine, DNNL_MEMORY_NONE);
  bound_.back().push_back(bound);
  return bound;
}

namespace {

std::optional<dnnl::algorithm> UnaryAlgorithm(const ir::Node& node, float& alpha, float& beta) {
  alpha = 0;
  beta = 0;
  if (node.op == "relu") return dnnl::algorithm::eltwise_relu;
  if (node.op == "sigmoid") return dnnl::algorithm::eltwise_logistic;
  if (node.op == "tanh") return dnnl::algorithm::eltwise_tanh;
  if (node.op == "exp") return dnnl::algorithm::eltwise_exp;
  if (node.op == "sqrt") return dnnl::algorithm::eltwise_sqrt;
  if (node.op == "gelu") {
    return node.attrs.GetString("approximate") == "tanh" ? dnnl::algorithm::eltwise_gelu_tanh
                                                         : dnnl::algorithm::eltwise_gelu_erf;
  }
  if (node.op == "clip") {
    alpha = static_cast<float>(node.attrs.GetFloat("min"));
    beta = static_cast<float>(node.attrs.GetFloat("max"));
    return dnnl::algorithm::eltwise_clip;
  }
  return std::nullopt;
}

std::optional<dnnl::algorithm> BinaryAlgorithm(const std::string& op, bool chain_first) {
  if (op == "add") return dnnl::algorithm::binary_add;
  if (op == "multiply") return dnnl::algorithm::binary_mul;
  if (op == "maximum") return dnnl::algorithm::binary_max;
  if (op == "minimum") return dnnl::algorithm::binary_min;
  if (op == "subtract" && chain_first) return dnnl::algorithm::binary_sub;
  if (op == "divide" && chain_first) return dnnl::algorithm::binary_div;
  return std::nullopt;
}

}  // namespace

bool OnednnCompiler::HasFullSizeActivationOperand() const {
  for (size_t k = 1; k < chain_.size(); ++k) {
    const ir::Node& node = subgraph_.node(chain_[k]);
    for (ir::ValueId input : node.inputs) {
      if (input != chain_[k - 1] && !IsConstant(input) && subgraph_.type_of(input) == node.type) {
        return true;
      }
    }
  }
  return false;
}

dnnl::memory OnednnCompiler::EpilogueOperand(ir::ValueId other, const std::string& canonical,
                                             const ir::TensorType& result,
                                             const memory::desc* full_operand) {
  const ir::TensorType& other_type = subgraph_.type_of(other).tensor();
  memory operand;
  if (other_type.layout == result.layout && other_type.shape.size() == result.shape.size()) {
    if (IsConstant(other)) {
      ir::Tensor plain = ConstantIn(other, canonical);
      operand = Own(plain, PlainDesc(plain.shape()));
    } else if (std::optional<memory::desc> desc = LayoutDesc(other_type, canonical)) {
      operand = Bind(other, *desc);
      if (full_operand != nullptr && other_type == result) {
        operand = ReorderInput(program_, operand, *full_operand, *context_);
      }
    }
  } else if (other_type.shape.size() <= result.shape.size() &&
             (other_type.layout.empty() || (other_type.shape.size() < result.shape.size() &&
                                            result.layout.size() > other_type.layout.size() &&
                                            result.layout.ends_with(other_type.layout)))) {
    // Broadcast over the result's physical shape: padded with leading 1s, and described in
    // the result's layout when that is a permutation (a [1,1,C] bias of an NHWC result, also
    // when tagged HWC).
    ir::Shape shape(result.shape.size() - other_type.shape.size(), 1);
    shape.insert(shape.end(), other_type.shape.begin(), other_type.shape.end());
    if (result.layout.empty()) {
      operand = Bind(other, PlainDesc(shape));
    } else if (result.layout.find_first_of("0123456789") == std::string::npos) {
      ir::TensorType physical = other_type;
      physical.shape = shape;
      physical.layout = result.layout;
      if (std::optional<memory::desc> desc = LayoutDesc(physical, canonical)) {
        operand = Bind(other, *desc);
      }
    } else if (IsConstant(other)) {
      // A constant channel bias in a blocked layout (a [C/8,1,1,8] CHW8c bias of an NCHW8c
      // result): unblocked at build time into a plain [1,C,1,1] operand.
      std::string primal = ir::Layout(other_type.layout).primal_axes();
      ir::Tensor plain = subgraph_.node(other).value;
      if (primal != other_type.layout) {
        plain = ir::TransformLayout(plain, ir::Layout(other_type.layout), ir::Layout(primal));
      }
      ir::Shape logical(canonical.size() - std::min(canonical.size(), plain.shape().size()), 1);
      logical.insert(logical.end(), plain.shape().begin(), plain.shape().end());
      if (logical.size() == canonical.size()) {
        plain = plain.Reshaped(logical);
        operand = Own(plain, PlainDesc(logical));
      }
    }
  }
  return operand;
}

std::optional<dnnl::memory> OnednnCompiler::TakeBias(const std::string& canonical,
                                                     const ir::TensorType& result,
                                                     size_t channel_axis, bool flat) {
  if (chain_.size() < 2 || first_post_op_ != 1) return std::nullopt;
  const ir::Node& node = subgraph_.node(chain_[1]);
  if (node.op != "add" || node.inputs.size() != 2 || node.inputs[0] == node.inputs[1] ||
      !(node.type == subgraph_.type_of(chain_[0]))) {
    return std::nullopt;
  }
  ir::ValueId other = node.inputs[0] == chain_[0] ? node.inputs[1] : node.inputs[0];
  std::optional<memory::desc> result_desc = LayoutDesc(result, canonical);
  if (!IsConstant(other) || !result_desc) return std::nullopt;
  memory operand = EpilogueOperand(other, canonical, result, nullptr);
  if (!operand) return std::nullopt;
  memory::dims dims = operand.get_desc().dims(), result_dims = result_desc->dims();
  if (dims.size() != result_dims.size() || channel_axis >= dims.size()) return std::nullopt;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] != (d == channel_axis ? result_dims[d] : 1)) return std::nullopt;
  }
  // The values in channel order, whatever the operand's strides.
  memory::desc dense = PlainDesc(ir::Shape(dims.begin(), dims.end()));
  memory values = ReorderNow(operand, dense, *context_);
  int64_t channels = dims[channel_axis];
  ir::Tensor bias(ir::Shape{channels}, ir::DataType::kFloat32);
  std::memcpy(bias.raw_data(), values.get_data_handle(),
              static_cast<size_t>(channels) * sizeof(float));
  first_post_op_ = 2;
  return Own(bias, flat ? memory::desc({channels}, memory::data_type::f32, Tag::x) : dense);
}

dnnl::primitive_attr OnednnCompiler::PostOps(const std::string& canonical,
                                             const ir::TensorType& result,
                                             std::unordered_map<int, dnnl::memory>& args,
                                             const memory::desc* full_operand) {
  dnnl::post_ops ops;
  std::optional<memory::desc> result_desc = LayoutDesc(result, canonical);
  if (!result_desc) {
    throw ir::Error(fmt::format("oneDNN: result layout {} is not supported", result.layout));
  }
  memory::dims result_dims = result_desc->dims();
  for (size_t k = first_post_op_; k < chain_.size(); ++k) {
    const ir::Node& node = subgraph_.node(chain_[k]);
    ir::ValueId previous = chain_[k - 1];
    if (!(node.type == subgraph_.type_of(previous))) {
      throw ir::Error(fmt::format("oneDNN: epilogue %{} ({}) changes the type {} to {}", node.name,
                                  node.op, ir::ToString(subgraph_.type_of(previous)),
                                  ir::ToString(node.type)));
    }
    float alpha = 0, beta = 0;
    if (node.inputs.size() == 1) {
      std::optional<dnnl::algorithm> algorithm = UnaryAlgorithm(node, alpha, beta);
      if (!algorithm) throw ir::Error(fmt::format("oneDNN: no post-op for {}", node.op));
      ops.append_eltwise(1.0f, *algorithm, alpha, beta);
      continue;
    }
    if (node.inputs.size() != 2 || node.inputs[0] == node.inputs[1]) {
      throw ir::Error(fmt::format("oneDNN: no post-op for %{} ({})", node.name, node.op));
    }
    bool chain_first = node.inputs[0] == previous;
    std::optional<dnnl::algorithm> algorithm = BinaryAlgorithm(node.op, chain_first);
    if (!algorithm) {
      throw ir::Error(fmt::format("oneDNN: no post-op for {} with the chained value as operand {}",
                                  node.op, chain_first ? 0 : 1));
    }
    ir::ValueId other = chain_first ? node.inputs[1] : node.inputs[0];
    const ir::TensorType& other_type = subgraph_.type_of(other).tensor();
    memory operand = EpilogueOperand(other, canonical, result, full_operand);
    if (!operand) {
      throw ir::Error(fmt::format("oneDNN: operand %{} of {} ({}) cannot be a post-op operand",
                                  subgraph_.node(other).name, node.op, ir::ToString(other_type)));
    }
    memory::dims dims = operand.get_desc().dims();
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] != 1 && dims[d] != result_dims[d]) {
        throw ir::Error(fmt::format("oneDNN: operand %{} of {} does not broadcast to the result",
                                    subgraph_.node(other).name, node.op));
      }
    }
    int index = static_cast<int>(ops.len());
    ops.append_binary(*algorithm, operand.get_desc());
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1] = operand;
  }
  dnnl::primitive_attr attr = UserScratchpad();
  attr.set_post_ops(ops);
  return attr;
}

std::unique_ptr<OnednnFunction> OnednnCompiler::Finish() {
  return std::make_unique<OnednnFunction>(context_, std::move(program_), std::move(bound_),
                                          std::move(keep_alive_));
}

std::unique_ptr<ExternalFunction> CompileOnednnSubgraph(const ir::GraphFunction& subgraph) {
  try {
    OnednnCompiler compiler(subgraph);
    const std::string& op = compiler.anchor().op;
    if (op.rfind("conv", 0) == 0) return CompileOnednnConvolution(compiler);
    if (op == "matmul" || op == "batch_matmul" || op == "dense") {
      return CompileOnednnMatmul(compiler);
    }
    if (op == "softmax" || op == "layer_norm") return CompileOnednnNormalization(compiler);
    if (op.find("pool") != std::string::npos) return CompileOnednnPooling(compiler);
    throw ir::Error(fmt::format("oneDNN: no compiler for op {}", op));
  } catch (const dnnl::error& e) {
    throw ir::Error(fmt::format("oneDNN: subgraph @{}: {} (status {})", subgraph.name, e.what(),
                                static_cast<int>(e.status)));
  } catch (const ir::Error& e) {
    if (e.message().rfind("oneDNN", 0) == 0) {
      throw ir::Error(fmt::format("{} (subgraph @{})", e.message(), subgraph.name));
    }
    throw;
  }
}

}  // namespace tandem::backends
