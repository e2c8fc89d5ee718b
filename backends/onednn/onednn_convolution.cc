// oneDNN convolution and transposed convolution (1-D to 3-D, grouped, depthwise, dilated) with
// a constant channel bias as the primitive's bias and the rest of their epilogue as post-ops.
// Weights that are constants are packed into the layout the primitive prefers once, here;
// activations stay in the graph's layout when oneDNN has a fast (JIT) kernel for it, else oneDNN
// chooses and the reorders into and out of its layout run on every call (and are counted).
#include <fmt/format.h>

#include "backends/onednn/onednn_compiler.h"
#include "ir/error.h"
#include "ir/layout.h"

namespace tandem::backends {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::dims Dims(const std::vector<int64_t>& values, size_t begin, size_t count,
                  int64_t minus = 0) {
  memory::dims dims;
  for (size_t k = 0; k < count; ++k) dims.push_back(values.at(begin + k) - minus);
  return dims;
}

// oneDNN's direct convolution kernels (jit:avx512..., brgconv...) as opposed to its fallbacks:
// im2col + GEMM ("gemm") and the reference loops ("ref").
bool IsFastImplementation(const std::string& implementation) {
  return implementation.find("gemm") == std::string::npos &&
         !IsReferenceImplementation(implementation);
}

// Picks the primitive descriptor: the graph's activation layouts when oneDNN has a fast kernel
// for them, else the layouts oneDNN chooses. `make(src, dst, attr)` makes a descriptor. A
// residual operand in the graph's layout keeps oneDNN off its blocked kernels; then the residual
// is reordered per call into the layout oneDNN chooses for the result.
template <typename PrimitiveDescriptor, typename MakeDescriptor>
PrimitiveDescriptor Choose(OnednnCompiler& compiler, const std::string& canonical,
                           const ir::TensorType& result, const memory::desc& user_src,
                           const memory::desc& user_dst, std::unordered_map<int, memory>& args,
                           const MakeDescriptor& make) {
  memory::desc any_src(user_src.dims(), memory::data_type::f32, Tag::any);
  memory::desc any_dst(user_dst.dims(), memory::data_type::f32, Tag::any);
  dnnl::primitive_attr attr = compiler.PostOps(canonical, result, args);
  PrimitiveDescriptor in_user_layout;
  try {
    in_user_layout = make(user_src, user_dst, attr);
    if (IsFastImplementation(in_user_layout.impl_info_str())) return in_user_layout;
  } catch (const dnnl::error&) {
  }
  PrimitiveDescriptor chosen = make(any_src, any_dst, attr);
  if (IsFastImplementation(chosen.impl_info_str())) return chosen;
  if (compiler.HasFullSizeActivationOperand()) {
    // oneDNN's own choice for the result, then its channel-blocked layout.
    std::vector<memory::desc> layouts = {make(any_src, any_dst, UserScratchpad()).dst_desc()};
    size_t rank = user_dst.dims().size();
    Tag blocked = rank == 3 ? Tag::aBc16b : rank == 4 ? Tag::aBcd16b : Tag::aBcde16b;
    layouts.emplace_back(user_dst.dims(), memory::data_type::f32, blocked);
    size_t mark = compiler.program().num_steps();
    std::unordered_map<int, memory> first_args = args;
    for (const memory::desc& layout : layouts) {
      args.clear();
      try {
        PrimitiveDescriptor reordered =
            make(any_src, layout, compiler.PostOps(canonical, result, args, &layout));
        if (IsFastImplementation(reordered.impl_info_str())) return reordered;
      } catch (const dnnl::error&) {
      }
      compiler.program().Truncate(mark);
    }
    args = first_args;
  }
  return in_user_layout ? in_user_layout : chosen;
}

}  // namespace

std::unique_ptr<OnednnFunction> CompileOnednnConvolution(OnednnCompiler& compiler) {
  const ir::Node& conv = compiler.anchor();
  const ir::GraphFunction& subgraph = compiler.subgraph();
  bool transpose = conv.op == "conv2d_transpose";
  const ir::TensorType& data = subgraph.type_of(compiler.Operand(0)).tensor();
  const ir::TensorType& weight = subgraph.type_of(compiler.Operand(1)).tensor();
  const ir::TensorType& result = conv.type.tensor();
  if (conv.inputs.size() != 2) throw ir::Error("oneDNN: a convolution with a third operand");

  std::string data_layout = transpose ? "NCHW" : conv.attrs.GetString("data_layout");
  std::string primal = ir::Layout(data_layout).primal_axes();
  std::string spatial;
  for (char c : primal) {
    if (c != 'N' && c != 'C') spatial += c;
  }
  std::string canonical = "NC" + spatial;
  std::string kernel_canonical = "OI" + spatial;
  size_t s = spatial.size();
  std::optional<memory::desc> user_src = LayoutDesc(data, canonical);
  std::optional<memory::desc> user_dst = LayoutDesc(result, canonical);
  if (!user_src || !user_dst) {
    throw ir::Error(fmt::format("oneDNN: convolution layout {} is not supported", data_layout));
  }

  int64_t groups = conv.attrs.GetInt("groups");
  std::vector<int64_t> strides = conv.attrs.GetInts("strides");
  std::vector<int64_t> padding = conv.attrs.GetInts("padding");
  std::vector<int64_t> dilation = conv.attrs.GetInts("dilation");
  memory::dims padding_l = Dims(padding, 0, s), padding_r = Dims(padding, s, s);
  if (transpose) {
    std::vector<int64_t> output_padding = conv.attrs.GetInts("output_padding");
    for (size_t k = 0; k < s; ++k) padding_r[k] -= output_padding.at(k);
    if (groups != 1) throw ir::Error("oneDNN: grouped conv2d_transpose is not supported");
  }

  // Weights in oneDNN's logical order: {O, I, k...}, {G, O/G, I/G, k...} when grouped, over
  // plain data (a constant in another layout is converted here, once).
  bool constant_weight = compiler.IsConstant(compiler.Operand(1));
  ir::Tensor constant;
  ir::Shape plain_weight = weight.shape;
  if (constant_weight) {
    constant = compiler.ConstantIn(compiler.Operand(1), kernel_canonical);
    plain_weight = constant.shape();
  } else if (!weight.layout.empty() && weight.layout != kernel_canonical) {
    throw ir::Error(fmt::format("oneDNN: non-constant weights in layout {}", weight.layout));
  }
  memory::desc user_weight_desc;
  if (transpose) {  // ours: [I, O, k...]; oneDNN's logical {O, I, k...} over the same data
    memory::dims dims = {plain_weight[1], plain_weight[0], plain_weight[2], plain_weight[3]};
    user_weight_desc = memory::desc(dims, memory::data_type::f32, Tag::iohw);
  } else if (groups == 1) {
    user_weight_desc = PlainDesc(plain_weight);
  } else {
    ir::Shape grouped = {groups, plain_weight[0] / groups};
    grouped.insert(grouped.end(), plain_weight.begin() + 1, plain_weight.end());
    user_weight_desc = PlainDesc(grouped);
  }
  memory user_weight = constant_weight ? compiler.Own(constant, user_weight_desc)
                                       : compiler.Bind(compiler.Operand(1), user_weight_desc);
  memory::desc any_weight(user_weight_desc.dims(), memory::data_type::f32, Tag::any);

  std::optional<memory> bias = compiler.TakeBias(canonical, result, 1, true);
  memory::desc bias_desc = bias ? bias->get_desc() : memory::desc();
  std::unordered_map<int, memory> args;
  memory::dims stride_dims = Dims(strides, 0, s), dilate_dims = Dims(dilation, 0, s, 1);
  auto kind = dnnl::prop_kind::forward_inference;
  OnednnContext& context = compiler.context();
  OnednnProgram& program = compiler.program();
  auto finish = [&](const auto& descriptor, dnnl::primitive primitive, const std::string& name) {
    memory src = ReorderInput(program, compiler.Bind(compiler.Operand(0), *user_src),
                              descriptor.src_desc(), context);
    memory packed = compiler.IsConstant(compiler.Operand(1))
                        ? ReorderNow(user_weight, descriptor.weights_desc(), context)
                        : ReorderInput(program, user_weight, descriptor.weights_desc(), context);
    memory user_result = compiler.BindResult(*user_dst);
    memory dst = OutputBuffer(user_result, descriptor.dst_desc(), context);
    args[DNNL_ARG_SRC] = src;
    args[DNNL_ARG_WEIGHTS] = packed;
    args[DNNL_ARG_DST] = dst;
    if (bias) args[DNNL_ARG_BIAS] = *bias;
    program.Add(std::move(primitive), args, descriptor, name);
    FinishOutput(program, dst, user_result, context);
  };
  if (transpose) {
    using PD = dnnl::deconvolution_forward::primitive_desc;
    PD descriptor = Choose<PD>(
        compiler, canonical, result, *user_src, *user_dst, args,
        [&](const memory::desc& src, const memory::desc& dst, const dnnl::primitive_attr& attr) {
          if (bias) {
            dnnl::deconvolution_forward::desc desc(kind, dnnl::algorithm::deconvolution_direct, src,
                                                   any_weight, bias_desc, dst, stride_dims,
                                                   dilate_dims, padding_l, padding_r);
            return PD(desc, attr, context.engine);
          }
          dnnl::deconvolution_forward::desc desc(kind, dnnl::algorithm::deconvolution_direct, src,
                                                 any_weight, dst, stride_dims, dilate_dims,
                                                 padding_l, padding_r);
          return PD(desc, attr, context.engine);
        });
    finish(descriptor, dnnl::deconvolution_forward(descriptor), "deconvolution");
  } else {
    using PD = dnnl::convolution_forward::primitive_desc;
    PD descriptor = Choose<PD>(
        compiler, canonical, result, *user_src, *user_dst, args,
        [&](const memory::desc& src, const memory::desc& dst, const dnnl::primitive_attr& attr) {
          if (bias) {
            dnnl::convolution_forward::desc desc(kind, dnnl::algorithm::convolution_direct, src,
                                                 any_weight, bias_desc, dst, stride_dims,
                                                 dilate_dims, padding_l, padding_r);
            return PD(desc, attr, context.engine);
          }
          dnnl::convolution_forward::desc desc(kind, dnnl::algorithm::convolution_direct, src,
                                               any_weight, dst, stride_dims, dilate_dims, padding_l,
                                               padding_r);
          return PD(desc, attr, context.engine);
        });
    finish(descriptor, dnnl::convolution_forward(descriptor), "convolution");
  }
  return compiler.Finish();
}

}  // namespace tandem::backends
