// oneDNN pooling: max_pool2d, avg_pool2d (with or without the padding in the divisor) and
// global_avg_pool2d, in the graph's data layout (NCHW, NHWC or channel-blocked NCHW<x>c).
#include <fmt/format.h>

#include "backends/onednn/onednn_compiler.h"
#include "ir/error.h"

namespace tandem::backends {

std::unique_ptr<OnednnFunction> CompileOnednnPooling(OnednnCompiler& compiler) {
  using dnnl::memory;
  const ir::Node& node = compiler.anchor();
  const ir::GraphFunction& subgraph = compiler.subgraph();
  ir::TensorType data = subgraph.type_of(compiler.Operand(0)).tensor();
  ir::TensorType result = node.type.tensor();
  if (!compiler.Epilogue().empty()) throw ir::Error("oneDNN: pooling takes no epilogue here");
  std::string layout = node.attrs.GetString("layout");
  if (data.layout.empty()) data.layout = layout;
  if (result.layout.empty()) result.layout = layout;
  std::optional<memory::desc> src = LayoutDesc(data, "NCHW");
  std::optional<memory::desc> dst = LayoutDesc(result, "NCHW");
  if (!src || !dst)
    throw ir::Error(fmt::format("oneDNN: pooling layout {} is not supported", data.layout));
  memory::dims in = src->dims(), out = dst->dims();

  dnnl::algorithm algorithm = dnnl::algorithm::pooling_avg_exclude_padding;
  memory::dims kernel, strides = {1, 1}, dilation = {0, 0}, pad_l = {0, 0}, pad_r = {0, 0};
  if (node.op == "global_avg_pool2d") {
    kernel = {in[2], in[3]};
  } else {
    std::vector<int64_t> window = node.attrs.GetInts("pool_size");
    std::vector<int64_t> step = node.attrs.GetInts("strides");
    std::vector<int64_t> padding = node.attrs.GetInts("padding");
    std::vector<int64_t> dilate = node.attrs.GetInts("dilation");
    bool include_padding = node.op == "avg_pool2d" && node.attrs.GetInt("count_include_pad") != 0;
    if (node.op == "max_pool2d") algorithm = dnnl::algorithm::pooling_max;
    if (include_padding) algorithm = dnnl::algorithm::pooling_avg_include_padding;
    for (size_t a = 0; a < 2; ++a) {
      kernel.push_back(window.at(a));
      strides[a] = step.at(a);
      dilation[a] = dilate.at(a) - 1;
      pad_l[a] = padding.at(a);
      // The end padding that makes the output extent come out (more than given in ceil mode).
      pad_r[a] =
          (out[a + 2] - 1) * step[a] + (window[a] - 1) * dilate[a] + 1 - in[a + 2] - pad_l[a];
      if (include_padding && pad_r[a] > padding.at(a + 2)) {
        throw ir::Error("oneDNN: avg_pool2d counting padding in ceil mode divides differently");
      }
    }
  }
  OnednnContext& context = compiler.context();
  dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, *src, *dst,
                                      strides, kernel, dilation, pad_l, pad_r);
  dnnl::pooling_v2_forward::primitive_desc descriptor(desc, UserScratchpad(), context.engine);
  compiler.program().Add(dnnl::pooling_v2_forward(descriptor),
                         {{DNNL_ARG_SRC, compiler.Bind(compiler.Operand(0), *src)},
                          {DNNL_ARG_DST, compiler.BindResult(*dst)}},
                         descriptor, "pooling");
  return compiler.Finish();
}

}  // namespace tandem::backends
