#include "bench/operator_workloads.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "ir/error.h"

namespace tandem::bench {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

memory::dims Dims(const ir::Shape& shape) {
  return memory::dims(shape.begin(), shape.end());
}

// Plain activation tag for rank 3/4/5 (ncw, nchw, ncdhw); the same tags name plain weights.
Tag PlainTag(size_t rank) {
  switch (rank) {
    case 1:
      return Tag::a;
    case 2:
      return Tag::ab;
    case 3:
      return Tag::abc;
    case 4:
      return Tag::abcd;
    case 5:
      return Tag::abcde;
    case 6:
      return Tag::abcdef;
  }
  throw ir::Error(fmt::format("no plain oneDNN format for rank {}", rank));
}

// Adds an input of `type` with random contents to the graph and to the workload.
ir::ValueId RandomInput(ir::GraphBuilder& builder, Workload& workload, const std::string& name,
                        ir::Shape shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  ir::TensorType type = F32(std::move(shape));
  workload.inputs.push_back(ir::Tensor::Random(type, seed + workload.inputs.size(), low, high));
  return builder.Input(name, type);
}

void Finish(ir::GraphBuilder& builder, Workload& workload, ir::ValueId output) {
  ir::TensorType type = builder.TensorTypeOf(output);
  workload.module.Add(builder.Finish(output));
  workload.onednn_output = ir::Tensor(type);
}

// ---- convolutions ----

struct Convolution {
  ir::Shape data;    // N, C, spatial...
  ir::Shape weight;  // O, C/groups, kernel...   (conv2d_transpose: C, O/groups, kernel...)
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool transpose = false;
  bool batch_norm_relu = false;
};

std::string ConvolutionSummary(const std::string& op, const Convolution& c, const ir::Shape& out) {
  std::string text = fmt::format("{} x{} w{} s{} p{}", op, ir::ShapeToString(c.data),
                                 ir::ShapeToString(c.weight), c.stride, c.padding);
  if (c.dilation != 1) text += fmt::format(" d{}", c.dilation);
  if (c.groups != 1) text += fmt::format(" g{}", c.groups);
  if (c.batch_norm_relu) text += " +batch_norm+relu";
  return text + " -> " + ir::ShapeToString(out);
}

double ConvolutionFlops(const Convolution& c, const ir::Shape& out) {
  double kernel =
      static_cast<double>(ir::NumElements(ir::Shape(c.weight.begin() + 2, c.weight.end())));
  if (c.transpose) {  // every input pixel times every tap, into every output channel
    return 2.0 * static_cast<double>(ir::NumElements(c.data)) * static_cast<double>(out[1]) /
           static_cast<double>(c.groups) * kernel;
  }
  double flops =
      2.0 * static_cast<double>(ir::NumElements(out)) * static_cast<double>(c.weight[1]) * kernel;
  if (c.batch_norm_relu) flops += 3.0 * static_cast<double>(ir::NumElements(out));
  return flops;
}

// One oneDNN (de)convolution program; `blocked` lets oneDNN choose the activation layouts
// (reordered from and to the plain ones inside the program), else they stay plain. Weights
// always use format `any`, reordered once here.
OnednnProgram ConvolutionProgram(const Convolution& c, Workload& workload, const ir::Tensor& weight,
                                 const ir::Tensor* bias, bool blocked, OnednnContext& context) {
  size_t spatial = c.data.size() - 2;
  const ir::Shape& out = workload.onednn_output.shape();
  memory::dims weight_dims;
  Tag weight_tag;
  if (c.transpose) {  // oneDNN names deconvolution weights {O, I, k...}; ours are [I, O, k...]
    weight_dims = {c.weight[1], c.weight[0], c.weight[2], c.weight[3]};
    weight_tag = Tag::iohw;
    if (c.groups != 1) throw ir::Error("grouped conv2d_transpose is not in this benchmark");
  } else if (c.groups == 1) {
    weight_dims = Dims(c.weight);
    weight_tag = PlainTag(c.weight.size());
  } else {
    weight_dims = {c.groups, c.weight[0] / c.groups};
    weight_dims.insert(weight_dims.end(), c.weight.begin() + 1, c.weight.end());
    weight_tag = PlainTag(weight_dims.size());
  }
  memory::dims strides(spatial, c.stride), padding(spatial, c.padding),
      dilates(spatial, c.dilation - 1);
  memory user_src = WrapTensor(workload.inputs[0], Dims(c.data), PlainTag(c.data.size()), context);
  memory user_dst = WrapTensor(workload.onednn_output, Dims(out), PlainTag(out.size()), context);
  memory user_weight = WrapTensor(weight, weight_dims, weight_tag, context);
  auto activation = [&](const memory& user) {
    return blocked ? memory::desc(user.get_desc().dims(), memory::data_type::f32, Tag::any)
                   : user.get_desc();
  };
  memory::desc weight_any(weight_dims, memory::data_type::f32, Tag::any);
  memory::desc bias_desc;
  if (bias != nullptr) bias_desc = memory::desc({out[1]}, memory::data_type::f32, Tag::a);
  dnnl::primitive_attr attr;
  if (c.batch_norm_relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  auto kind = dnnl::prop_kind::forward_inference;
  OnednnProgram program(blocked ? "blocked activations" : "plain activations");
  auto build = [&](const auto& descriptor, dnnl::primitive primitive, const std::string& name) {
    memory src = ReorderInput(program, user_src, descriptor.src_desc(), context);
    memory packed_weight = ReorderNow(user_weight, descriptor.weights_desc(), context);
    memory dst = OutputBuffer(user_dst, descriptor.dst_desc(), context);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed_weight}, {DNNL_ARG_DST, dst}};
    if (bias != nullptr) args[DNNL_ARG_BIAS] = WrapTensor(*bias, {out[1]}, Tag::a, context);
    program.Add(std::move(primitive), args, name + ":" + descriptor.impl_info_str());
    FinishOutput(program, dst, user_dst, context);
  };
  if (c.transpose) {
    dnnl::deconvolution_forward::desc desc(
        kind, dnnl::algorithm::deconvolution_direct, activation(user_src), weight_any, bias_desc,
        activation(user_dst), strides, dilates, padding, padding);
    dnnl::deconvolution_forward::primitive_desc descriptor(desc, attr, context.engine);
    build(descriptor, dnnl::deconvolution_forward(descriptor), "deconv");
  } else {
    dnnl::convolution_forward::desc desc(kind, dnnl::algorithm::convolution_direct,
                                         activation(user_src), weight_any, bias_desc,
                                         activation(user_dst), strides, dilates, padding, padding);
    dnnl::convolution_forward::primitive_desc descriptor(desc, attr, context.engine);
    build(descriptor, dnnl::convolution_forward(descriptor), "conv");
  }
  return program;
}

Workload ConvolutionWorkload(const std::string& name, const Convolution& c, OnednnContext& context,
                             uint64_t seed) {
  Workload workload;
  workload.name = name;
  size_t spatial = c.data.size() - 2;
  ir::GraphBuilder builder("main");
  ir::ValueId x = RandomInput(builder, workload, "x", c.data, seed);
  ir::ValueId w = RandomInput(builder, workload, "w", c.weight, seed, -0.5, 0.5);
  ir::Attrs attrs{{"strides", std::vector<int64_t>(spatial, c.stride)},
                  {"padding", std::vector<int64_t>(2 * spatial, c.padding)},
                  {"dilation", std::vector<int64_t>(spatial, c.dilation)},
                  {"groups", c.groups}};
  std::string op = c.transpose ? "conv2d_transpose" : fmt::format("conv{}d", spatial);
  ir::ValueId y = builder.Call(op, {x, w}, attrs);
  if (c.batch_norm_relu) {
    int64_t channels = builder.TensorTypeOf(y).shape[1];
    ir::ValueId gamma = RandomInput(builder, workload, "gamma", {channels}, seed, 0.5, 1.5);
    ir::ValueId beta = RandomInput(builder, workload, "beta", {channels}, seed);
    ir::ValueId mean = RandomInput(builder, workload, "mean", {channels}, seed);
    ir::ValueId variance = RandomInput(builder, workload, "variance", {channels}, seed, 0.5, 1.5);
    y = builder.Call("batch_norm", {y, gamma, beta, mean, variance}, ir::Attrs{{"epsilon", 1e-5}});
    y = builder.Call("relu", {y});
  }
  Finish(builder, workload, y);
  const ir::Shape& out = workload.onednn_output.shape();
  workload.shapes = ConvolutionSummary(op, c, out);
  workload.flops = ConvolutionFlops(c, out);

  const ir::Tensor* weight = &workload.inputs[1];
  const ir::Tensor* bias = nullptr;
  if (c.batch_norm_relu) {  // fold batch norm into the filter and a bias (setup time)
    const ir::Tensor& gamma = workload.inputs[2];
    const ir::Tensor& beta = workload.inputs[3];
    const ir::Tensor& mean = workload.inputs[4];
    const ir::Tensor& variance = workload.inputs[5];
    ir::Tensor folded = workload.inputs[1].Clone();
    ir::Tensor folded_bias(F32({out[1]}));
    int64_t per_channel = folded.num_elements() / out[1];
    for (int64_t o = 0; o < out[1]; ++o) {
      double scale = gamma.data<float>()[o] / std::sqrt(variance.data<float>()[o] + 1e-5);
      for (int64_t i = 0; i < per_channel; ++i)
        folded.data<float>()[o * per_channel + i] *= static_cast<float>(scale);
      folded_bias.data<float>()[o] =
          static_cast<float>(beta.data<float>()[o] - mean.data<float>()[o] * scale);
    }
    workload.keep_alive = {folded, folded_bias};
    weight = &workload.keep_alive[0];
    bias = &workload.keep_alive[1];
  }
  for (bool blocked : {false, true}) {
    workload.onednn_programs.push_back(
        ConvolutionProgram(c, workload, *weight, bias, blocked, context));
  }
  return workload;
}

// A depthwise conv2d in channels-last layouts, as a network converted to NHWC runs it: data
// [1, H, W, C], weights HWIO [K, K, 1, C]; oneDNN reads and writes the same NHWC memory (no
// reorder), its weights reordered once at setup.
// oneDNN's program for a convolution over channels-last activations: the weights (logical dims
// `weight_dims`) reordered once, at setup, into the layout its implementation chose.
OnednnProgram NhwcConvolutionProgram(const memory& user_src, const memory& user_weight,
                                     const memory& user_dst, const memory::dims& weight_dims,
                                     int64_t stride, int64_t padding, OnednnContext& context) {
  memory::desc weight_any(weight_dims, memory::data_type::f32, Tag::any);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, user_src.get_desc(),
      weight_any, user_dst.get_desc(), {stride, stride}, {padding, padding}, {padding, padding});
  dnnl::convolution_forward::primitive_desc descriptor(desc, context.engine);
  OnednnProgram program("NHWC activations");
  memory packed_weight = ReorderNow(user_weight, descriptor.weights_desc(), context);
  program.Add(
      dnnl::convolution_forward(descriptor),
      {{DNNL_ARG_SRC, user_src}, {DNNL_ARG_WEIGHTS, packed_weight}, {DNNL_ARG_DST, user_dst}},
      std::string("conv:") + descriptor.impl_info_str());
  return program;
}

Workload ChannelsLastDepthwiseWorkload(const std::string& name, int64_t channels, int64_t size,
                                       int64_t kernel, int64_t stride, OnednnContext& context,
                                       uint64_t seed) {
  Workload workload;
  workload.name = name;
  int64_t padding = kernel / 2;
  ir::GraphBuilder builder("main");
  ir::ValueId x = RandomInput(builder, workload, "x", {1, size, size, channels}, seed);
  ir::ValueId w =
      RandomInput(builder, workload, "w", {kernel, kernel, 1, channels}, seed, -0.5, 0.5);
  ir::Attrs attrs{{"strides", std::vector<int64_t>{stride, stride}},
                  {"padding", std::vector<int64_t>(4, padding)},
                  {"dilation", std::vector<int64_t>{1, 1}},
                  {"groups", channels},
                  {"data_layout", std::string("NHWC")},
                  {"kernel_layout", std::string("HWIO")}};
  Finish(builder, workload, builder.Call("conv2d", {x, w}, attrs));
  const ir::Shape& out = workload.onednn_output.shape();  // [1, OH, OW, C]
  workload.shapes =
      fmt::format("depthwise conv2d NHWC x[1,{0},{0},{1}] w[{2},{2},1,{1}] s{3} p{4} -> {5}", size,
                  channels, kernel, stride, padding, ir::ShapeToString(out));
  workload.flops =
      2.0 * static_cast<double>(ir::NumElements(out)) * static_cast<double>(kernel * kernel);
  // Logical oneDNN dims: data {N, C, H, W} in NHWC memory; weights {G, O/G, I/G, KH, KW}.
  memory user_src = WrapTensor(workload.inputs[0], {1, channels, size, size}, Tag::acdb, context);
  memory user_dst =
      WrapTensor(workload.onednn_output, {1, channels, out[1], out[2]}, Tag::acdb, context);
  memory::dims weight_dims = {channels, 1, 1, kernel, kernel};
  memory user_weight = WrapTensor(workload.inputs[1], weight_dims,
                                  {1, channels, channels, kernel * channels, channels}, context);
  workload.onednn_programs.push_back(NhwcConvolutionProgram(user_src, user_weight, user_dst,
                                                            weight_dims, stride, padding, context));
  return workload;
}

// A dense convolution channels-last: x[1, size, size, in] by constant weights [k, k, in, out]
// (HWIO), stride `stride`, padding k / 2, as a network converted to NHWC runs it (k = 1: the
// expand and project convolutions of an inverted-bottleneck block, a bottleneck's 1x1). Tandem
// packs the weights at compile time, oneDNN reorders them at setup; both read and write the
// same NHWC memory.
Workload ChannelsLastConvolutionWorkload(const std::string& name, int64_t in_channels,
                                         int64_t out_channels, int64_t size, int64_t kernel,
                                         int64_t stride, int64_t groups, OnednnContext& context,
                                         uint64_t seed) {
  Workload workload;
  workload.name = name;
  int64_t padding = kernel / 2;
  int64_t group_in = in_channels / groups;
  ir::GraphBuilder builder("main");
  ir::ValueId x = RandomInput(builder, workload, "x", {1, size, size, in_channels}, seed);
  ir::Tensor weights =
      ir::Tensor::Random(F32({kernel, kernel, group_in, out_channels}), seed + 1000, -0.5, 0.5);
  ir::ValueId w = builder.Constant(weights, "w");
  ir::Attrs attrs{{"strides", std::vector<int64_t>{stride, stride}},
                  {"padding", std::vector<int64_t>(4, padding)},
                  {"dilation", std::vector<int64_t>{1, 1}},
                  {"groups", groups},
                  {"data_layout", std::string("NHWC")},
                  {"kernel_layout", std::string("HWIO")}};
  Finish(builder, workload, builder.Call("conv2d", {x, w}, attrs));
  const ir::Shape& out = workload.onednn_output.shape();  // [1, OH, OW, out]
  workload.shapes =
      fmt::format("conv2d NHWC x[1,{0},{0},{1}] w constant [{2},{2},{3},{4}]{5} s{6} p{7} -> {8}",
                  size, in_channels, kernel, group_in, out_channels,
                  groups > 1 ? fmt::format(" groups {}", groups) : std::string(), stride, padding,
                  ir::ShapeToString(out));
  workload.flops = 2.0 * static_cast<double>(ir::NumElements(out)) *
                   static_cast<double>(kernel * kernel * group_in);
  workload.keep_alive = {weights};
  memory user_src =
      WrapTensor(workload.inputs[0], {1, in_channels, size, size}, Tag::acdb, context);
  memory user_dst =
      WrapTensor(workload.onednn_output, {1, out_channels, out[1], out[2]}, Tag::acdb, context);
  memory::dims weight_dims = {out_channels, in_channels, kernel, kernel};
  memory user_weight = WrapTensor(workload.keep_alive[0], weight_dims, Tag::cdba, context);
  if (groups > 1) {
    // Logical {G, O/G, I/G, KH, KW} over the HWIO tensor [k, k, I/G, O].
    int64_t group_out = out_channels / groups;
    weight_dims = {groups, group_out, group_in, kernel, kernel};
    user_weight = WrapTensor(
        workload.keep_alive[0], weight_dims,
        {group_out, 1, out_channels, kernel * group_in * out_channels, group_in * out_channels},
        context);
  }
  workload.onednn_programs.push_back(NhwcConvolutionProgram(user_src, user_weight, user_dst,
                                                            weight_dims, stride, padding, context));
  return workload;
}

// ---- matmul ----

Workload GemmWorkload(const std::string& name, int64_t size, OnednnContext& context,
                      uint64_t seed) {
  Workload workload;
  workload.name = name;
  ir::GraphBuilder builder("main");
  ir::ValueId a = RandomInput(builder, workload, "a", {size, size}, seed);
  ir::ValueId b = RandomInput(builder, workload, "b", {size, size}, seed);
  Finish(builder, workload, builder.Call("matmul", {a, b}));
  workload.shapes = fmt::format("matmul [{0},{0}] x [{0},{0}]", size);
  workload.flops = 2.0 * std::pow(static_cast<double>(size), 3);
  memory user_a = WrapTensor(workload.inputs[0], {size, size}, Tag::ab, context);
  memory user_b = WrapTensor(workload.inputs[1], {size, size}, Tag::ab, context);
  memory user_c = WrapTensor(workload.onednn_output, {size, size}, Tag::ab, context);
  for (bool packed : {false, true}) {
    memory::desc b_desc =
        packed ? memory::desc({size, size}, memory::data_type::f32, Tag::any) : user_b.get_desc();
    dnnl::matmul::desc desc(user_a.get_desc(), b_desc, user_c.get_desc());
    dnnl::matmul::primitive_desc descriptor(desc, context.engine);
    OnednnProgram program(packed ? "B packed at setup" : "B plain");
    memory b = ReorderNow(user_b, descriptor.weights_desc(), context);
    program.Add(dnnl::matmul(descriptor),
                {{DNNL_ARG_SRC, user_a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, user_c}},
                std::string("matmul:") + descriptor.impl_info_str());
    workload.onednn_programs.push_back(std::move(program));
  }
  return workload;
}

// A dense layer's GEMM: activations [m, k] (an input) times constant weights [k, n], as a model
// has them after import: Tandem's pipelines may pack the constant at compile time, and oneDNN
// gets its weights reordered into its own layout once at setup.
Workload DenseWorkload(const std::string& name, int64_t m, int64_t k, int64_t n,
                       OnednnContext& context, uint64_t seed) {
  Workload workload;
  workload.name = name;
  ir::GraphBuilder builder("main");
  ir::ValueId a = RandomInput(builder, workload, "a", {m, k}, seed);
  ir::Tensor weights = ir::Tensor::Random(F32({k, n}), seed + 1000, -0.5, 0.5);
  ir::ValueId w = builder.Constant(weights, "w");
  Finish(builder, workload, builder.Call("matmul", {a, w}));
  workload.shapes = fmt::format("matmul [{},{}] x constant [{},{}]", m, k, k, n);
  workload.flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  workload.keep_alive = {weights};
  memory user_a = WrapTensor(workload.inputs[0], {m, k}, Tag::ab, context);
  memory user_w = WrapTensor(workload.keep_alive[0], {k, n}, Tag::ab, context);
  memory user_c = WrapTensor(workload.onednn_output, {m, n}, Tag::ab, context);
  memory::desc w_desc({k, n}, memory::data_type::f32, Tag::any);
  dnnl::matmul::desc desc(user_a.get_desc(), w_desc, user_c.get_desc());
  dnnl::matmul::primitive_desc descriptor(desc, context.engine);
  OnednnProgram program("weights packed at setup");
  memory packed = ReorderNow(user_w, descriptor.weights_desc(), context);
  program.Add(dnnl::matmul(descriptor),
              {{DNNL_ARG_SRC, user_a}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, user_c}},
              std::string("matmul:") + descriptor.impl_info_str());
  workload.onednn_programs.push_back(std::move(program));
  return workload;
}

Workload TransposeBatchMatmulWorkload(OnednnContext& context, uint64_t seed) {
  const int64_t seq = 128, heads = 12, dim = 64;
  Workload workload;
  workload.name = "TBG";
  ir::GraphBuilder builder("main");
  ir::ValueId q = RandomInput(builder, workload, "q", {1, seq, heads, dim}, seed);
  ir::ValueId k = RandomInput(builder, workload, "k", {1, seq, heads, dim}, seed);
  ir::ValueId qt =
      builder.Call("transpose", {q}, ir::Attrs{{"axes", std::vector<int64_t>{0, 2, 1, 3}}});
  ir::ValueId kt =
      builder.Call("transpose", {k}, ir::Attrs{{"axes", std::vector<int64_t>{0, 2, 3, 1}}});
  Finish(builder, workload, builder.Call("matmul", {qt, kt}));
  workload.shapes = "transpose+matmul q,k[1,128,12,64] -> [12,128,64] x [12,64,128]";
  workload.flops = 2.0 * heads * seq * seq * dim;
  // The transposes as strided views: Q^T[h][s][d] = Q[s][h][d], K^T[h][d][s] = K[s][h][d].
  memory q_view = WrapTensor(workload.inputs[0], {heads, seq, dim}, {dim, heads * dim, 1}, context);
  memory k_view = WrapTensor(workload.inputs[1], {heads, dim, seq}, {dim, 1, heads * dim}, context);
  memory user_c = WrapTensor(workload.onednn_output, {heads, seq, seq}, Tag::abc, context);
  for (bool dense : {false, true}) {
    OnednnProgram program(dense ? "operands reordered to dense per call" : "strided operands");
    memory a = q_view, b = k_view;
    if (dense) {
      a = ReorderInput(program, q_view,
                       memory::desc({heads, seq, dim}, memory::data_type::f32, Tag::abc), context);
      b = ReorderInput(program, k_view,
                       memory::desc({heads, dim, seq}, memory::data_type::f32, Tag::abc), context);
    }
    dnnl::matmul::desc desc(a.get_desc(), b.get_desc(), user_c.get_desc());
    dnnl::matmul::primitive_desc descriptor(desc, context.engine);
    program.Add(dnnl::matmul(descriptor),
                {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, user_c}},
                std::string("matmul:") + descriptor.impl_info_str());
    workload.onednn_programs.push_back(std::move(program));
  }
  return workload;
}

// ---- reductions ----

Workload NormWorkload(OnednnContext& context, uint64_t seed) {
  Workload workload;
  workload.name = "NRM";
  ir::GraphBuilder builder("main");
  ir::ValueId x = RandomInput(builder, workload, "x", {1, 256, 256}, seed);
  ir::ValueId square = builder.Call("multiply", {x, x});
  ir::ValueId sum = builder.Call("sum", {square}, ir::Attrs{{"axes", std::vector<int64_t>{}}});
  Finish(builder, workload, builder.Call("sqrt", {sum}));
  workload.onednn_output = workload.onednn_output.Reshaped({1, 1, 1});
  workload.shapes = "sqrt(sum(x*x)), x[1,256,256] -> scalar";
  workload.flops = 2.0 * 256 * 256 + 1;
  memory src = WrapTensor(workload.inputs[0], {1, 256, 256}, Tag::abc, context);
  memory dst = WrapTensor(workload.onednn_output, {1, 1, 1}, Tag::abc, context);
  {  // one primitive: sum of squares with a sqrt post-op (oneDNN 2.6 runs it in "ref")
    dnnl::primitive_attr attr;
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_sqrt, 0.0f, 0.0f);
    attr.set_post_ops(ops);
    dnnl::reduction::desc desc(dnnl::algorithm::reduction_norm_lp_power_p_sum, src.get_desc(),
                               dst.get_desc(), 2.0f, 0.0f);
    dnnl::reduction::primitive_desc descriptor(desc, attr, context.engine);
    OnednnProgram program("power-2 sum + sqrt post-op");
    program.Add(dnnl::reduction(descriptor), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
                std::string("reduction:") + descriptor.impl_info_str());
    workload.onednn_programs.push_back(std::move(program));
  }
  {  // square, plain sum (which has a jit kernel), sqrt of the one result
    OnednnProgram program("square + sum + sqrt");
    memory squares(src.get_desc(), context.engine);
    auto kind = dnnl::prop_kind::forward_inference;
    dnnl::eltwise_forward::primitive_desc square(
        dnnl::eltwise_forward::desc(kind, dnnl::algorithm::eltwise_square, src.get_desc()),
        context.engine);
    program.Add(dnnl::eltwise_forward(square), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, squares}},
                std::string("eltwise:") + square.impl_info_str());
    dnnl::reduction::primitive_desc sum(
        dnnl::reduction::desc(dnnl::algorithm::reduction_sum, src.get_desc(), dst.get_desc(), 0.0f,
                              0.0f),
        context.engine);
    program.Add(dnnl::reduction(sum), {{DNNL_ARG_SRC, squares}, {DNNL_ARG_DST, dst}},
                std::string("reduction:") + sum.impl_info_str());
    dnnl::eltwise_forward::primitive_desc root(
        dnnl::eltwise_forward::desc(kind, dnnl::algorithm::eltwise_sqrt, dst.get_desc()),
        context.engine);
    program.Add(dnnl::eltwise_forward(root), {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}},
                std::string("eltwise:") + root.impl_info_str());
    workload.onednn_programs.push_back(std::move(program));
  }
  return workload;
}

Workload SoftmaxWorkload(OnednnContext& context, uint64_t seed) {
  Workload workload;
  workload.name = "SFM";
  ir::GraphBuilder builder("main");
  ir::ValueId x = RandomInput(builder, workload, "x", {256, 256}, seed, -4.0, 4.0);
  Finish(builder, workload, builder.Call("softmax", {x}, ir::Attrs{{"axis", int64_t{-1}}}));
  workload.shapes = "softmax(x[256,256], axis -1)";
  workload.flops = 5.0 * 256 * 256;
  memory src = WrapTensor(workload.inputs[0], {256, 256}, Tag::ab, context);
  memory dst = WrapTensor(workload.onednn_output, {256, 256}, Tag::ab, context);
  dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::softmax_accurate, src.get_desc(),
                                      dst.get_desc(), 1);
  dnnl::softmax_v2_forward::primitive_desc descriptor(desc, context.engine);
  OnednnProgram program("softmax");
  program.Add(dnnl::softmax_v2_forward(descriptor), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
              std::string("softmax:") + descriptor.impl_info_str());
  workload.onednn_programs.push_back(std::move(program));
  return workload;
}

using Factory = std::function<Workload(OnednnContext&, uint64_t)>;

Factory Conv(std::string name, Convolution c) {
  return [name, c](OnednnContext& context, uint64_t seed) {
    return ConvolutionWorkload(name, c, context, seed);
  };
}

Factory Gemm(std::string name, int64_t size) {
  return [name, size](OnednnContext& context, uint64_t seed) {
    return GemmWorkload(name, size, context, seed);
  };
}

Factory Dense(std::string name, int64_t m, int64_t k, int64_t n) {
  return [name, m, k, n](OnednnContext& context, uint64_t seed) {
    return DenseWorkload(name, m, k, n, context, seed);
  };
}

// A depthwise conv2d over [1, channels, size, size], kernel x kernel, padding kernel / 2.
std::pair<std::string, Factory> Depthwise(int64_t channels, int64_t size, int64_t kernel,
                                          int64_t stride) {
  std::string name = fmt::format("DW-{}x{}-k{}s{}", channels, size, kernel, stride);
  return {name, Conv(name, {.data = {1, channels, size, size},
                            .weight = {channels, 1, kernel, kernel},
                            .stride = stride,
                            .padding = kernel / 2,
                            .groups = channels})};
}

// The same depthwise convolution channels-last (see ChannelsLastDepthwiseWorkload).
std::pair<std::string, Factory> ChannelsLastDepthwise(int64_t channels, int64_t size,
                                                      int64_t kernel, int64_t stride) {
  std::string name = fmt::format("DWL-{}x{}-k{}s{}", channels, size, kernel, stride);
  return {name, [=](OnednnContext& context, uint64_t seed) {
            return ChannelsLastDepthwiseWorkload(name, channels, size, kernel, stride, context,
                                                 seed);
          }};
}

// The 1x1 convolution channels-last (see ChannelsLastConvolutionWorkload).
std::pair<std::string, Factory> ChannelsLastPointwise(int64_t in_channels, int64_t out_channels,
                                                      int64_t size) {
  std::string name = fmt::format("PWL-{}x{}x{}", in_channels, out_channels, size);
  return {name, [=](OnednnContext& context, uint64_t seed) {
            return ChannelsLastConvolutionWorkload(name, in_channels, out_channels, size, 1, 1, 1,
                                                   context, seed);
          }};
}

// A dense k x k convolution channels-last (see ChannelsLastConvolutionWorkload).
std::pair<std::string, Factory> ChannelsLastConvolution(int64_t in_channels, int64_t out_channels,
                                                        int64_t size, int64_t kernel,
                                                        int64_t stride) {
  std::string name =
      fmt::format("CVL-{}x{}x{}-k{}s{}", in_channels, out_channels, size, kernel, stride);
  return {name, [=](OnednnContext& context, uint64_t seed) {
            return ChannelsLastConvolutionWorkload(name, in_channels, out_channels, size, kernel,
                                                   stride, 1, context, seed);
          }};
}

// A grouped convolution channels-last, `groups` groups (RegNet's and ResNeXt's 3x3 convolutions).
std::pair<std::string, Factory> ChannelsLastGroupedConvolution(int64_t in_channels,
                                                               int64_t out_channels, int64_t size,
                                                               int64_t kernel, int64_t stride,
                                                               int64_t groups) {
  std::string name = fmt::format("GCL-{}x{}x{}-k{}s{}g{}", in_channels, out_channels, size, kernel,
                                 stride, groups);
  return {name, [=](OnednnContext& context, uint64_t seed) {
            return ChannelsLastConvolutionWorkload(name, in_channels, out_channels, size, kernel,
                                                   stride, groups, context, seed);
          }};
}

// The shape families whose names carry their sizes: a workload of any size is named by them
// (MM-MxKxN, DWL-CxS-kKsS, PWL-IxOxS, CVL-IxOxS-kKsS, GCL-IxOxS-kKsSgG), not only the listed ones.
// nullopt when `name` is not of one of these forms (or a size is 0 or absurdly large).
std::optional<std::pair<std::string, Factory>> ParseSizedWorkload(const std::string& name) {
  // The numbers of `name` when it is `prefix` then numbers joined by `separators` in order.
  auto numbers = [&](const std::string& prefix,
                     std::vector<std::string> separators) -> std::optional<std::vector<int64_t>> {
    if (name.rfind(prefix, 0) != 0) return std::nullopt;
    separators.push_back("");
    std::vector<int64_t> values;
    size_t at = prefix.size();
    for (const std::string& separator : separators) {
      size_t end = at;
      while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
      if (end == at || end - at > 6) return std::nullopt;
      values.push_back(std::stoll(name.substr(at, end - at)));
      if (values.back() == 0) return std::nullopt;
      if (name.compare(end, separator.size(), separator) != 0) return std::nullopt;
      at = end + separator.size();
    }
    if (at != name.size()) return std::nullopt;
    return values;
  };
  if (auto v = numbers("MM-", {"x", "x"})) {
    return std::pair{name, Dense(name, (*v)[0], (*v)[1], (*v)[2])};
  }
  if (auto v = numbers("PWL-", {"x", "x"})) {
    return ChannelsLastPointwise((*v)[0], (*v)[1], (*v)[2]);
  }
  if (auto v = numbers("DWL-", {"x", "-k", "s"})) {
    return ChannelsLastDepthwise((*v)[0], (*v)[1], (*v)[2], (*v)[3]);
  }
  if (auto v = numbers("CVL-", {"x", "x", "-k", "s"})) {
    return ChannelsLastConvolution((*v)[0], (*v)[1], (*v)[2], (*v)[3], (*v)[4]);
  }
  if (auto v = numbers("GCL-", {"x", "x", "-k", "s", "g"})) {
    if ((*v)[0] % (*v)[5] != 0 || (*v)[1] % (*v)[5] != 0) return std::nullopt;
    return ChannelsLastGroupedConvolution((*v)[0], (*v)[1], (*v)[2], (*v)[3], (*v)[4], (*v)[5]);
  }
  return std::nullopt;
}

const std::vector<std::pair<std::string, Factory>>& Factories() {
  static const std::vector<std::pair<std::string, Factory>> factories = {
      {"C1D",
       Conv("C1D", {.data = {1, 64, 256}, .weight = {128, 64, 3}, .stride = 2, .padding = 1})},
      {"C2D",
       Conv("C2D", {.data = {1, 3, 224, 224}, .weight = {64, 3, 7, 7}, .stride = 2, .padding = 3})},
      {"C3D",
       Conv("C3D",
            {.data = {1, 3, 16, 224, 224}, .weight = {64, 3, 7, 7, 7}, .stride = 2, .padding = 3})},
      {"DEP", Conv("DEP", {.data = {1, 32, 112, 112},
                           .weight = {32, 1, 3, 3},
                           .stride = 1,
                           .padding = 1,
                           .groups = 32})},
      {"DIL", Conv("DIL", {.data = {1, 3, 224, 224},
                           .weight = {64, 3, 7, 7},
                           .stride = 2,
                           .padding = 3,
                           .dilation = 2})},
      {"GMM", Gemm("GMM", 128)},
      {"GMM-512", Gemm("GMM-512", 512)},
      {"GMM-1024", Gemm("GMM-1024", 1024)},
      {"GRP", Conv("GRP", {.data = {1, 64, 56, 56},
                           .weight = {128, 16, 3, 3},
                           .stride = 2,
                           .padding = 1,
                           .groups = 4})},
      {"T2D", Conv("T2D", {.data = {1, 512, 4, 4},
                           .weight = {512, 256, 4, 4},
                           .stride = 2,
                           .padding = 1,
                           .transpose = true})},
      {"CBR", Conv("CBR", {.data = {1, 3, 224, 224},
                           .weight = {64, 3, 7, 7},
                           .stride = 2,
                           .padding = 3,
                           .batch_norm_relu = true})},
      {"TBG", TransposeBatchMatmulWorkload},
      {"NRM", NormWorkload},
      {"SFM", SoftmaxWorkload},
      // GMM-512 and GMM-1024 with constant weights, as a dense layer has them.
      {"MM-512x512x512", Dense("MM-512x512x512", 512, 512, 512)},
      {"MM-1024x1024x1024", Dense("MM-1024x1024x1024", 1024, 1024, 1024)},
      // The GEMMs of a transformer encoder layer (hidden 768, feed-forward 3072, 128 tokens):
      // attention projections, feed-forward up and down.
      {"MM-128x768x768", Dense("MM-128x768x768", 128, 768, 768)},
      {"MM-128x768x3072", Dense("MM-128x768x3072", 128, 768, 3072)},
      {"MM-128x3072x768", Dense("MM-128x3072x768", 128, 3072, 768)},
      // The depthwise convolutions of a mobile inverted-bottleneck network (224x224 input):
      // 3x3 and 5x5 at stride 1 and 2, from 32 channels at 112x112 to 1152 at 7x7.
      Depthwise(32, 112, 3, 1),
      Depthwise(96, 112, 3, 2),
      Depthwise(144, 56, 3, 1),
      Depthwise(144, 56, 5, 2),
      Depthwise(240, 28, 5, 1),
      Depthwise(240, 28, 3, 2),
      Depthwise(480, 14, 3, 1),
      Depthwise(480, 14, 5, 1),
      Depthwise(672, 14, 5, 1),
      Depthwise(672, 14, 5, 2),
      Depthwise(1152, 7, 5, 1),
      Depthwise(1152, 7, 3, 1),
      ChannelsLastDepthwise(32, 112, 3, 1),
      ChannelsLastDepthwise(96, 112, 3, 2),
      ChannelsLastDepthwise(144, 56, 3, 1),
      ChannelsLastDepthwise(144, 56, 5, 2),
      ChannelsLastDepthwise(240, 28, 5, 1),
      ChannelsLastDepthwise(240, 28, 3, 2),
      ChannelsLastDepthwise(480, 14, 3, 1),
      ChannelsLastDepthwise(480, 14, 5, 1),
      ChannelsLastDepthwise(672, 14, 5, 1),
      ChannelsLastDepthwise(672, 14, 5, 2),
      ChannelsLastDepthwise(1152, 7, 5, 1),
      ChannelsLastDepthwise(1152, 7, 3, 1),
      // The 1x1 convolutions of the same networks, channels-last: expansions (few input
      // channels, many output channels) from 112x112 down to 7x7 and projections back.
      ChannelsLastPointwise(16, 96, 112),
      ChannelsLastPointwise(24, 144, 56),
      ChannelsLastPointwise(40, 240, 28),
      ChannelsLastPointwise(80, 480, 14),
      ChannelsLastPointwise(112, 672, 14),
      ChannelsLastPointwise(192, 1152, 7),
      ChannelsLastPointwise(144, 24, 56),
      ChannelsLastPointwise(672, 112, 14),
      ChannelsLastPointwise(1152, 192, 7),
      // The convolutions of a bottleneck network's last stage (7x7 maps), where a register tile
      // has the fewest spatial positions to work with.
      ChannelsLastPointwise(2048, 512, 7),
      ChannelsLastPointwise(512, 2048, 7),
      ChannelsLastConvolution(512, 512, 7, 3, 1),
      ChannelsLastConvolution(256, 256, 14, 3, 1),
  };
  return factories;
}

}  // namespace

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Factories()) names.push_back(name);
  return names;
}

namespace {

// The factory of workload `name`: a listed one, or one of the families of any size.
std::optional<Factory> FindFactory(const std::string& name) {
  for (const auto& [known, factory] : Factories()) {
    if (known == name) return factory;
  }
  if (auto sized = ParseSizedWorkload(name)) return sized->second;
  return std::nullopt;
}

}  // namespace

std::string WorkloadNamesText() {
  return fmt::format(
      "{}; and any size of MM-MxKxN, DWL-CxS-kKsS, PWL-IxOxS, CVL-IxOxS-kKsS, GCL-IxOxS-kKsSgG",
      fmt::join(WorkloadNames(), ", "));
}

bool IsWorkloadName(const std::string& name) {
  return FindFactory(name).has_value();
}

Workload MakeWorkload(const std::string& name, OnednnContext& context, uint64_t seed) {
  std::optional<Factory> factory = FindFactory(name);
  if (!factory) {
    throw ir::Error(fmt::format("unknown workload '{}' (known: {})", name, WorkloadNamesText()));
  }
  return (*factory)(context, seed);
}

}  // namespace tandem::bench
