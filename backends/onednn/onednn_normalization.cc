// oneDNN softmax and layer normalization. Layer normalization over axes [axis, rank) is run as
// oneDNN's normalization of the last axis of the data seen as [outer, inner]: the same memory,
// so no copy.
#include <fmt/format.h>

#include "backends/onednn/onednn_compiler.h"
#include "ir/error.h"

namespace tandem::backends {

namespace {

using dnnl::memory;

int64_t NormalizedAxis(int64_t axis, size_t rank) {
  int64_t normalized = axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
  if (normalized < 0 || normalized >= static_cast<int64_t>(rank)) {
    throw ir::Error(fmt::format("oneDNN: axis {} out of range for rank {}", axis, rank));
  }
  return normalized;
}

}  // namespace

std::unique_ptr<OnednnFunction> CompileOnednnNormalization(OnednnCompiler& compiler) {
  const ir::Node& node = compiler.anchor();
  const ir::GraphFunction& subgraph = compiler.subgraph();
  const ir::TensorType& data = subgraph.type_of(compiler.Operand(0)).tensor();
  if (!data.layout.empty() || !node.type.tensor().layout.empty()) {
    throw ir::Error(fmt::format("oneDNN: {} of data with a layout tag", node.op));
  }
  if (!compiler.Epilogue().empty())
    throw ir::Error(fmt::format("oneDNN: {} takes no epilogue", node.op));
  OnednnContext& context = compiler.context();
  auto kind = dnnl::prop_kind::forward_inference;
  if (node.op == "softmax") {
    int axis = static_cast<int>(NormalizedAxis(node.attrs.GetInt("axis"), data.shape.size()));
    memory::desc desc = PlainDesc(data.shape);
    dnnl::softmax_v2_forward::desc softmax(kind, dnnl::algorithm::softmax_accurate, desc, desc,
                                           axis);
    dnnl::softmax_v2_forward::primitive_desc descriptor(softmax, UserScratchpad(), context.engine);
    compiler.program().Add(dnnl::softmax_v2_forward(descriptor),
                           {{DNNL_ARG_SRC, compiler.Bind(compiler.Operand(0), desc)},
                            {DNNL_ARG_DST, compiler.BindResult(desc)}},
                           descriptor, "softmax");
    return compiler.Finish();
  }
  // layer_norm(data, gamma, beta)
  int64_t axis = NormalizedAxis(node.attrs.GetInt("axis"), data.shape.size());
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < data.shape.size(); ++k) {
    (static_cast<int64_t>(k) < axis ? outer : inner) *= data.shape[k];
  }
  memory::desc desc = PlainDesc({outer, inner});
  memory::desc channel = PlainDesc({inner});
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::desc norm(
      kind, desc, static_cast<float>(node.attrs.GetFloat("epsilon")), flags);
  dnnl::layer_normalization_forward::primitive_desc descriptor(norm, UserScratchpad(),
                                                               context.engine);
  compiler.program().Add(dnnl::layer_normalization_forward(descriptor),
                         {{DNNL_ARG_SRC, compiler.Bind(compiler.Operand(0), desc)},
                          {DNNL_ARG_SCALE, compiler.Bind(compiler.Operand(1), channel)},
                          {DNNL_ARG_SHIFT, compiler.Bind(compiler.Operand(2), channel)},
                          {DNNL_ARG_DST, compiler.BindResult(desc)}},
                         descriptor, "layer_norm");
  return compiler.Finish();
}

}  // namespace tandem::backends
