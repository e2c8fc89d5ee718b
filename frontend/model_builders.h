// Example models built in C++ through the public GraphBuilder API.
//
// Each builder returns an IRModule with one graph function "main" that takes one f32 input and
// returns one f32 tensor. Weights are f32 constants drawn from a deterministic generator seeded
// by the config's `seed` (the same config always gives the same module), scaled so that
// activations stay O(1) for inputs of O(1): convolution and dense weights are uniform in
// ±1/sqrt(fan_in), biases in ±0.1. Batch-norm parameters are randomized so that folding them
// into the convolution changes the weights: gamma and variance in [0.5, 1.5), beta and mean in
// ±0.1; layer-norm gamma in [0.5, 1.5), beta in ±0.1. Every weight is a named constant (listed per
// builder below), so tests and tools can read it back with GraphFunction::Find. Convolutions have
// no bias (batch norm follows them).
//
// An invalid config (a non-positive size, heads not dividing hidden, a stride other than 1 or 2)
// throws ir::Error naming the builder and the field.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace tandem::frontend {

struct ResNetBlockConfig {
  int64_t batch = 1, channels = 64, height = 56, width = 56;
  uint64_t seed = 0;
};

// The ResNet-18/34 basic block with an identity shortcut.
//   input  "data"  f32[batch, channels, height, width] (NCHW)
//   output         f32[batch, channels, height, width]
//   structure      conv3x3(pad 1) - batch_norm - relu - conv3x3(pad 1) - batch_norm,
//                  add(data), relu
//   ops            2 conv2d, 2 batch_norm, 2 relu, 1 add
//   constants      conv{1,2}_weight [channels, channels, 3, 3];
//                  bn{1,2}_{gamma,beta,mean,variance} [channels]
ir::IRModule ResNetBasicBlock(const ResNetBlockConfig& config = {});

struct BottleneckConfig {
  int64_t batch = 1, in_channels = 256, mid_channels = 64, height = 56, width = 56;
  uint64_t seed = 0;
};

// The ResNet-50 bottleneck block with an identity shortcut.
//   input  "data"  f32[batch, in_channels, height, width] (NCHW)
//   output         f32[batch, in_channels, height, width]
//   structure      conv1x1(in->mid) - batch_norm - relu, conv3x3(mid->mid, pad 1) - batch_norm -
//                  relu, conv1x1(mid->in) - batch_norm, add(data), relu
//   ops            3 conv2d, 3 batch_norm, 3 relu, 1 add
//   constants      conv1_weight [mid, in, 1, 1], conv2_weight [mid, mid, 3, 3],
//                  conv3_weight [in, mid, 1, 1]; bn{1,2,3}_{gamma,beta,mean,variance}
ir::IRModule ResNetBottleneck(const BottleneckConfig& config = {});

struct InvertedResidualConfig {
  int64_t batch = 1, in_channels = 32, out_channels = 32, expansion = 6, stride = 1, height = 56,
          width = 56;
  uint64_t seed = 0;
};

// The MobileNetV2 inverted residual block. With hidden = in_channels * expansion and
// H' = (height - 1) / stride + 1, W' = (width - 1) / stride + 1:
//   input  "data"  f32[batch, in_channels, height, width] (NCHW)
//   output         f32[batch, out_channels, H', W']
//   structure      conv1x1 expand(in->hidden) - batch_norm - clip(0, 6)   [only if expansion > 1]
//                  depthwise conv3x3(stride, pad 1, groups = hidden) - batch_norm - clip(0, 6)
//                  conv1x1 project(hidden->out) - batch_norm
//                  add(data)                                [only if stride == 1 and in == out]
//   ops            3 conv2d, 3 batch_norm, 2 clip, 1 add for the default config
//   constants      expand_weight [hidden, in, 1, 1], depthwise_weight [hidden, 1, 3, 3],
//                  project_weight [out, hidden, 1, 1];
//                  {expand,depthwise,project}_bn_{gamma,beta,mean,variance}
ir::IRModule MobileNetV2InvertedResidual(const InvertedResidualConfig& config = {});

struct BertLayerConfig {
  int64_t batch = 1, seq = 128, hidden = 768, heads = 12, ffn = 3072;
  uint64_t seed = 0;
};

// One BERT encoder layer (post-norm), with d = hidden / heads:
//   input  "hidden_states"  f32[batch, seq, hidden]
//   output                  f32[batch, seq, hidden]
//   structure  for each of q, k, v separately: dense + bias add, reshape [batch, seq, heads, d],
//              transpose [0,2,1,3], reshape [batch*heads, seq, d];
//              scores = batch_matmul(q, k, transpose_b=1) * (1/sqrt(d)), softmax(axis -1),
//              context = batch_matmul(probs, v), reshape [batch, heads, seq, d],
//              transpose [0,2,1,3], reshape [batch, seq, hidden];
//              dense + bias, add(hidden_states), layer_norm (epsilon 1e-12);
//              dense(hidden->ffn) + bias, gelu (exact), dense(ffn->hidden) + bias, add,
//              layer_norm (epsilon 1e-12)
//   ops        6 dense, 8 add, 2 batch_matmul, 1 multiply, 1 softmax, 2 layer_norm, 1 gelu,
//              8 reshape, 4 transpose
//   constants  {query,key,value,output}_weight [hidden, hidden] (dense layout [out, in]),
//              {query,key,value,output}_bias [hidden], ffn1_weight [ffn, hidden],
//              ffn1_bias [ffn], ffn2_weight [hidden, ffn], ffn2_bias [hidden],
//              attention_scale [] (= 1/sqrt(d)), {attention,output}_norm_{gamma,beta} [hidden]
ir::IRModule BertEncoderLayer(const BertLayerConfig& config = {});

}  // namespace tandem::frontend
