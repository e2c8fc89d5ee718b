// The operator workloads of the MetaSchedule paper (Appendix A.2, the same shapes as Ansor's
// single-operator benchmark), each as a Tandem graph and as oneDNN programs over the same data.
//
// Shapes (batch 1, f32) and the FLOP counts the benchmark divides by (one multiply-add = 2):
//
//   C1D   conv1d   x[1,64,256] w[128,64,3] stride 2 pad 1 -> [1,128,128]           6,291,456
//   C2D   conv2d   x[1,3,224,224] w[64,3,7,7] stride 2 pad 3 -> [1,64,112,112]    236,027,904
//   C3D   conv3d   x[1,3,16,224,224] w[64,3,7,7,7] stride 2 pad 3
//                                                  -> [1,64,8,112,112]   13,217,562,624
//   DEP   depthwise conv2d x[1,32,112,112] w[32,1,3,3] stride 1 pad 1 groups 32
//                                                  -> [1,32,112,112]          7,225,344
//   DIL   conv2d   x[1,3,224,224] w[64,3,7,7] stride 2 pad 3 dilation 2
//                                                  -> [1,64,109,109]        223,552,896
//   GMM   matmul   [128,128] x [128,128]                                      4,194,304
//   GMM-512  matmul [512,512] x [512,512]                                   268,435,456
//   GMM-1024 matmul [1024,1024] x [1024,1024]                             2,147,483,648
//   GRP   conv2d   x[1,64,56,56] w[128,16,3,3] stride 2 pad 1 groups 4
//                                                  -> [1,128,28,28]          28,901,376
//   T2D   conv2d_transpose x[1,512,4,4] w[512,256,4,4] stride 2 pad 1
//                                                  -> [1,256,8,8]            67,108,864
//   CBR   conv2d + batch_norm + relu, conv as C2D                           238,436,352
//   TBG   Q,K [1,128,12,64] -> transpose -> [12,128,64] x [12,64,128]
//                                                  -> [1,12,128,128]         25,165,824
//   NRM   sqrt(sum(x*x)) over x[1,256,256] (all axes) -> scalar                  131,073
//   SFM   softmax over the last axis of x[256,256]                               327,680
//
// Beyond the paper (weights of MM-* are graph constants, as in a model; the others inputs):
//
//   MM-MxKxN      matmul [M,K] x constant [K,N]: 512^3 and 1024^3 (GMM with constant
//                 weights) and a transformer layer's 128x768x768, 128x768x3072,
//                 128x3072x768                                          2 * M * K * N
//   DW-CxH-kKsS   depthwise conv2d x[1,C,H,H] w[C,1,K,K] stride S pad K/2 groups C: the twelve
//                 of a mobile inverted-bottleneck network (32x112 to 1152x7, 3x3 and 5x5,
//                 stride 1 and 2)                           2 * C * outH * outW * K * K
//   DWL-CxH-kKsS  the same channels-last: x[1,H,H,C] w HWIO [K,K,1,C] (oneDNN on NHWC memory)
//
// FLOP conventions: convolutions count every kernel tap of every output, padding included
// (2 * N * O * prod(out spatial) * C/groups * prod(kernel)); T2D counts each input pixel times
// each kernel tap (2 * N * Cin * H * W * Cout * kH * kW, the scatter form; the zero-inserted
// gather form would count twice that); CBR adds 3 per output (batch-norm scale and shift,
// relu); NRM counts square + add per element plus the sqrt; SFM counts 5 per element (max,
// subtract, exp, sum, divide).
//
// Deviations from the brief that handed out this benchmark, to match the standard definitions
// (tvm meta_schedule/testing/te_workload.py, which the paper's numbers come from): C1D there is
// (N=1, L=256, Cin=64, Cout=128, k=3, stride 2, pad 1), not Cin=256/Cout=512; SFM there is a
// 2-D [256,256] softmax (the same data as [1,256,256]). The paper's versions use NHWC layouts;
// both contenders here take and return the NCHW-family layouts of Tandem's ops, which does not
// change the arithmetic. The paper's CBR is conv + bias + scale + shift + relu; conv2d +
// batch_norm + relu is the same per-channel affine epilogue.
#pragma once

#include <string>
#include <vector>

#include "backends/onednn/onednn_program.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::bench {

using backends::FinishOutput;
using backends::OnednnContext;
using backends::OnednnProgram;
using backends::OutputBuffer;
using backends::ReorderInput;
using backends::ReorderNow;
using backends::WrapTensor;

struct Workload {
  std::string name;
  std::string shapes;  // a one-line summary for the table
  double flops = 0;
  ir::IRModule module;             // the Tandem graph ("main"), every tensor an input
  std::vector<ir::Tensor> inputs;  // random inputs, in parameter order
  ir::Tensor onednn_output;        // every oneDNN program writes its result here (plain layout)
  // Alternative oneDNN programs computing the workload (plain vs blocked activations ...); the
  // benchmark keeps the fastest.
  std::vector<OnednnProgram> onednn_programs;
  std::vector<ir::Tensor> keep_alive;  // setup-time tensors the programs refer to
};

// Every workload name, in table order.
std::vector<std::string> WorkloadNames();

// The workload names for a message: every listed one, then the families of any size.
std::string WorkloadNamesText();

// Whether `name` names a workload: one of WorkloadNames(), or any size of the families whose
// names carry their sizes (MM-MxKxN, DWL-CxS-kKsS, PWL-IxOxS, CVL-IxOxS-kKsS, GCL-IxOxS-kKsSgG).
bool IsWorkloadName(const std::string& name);

// Builds workload `name` (IsWorkloadName; Error otherwise) with inputs drawn from `seed`.
Workload MakeWorkload(const std::string& name, OnednnContext& context, uint64_t seed = 1);

}  // namespace tandem::bench
