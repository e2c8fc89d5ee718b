// The table of op test cases shared by the compute-definition tests (tests/kernels) and the
// compiled-op tests (tests/backends): for every registered op, calls with their operand types,
// attributes and input ranges, covering the attribute combinations each compute must handle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tandem::testing {

using Ints = std::vector<int64_t>;

// One op call to test.
struct Case {
  std::string op;
  std::vector<ir::TensorType> inputs;
  ir::Attrs attrs;
  // Range of the uniform random inputs, per operand (the last entry repeats).
  std::vector<std::pair<double, double>> ranges = {{-1.0, 1.0}};
  std::string label;  // what the case exercises
};

inline void PrintTo(const Case& c, std::ostream* os) {
  *os << c.op << "/" << c.label;
}

inline ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}
inline ir::TensorType I32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kInt32, ""};
}
inline ir::TensorType I64(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kInt64, ""};
}
inline ir::TensorType Bool(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kBool, ""};
}

inline std::vector<Case> ConvolutionCases() {
  return {
      {"conv1d", {F32({2, 3, 9}), F32({4, 3, 3})}, {}, {{-1, 1}}, "plain"},
      {"conv1d",
       {F32({1, 4, 9}), F32({4, 4, 3})},
       {{"strides", Ints{2}}, {"padding", Ints{1, 2}}, {"dilation", Ints{2}}},
       {{-1, 1}},
       "stride_pad_dilation"},
      {"conv1d",
       {F32({1, 4, 8}), F32({6, 2, 3})},
       {{"groups", int64_t{2}}, {"padding", Ints{1, 1}}},
       {{-1, 1}},
       "groups"},
      {"conv1d",
       {F32({1, 4, 7}), F32({4, 1, 3})},
       {{"groups", int64_t{4}}, {"padding", Ints{1, 1}}},
       {{-1, 1}},
       "depthwise"},
      {"conv2d", {F32({1, 3, 7, 7}), F32({4, 3, 3, 3})}, {}, {{-1, 1}}, "plain"},
      {"conv2d",
       {F32({2, 3, 8, 8}), F32({4, 3, 3, 3})},
       {{"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}},
       {{-1, 1}},
       "stride2_pad1"},
      {"conv2d",
       {F32({1, 2, 9, 7}), F32({3, 2, 3, 2})},
       {{"padding", Ints{0, 1, 2, 1}}, {"dilation", Ints{2, 1}}},
       {{-1, 1}},
       "asymmetric_pad_dilation"},
      {"conv2d",
       {F32({1, 4, 6, 6}), F32({6, 2, 3, 3})},
       {{"groups", int64_t{2}}, {"padding", Ints{1, 1, 1, 1}}},
       {{-1, 1}},
       "groups"},
      {"conv2d",
       {F32({1, 4, 7, 7}), F32({4, 1, 3, 3})},
       {{"groups", int64_t{4}}, {"padding", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}},
       {{-1, 1}},
       "depthwise"},
      {"conv2d",
       {F32({1, 3, 6, 6}), F32({6, 1, 3, 3})},
       {{"groups", int64_t{3}}},
       {{-1, 1}},
       "depthwise_multiplier2"},
      {"conv2d",
       {F32({1, 7, 6, 3}), F32({3, 3, 3, 4})},
       {{"data_layout", std::string("NHWC")},
        {"kernel_layout", std::string("HWIO")},
        {"padding", Ints{1, 1, 1, 1}}},
       {{-1, 1}},
       "nhwc_hwio"},
      {"conv2d",
       {F32({1, 6, 6, 4}), F32({4, 2, 3, 3})},
       {{"data_layout", std::string("NHWC")}, {"groups", int64_t{2}}, {"strides", Ints{1, 2}}},
       {{-1, 1}},
       "nhwc_oihw_groups"},
      {"conv2d",
       {I32({1, 2, 6, 6}), I32({2, 2, 3, 3})},
       {{"padding", Ints{1, 1, 1, 1}}},
       {{-4, 4}},
       "int32"},
      {"conv3d", {F32({1, 2, 5, 5, 5}), F32({3, 2, 3, 3, 3})}, {}, {{-1, 1}}, "plain"},
      {"conv3d",
       {F32({1, 2, 6, 5, 5}), F32({2, 2, 3, 3, 3})},
       {{"padding", Ints{1, 1, 1, 1, 1, 1}}, {"strides", Ints{2, 2, 2}}},
       {{-1, 1}},
       "stride2_pad1"},
      {"conv3d",
       {F32({1, 4, 5, 5, 5}), F32({4, 2, 2, 2, 2})},
       {{"groups", int64_t{2}}, {"dilation", Ints{1, 2, 1}}},
       {{-1, 1}},
       "groups_dilation"},
      {"conv2d_transpose", {F32({1, 3, 5, 5}), F32({3, 4, 3, 3})}, {}, {{-1, 1}}, "plain"},
      {"conv2d_transpose",
       {F32({1, 2, 5, 5}), F32({2, 3, 3, 3})},
       {{"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}},
       {{-1, 1}},
       "stride2_output_padding"},
      {"conv2d_transpose",
       {F32({1, 4, 5, 5}), F32({4, 2, 3, 3})},
       {{"groups", int64_t{2}}, {"dilation", Ints{2, 2}}, {"padding", Ints{1, 0, 2, 1}}},
       {{-1, 1}},
       "groups_dilation_asymmetric"},
      {"conv2d_transpose",
       {F32({1, 3, 5, 5}), F32({3, 1, 3, 3})},
       {{"groups", int64_t{3}}, {"strides", Ints{2, 1}}},
       {{-1, 1}},
       "depthwise"},
      {"conv2d_transpose",
       {F32({1, 2, 5, 5}), F32({2, 2, 3, 3})},
       {{"strides", Ints{2, 2}}, {"padding", Ints{3, 3, 3, 3}}},
       {{-1, 1}},
       "cropping_padding"},
      {"conv2d_transpose",
       {F32({1, 2, 6, 6}), F32({2, 2, 3, 3})},
       {{"padding", Ints{2, 2, 2, 2}}},
       {{-1, 1}},
       "no_pad_block"},
      // Kernel and output extents divisible by the stride: the sub-pixel (phase) form.
      {"conv2d_transpose",
       {F32({1, 3, 4, 4}), F32({3, 5, 4, 4})},
       {{"strides", Ints{2, 2}}, {"padding", Ints{1, 1, 1, 1}}},
       {{-1, 1}},
       "phase_form"},
      {"conv2d_transpose",
       {F32({1, 4, 3, 5}), F32({4, 3, 2, 2})},
       {{"groups", int64_t{2}}, {"strides", Ints{2, 2}}},
       {{-1, 1}},
       "phase_form_grouped"},
      {"conv2d_transpose",
       {F32({1, 3, 4, 4}), F32({3, 1, 4, 4})},
       {{"groups", int64_t{3}},
        {"strides", Ints{2, 2}},
        {"padding", Ints{1, 0, 2, 1}},
        {"output_padding", Ints{1, 1}}},
       {{-1, 1}},
       "phase_form_depthwise_asymmetric"},
      {"conv2d_transpose",
       {F32({1, 2, 4, 4}), F32({2, 3, 3, 4})},
       {{"strides", Ints{3, 2}}},
       {{-1, 1}},
       "phase_form_mixed_strides"},
  };
}

inline std::vector<Case> MatmulCases() {
  return {
      {"dense", {F32({4, 6}), F32({5, 6})}, {}, {{-1, 1}}, "2d"},
      {"dense", {F32({2, 3, 6}), F32({5, 6})}, {}, {{-1, 1}}, "3d"},
      {"dense", {F32({6}), F32({3, 6})}, {}, {{-1, 1}}, "vector"},
      {"matmul", {F32({4, 6}), F32({6, 5})}, {}, {{-1, 1}}, "2d"},
      {"matmul", {F32({2, 4, 6}), F32({6, 5})}, {}, {{-1, 1}}, "batch_vs_matrix"},
      {"matmul", {F32({2, 1, 4, 3}), F32({3, 3, 5})}, {}, {{-1, 1}}, "broadcast_batch"},
      {"matmul", {F32({6}), F32({2, 6, 5})}, {}, {{-1, 1}}, "vector_a"},
      {"matmul", {F32({2, 4, 6}), F32({6})}, {}, {{-1, 1}}, "vector_b"},
      {"matmul", {F32({6}), F32({6})}, {}, {{-1, 1}}, "dot"},
      // b packed [..., N/nb, K, nb] (PackMatmulWeights): panels of 16 and of 8 columns.
      {"packed_matmul", {F32({5, 6}), F32({2, 6, 16})}, {}, {{-1, 1}}, "2d_panels_16"},
      {"packed_matmul", {F32({2, 7, 9}), F32({3, 9, 8})}, {}, {{-1, 1}}, "batch_vs_panels_8"},
      {"packed_matmul", {F32({3, 4, 6}), F32({3, 2, 6, 16})}, {}, {{-1, 1}}, "batched_panels"},
      {"packed_matmul", {F32({1, 4, 6}), F32({3, 1, 6, 4})}, {}, {{-1, 1}}, "broadcast_a"},
      // N = 20 in two panels of 16, the last one partly padding.
      {"packed_matmul",
       {F32({3, 6}), F32({2, 6, 16})},
       {{"columns", int64_t{20}}},
       {{-1, 1}},
       "padded_last_panel"},
      {"batch_matmul", {F32({2, 4, 6}), F32({2, 6, 5})}, {}, {{-1, 1}}, "plain"},
      {"batch_matmul",
       {F32({2, 6, 4}), F32({2, 6, 5})},
       {{"transpose_a", int64_t{1}}},
       {{-1, 1}},
       "transpose_a"},
      {"batch_matmul",
       {F32({2, 4, 6}), F32({2, 5, 6})},
       {{"transpose_b", int64_t{1}}},
       {{-1, 1}},
       "transpose_b"},
      {"batch_matmul",
       {F32({1, 6, 4}), F32({3, 5, 6})},
       {{"transpose_a", int64_t{1}}, {"transpose_b", int64_t{1}}},
       {{-1, 1}},
       "both_broadcast_a"},
      {"batch_matmul", {F32({3, 4, 6}), F32({1, 6, 5})}, {}, {{-1, 1}}, "broadcast_b"},
  };
}

inline std::vector<Case> ElementwiseCases() {
  std::vector<Case> cases;
  for (const char* op : {"add", "subtract", "multiply", "divide"}) {
    cases.push_back({op, {F32({3, 4}), F32({3, 4})}, {}, {{-1, 1}, {0.5, 2}}, "same_shape"});
    cases.push_back({op, {F32({2, 3, 4}), F32({4})}, {}, {{-1, 1}, {0.5, 2}}, "broadcast_vector"});
    cases.push_back({op, {F32({2, 1, 4}), F32({3, 1})}, {}, {{-1, 1}, {0.5, 2}}, "broadcast_both"});
    cases.push_back({op, {I32({3, 4}), I32({1})}, {}, {{-9, 9}, {1, 4}}, "int32"});
  }
  cases.push_back({"pow", {F32({3, 4}), F32({3, 4})}, {}, {{0.5, 2}, {-2, 2}}, "same_shape"});
  cases.push_back({"pow", {F32({2, 3}), F32({1})}, {}, {{0.5, 2}, {-2, 2}}, "broadcast"});
  cases.push_back({"pow", {I32({2, 3}), I32({2, 3})}, {}, {{-3, 4}, {0, 4}}, "int32"});
  for (const char* op : {"relu", "sigmoid", "tanh", "exp", "erf"}) {
    cases.push_back({op, {F32({3, 5})}, {}, {{-2, 2}}, "f32"});
    cases.push_back({op, {F32({2, 2, 3})}, {}, {{-2, 2}}, "rank3"});
  }
  cases.push_back({"relu", {I32({3, 5})}, {}, {{-5, 5}}, "int32"});
  cases.push_back({"sqrt", {F32({3, 5})}, {}, {{0.1, 4}}, "f32"});
  cases.push_back({"sqrt", {F32({2, 2, 3})}, {}, {{0, 2}}, "rank3"});
  cases.push_back({"gelu", {F32({3, 5})}, {}, {{-3, 3}}, "none"});
  cases.push_back(
      {"gelu", {F32({3, 5})}, {{"approximate", std::string("tanh")}}, {{-3, 3}}, "tanh"});
  cases.push_back({"clip", {F32({4, 5})}, {{"min", -0.5}, {"max", 0.25}}, {{-1, 1}}, "both"});
  cases.push_back({"clip", {F32({4, 5})}, {{"min", 0.0}}, {{-1, 1}}, "min_only"});
  cases.push_back({"clip", {F32({4, 5})}, {}, {{-1, 1}}, "unbounded"});
  cases.push_back({"clip", {I32({4, 5})}, {{"min", -2.0}, {"max", 1.5}}, {{-5, 5}}, "int32"});
  for (const char* op : {"maximum", "minimum"}) {
    cases.push_back({op, {F32({3, 4}), F32({3, 4})}, {}, {{-1, 1}}, "same_shape"});
    cases.push_back({op, {F32({2, 1, 4}), F32({3, 1})}, {}, {{-1, 1}}, "broadcast_both"});
    cases.push_back({op, {I32({3, 4}), I32({4})}, {}, {{-9, 9}}, "int32"});
  }
  cases.push_back({"prelu", {F32({2, 3, 4, 4}), F32({3, 1, 1})}, {}, {{-1, 1}}, "channel_slope"});
  cases.push_back({"prelu", {F32({3, 5}), F32({3, 5})}, {}, {{-1, 1}}, "same_shape"});
  cases.push_back({"prelu", {F32({2, 5}), F32({1})}, {}, {{-1, 1}}, "scalar_slope"});
  cases.push_back({"log", {F32({3, 5})}, {}, {{0.05, 4}}, "f32"});
  cases.push_back({"log", {F32({2, 2, 3})}, {}, {{0.5, 100}}, "rank3"});
  for (const char* op : {"abs", "floor", "ceil", "round"}) {
    cases.push_back({op, {F32({3, 5})}, {}, {{-4, 4}}, "f32"});
    cases.push_back({op, {F32({2, 2, 3})}, {}, {{-100, 100}}, "rank3"});
    cases.push_back({op, {I32({3, 5})}, {}, {{-9, 9}}, "int32"});
  }
  for (const char* op : {"leaky_relu", "elu"}) {
    cases.push_back({op, {F32({3, 5})}, {}, {{-3, 3}}, "default_alpha"});
    cases.push_back({op, {F32({2, 2, 3})}, {{"alpha", 0.3}}, {{-3, 3}}, "alpha"});
  }
  cases.push_back({"cast", {F32({3, 4})}, {{"dtype", std::string("i32")}}, {{-5, 5}}, "to_i32"});
  cases.push_back({"cast", {I32({3, 4})}, {{"dtype", std::string("f32")}}, {{-5, 5}}, "to_f32"});
  cases.push_back({"cast", {F32({3, 4})}, {{"dtype", std::string("f64")}}, {{-5, 5}}, "to_f64"});
  cases.push_back({"cast", {F32({3, 4})}, {{"dtype", std::string("bool")}}, {{-2, 2}}, "to_bool"});
  return cases;
}

inline std::vector<Case> NormalizationCases() {
  // gamma, beta, mean: any; variance: positive.
  std::vector<std::pair<double, double>> bn = {{-1, 1}, {-1, 1}, {-1, 1}, {-1, 1}, {0.1, 1}};
  return {
      {"batch_norm", {F32({2, 3, 4, 4}), F32({3}), F32({3}), F32({3}), F32({3})}, {}, bn, "nchw"},
      {"batch_norm",
       {F32({3, 5}), F32({5}), F32({5}), F32({5}), F32({5})},
       {{"axis", int64_t{-1}}, {"epsilon", 1e-3}},
       bn,
       "last_axis"},
      {"layer_norm", {F32({3, 8}), F32({8}), F32({8})}, {}, {{-1, 1}}, "last_axis"},
      {"layer_norm",
       {F32({2, 3, 4}), F32({3, 4}), F32({3, 4})},
       {{"axis", int64_t{1}}},
       {{-1, 1}},
       "two_axes"},
      {"layer_norm",
       {F32({3, 4}), F32({3, 4}), F32({3, 4})},
       {{"axis", int64_t{0}}, {"epsilon", 1e-2}},
       {{-1, 1}},
       "all_axes"},
      {"softmax", {F32({3, 7})}, {}, {{-3, 3}}, "last_axis"},
      {"softmax", {F32({2, 5, 3})}, {{"axis", int64_t{1}}}, {{-3, 3}}, "middle_axis"},
      {"softmax", {F32({4, 3})}, {{"axis", int64_t{-2}}}, {{-3, 3}}, "negative_axis"},
  };
}

inline std::vector<Case> PoolingCases() {
  std::vector<Case> cases;
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    cases.push_back({op,
                     {F32({1, 2, 7, 7})},
                     {{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}},
                     {{-1, 1}},
                     "plain"});
    cases.push_back({op,
                     {F32({1, 2, 6, 7})},
                     {{"pool_size", Ints{3, 2}}, {"padding", Ints{1, 1, 1, 0}}},
                     {{-1, 1}},
                     "padding"});
    cases.push_back(
        {op,
         {F32({1, 2, 8, 8})},
         {{"pool_size", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}},
         {{-1, 1}},
         "ceil_mode"});
    cases.push_back({op,
                     {F32({2, 2, 7, 7})},
                     {{"pool_size", Ints{2, 2}},
                      {"dilation", Ints{2, 2}},
                      {"padding", Ints{1, 1, 1, 1}},
                      {"strides", Ints{2, 1}}},
                     {{-1, 1}},
                     "dilation_padding"});
    cases.push_back({op,
                     {F32({1, 7, 6, 3})},
                     {{"pool_size", Ints{3, 3}},
                      {"layout", std::string("NHWC")},
                      {"padding", Ints{1, 1, 1, 1}}},
                     {{-1, 1}},
                     "nhwc"});
    cases.push_back({op,
                     {I32({1, 2, 6, 6})},
                     {{"pool_size", Ints{3, 3}}, {"padding", Ints{1, 1, 1, 1}}},
                     {{-9, 9}},
                     "int32"});
  }
  for (int64_t include : {0, 1}) {
    std::string suffix = include ? "_include_pad" : "_exclude_pad";
    cases.push_back({"avg_pool2d",
                     {F32({1, 2, 8, 7})},
                     {{"pool_size", Ints{3, 3}},
                      {"strides", Ints{2, 2}},
                      {"padding", Ints{1, 2, 1, 1}},
                      {"ceil_mode", int64_t{1}},
                      {"count_include_pad", include}},
                     {{-1, 1}},
                     "ceil_padding" + suffix});
    cases.push_back(
        {"avg_pool2d",
         {F32({1, 2, 6, 6})},
         {{"pool_size", Ints{3, 3}}, {"padding", Ints{2, 2, 2, 2}}, {"count_include_pad", include}},
         {{-1, 1}},
         "padding" + suffix});
  }
  cases.push_back({"global_avg_pool2d", {F32({2, 3, 5, 6})}, {}, {{-1, 1}}, "nchw"});
  cases.push_back({"global_avg_pool2d",
                   {F32({2, 5, 6, 3})},
                   {{"layout", std::string("NHWC")}},
                   {{-1, 1}},
                   "nhwc"});
  return cases;
}

inline std::vector<Case> ReductionCases() {
  std::vector<Case> cases;
  for (const char* op : {"sum", "mean", "max", "min", "prod"}) {
    cases.push_back({op, {F32({3, 4, 5})}, {}, {{-1, 1}}, "all_axes"});
    cases.push_back({op,
                     {F32({3, 4, 5})},
                     {{"axes", Ints{1}}, {"keepdims", int64_t{1}}},
                     {{-1, 1}},
                     "keepdims"});
    cases.push_back({op, {F32({3, 4, 5})}, {{"axes", Ints{-1, 0}}}, {{-1, 1}}, "negative_axes"});
    cases.push_back({op, {I32({3, 4})}, {{"axes", Ints{1}}}, {{-9, 9}}, "int32"});
  }
  for (const char* op : {"argmax", "argmin"}) {
    cases.push_back({op, {F32({3, 4, 5})}, {{"axis", int64_t{1}}}, {{-1, 1}}, "keepdims"});
    cases.push_back({op,
                     {F32({3, 4, 5})},
                     {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}},
                     {{-1, 1}},
                     "last_axis_dropped"});
    // Few distinct values: equal extremes in most lines.
    cases.push_back({op, {I32({4, 6})}, {{"axis", int64_t{1}}}, {{-2, 2}}, "ties_first"});
    cases.push_back({op,
                     {I32({6, 4})},
                     {{"axis", int64_t{0}}, {"select_last_index", int64_t{1}}},
                     {{-2, 2}},
                     "ties_last"});
  }
  cases.push_back({"cumsum", {F32({3, 7})}, {{"axis", int64_t{1}}}, {{-1, 1}}, "inclusive"});
  cases.push_back({"cumsum",
                   {F32({2, 5, 3})},
                   {{"axis", int64_t{1}}, {"exclusive", int64_t{1}}, {"reverse", int64_t{1}}},
                   {{-1, 1}},
                   "exclusive_reverse"});
  cases.push_back({"cumsum",
                   {I32({6, 2})},
                   {{"axis", int64_t{-2}}, {"exclusive", int64_t{1}}},
                   {{-9, 9}},
                   "int32_exclusive"});
  cases.push_back({"cumsum", {F32({4, 3})}, {{"reverse", int64_t{1}}}, {{-1, 1}}, "reverse"});
  cases.push_back({"topk", {F32({3, 7})}, {{"k", int64_t{3}}}, {{-1, 1}}, "largest_last_axis"});
  cases.push_back({"topk",
                   {F32({2, 5, 3})},
                   {{"k", int64_t{5}}, {"axis", int64_t{1}}, {"largest", int64_t{0}}},
                   {{-1, 1}},
                   "smallest_middle_axis_all"});
  // Few distinct values: ties resolved by the lower index.
  cases.push_back(
      {"topk", {I32({6, 4})}, {{"k", int64_t{4}}, {"axis", int64_t{0}}}, {{-2, 2}}, "int32_ties"});
  return cases;
}

inline std::vector<Case> ShapeCases() {
  return {
      {"reshape", {F32({2, 3, 4})}, {{"newshape", Ints{4, 6}}}, {{-1, 1}}, "regroup"},
      {"reshape", {F32({6, 4})}, {{"newshape", Ints{2, -1, 3}}}, {{-1, 1}}, "infer"},
      {"reshape", {F32({2, 3, 4})}, {{"newshape", Ints{0, 12}}}, {{-1, 1}}, "copy_extent"},
      {"reshape", {F32({1, 3, 1, 4})}, {{"newshape", Ints{3, 4, 1}}}, {{-1, 1}}, "unit_axes"},
      {"flatten", {F32({2, 3, 4, 5})}, {}, {{-1, 1}}, "axis1"},
      {"flatten", {F32({2, 3, 4, 5})}, {{"axis", int64_t{0}}}, {{-1, 1}}, "axis0"},
      {"flatten", {F32({2, 3, 4, 5})}, {{"axis", int64_t{-1}}}, {{-1, 1}}, "negative_axis"},
      {"squeeze", {F32({1, 3, 1, 4})}, {}, {{-1, 1}}, "all_unit"},
      {"squeeze", {F32({1, 3, 1, 4})}, {{"axes", Ints{-2}}}, {{-1, 1}}, "negative_axis"},
      {"expand_dims", {F32({3, 4})}, {{"axes", Ints{0}}}, {{-1, 1}}, "front"},
      {"expand_dims", {F32({3, 4})}, {{"axes", Ints{-1, 1}}}, {{-1, 1}}, "negative_axes"},
      {"transpose", {F32({2, 3, 4})}, {}, {{-1, 1}}, "reverse"},
      {"transpose", {F32({2, 3, 4})}, {{"axes", Ints{1, 0, 2}}}, {{-1, 1}}, "swap"},
      {"transpose", {I32({2, 3, 4})}, {{"axes", Ints{-1, 0, 1}}}, {{-9, 9}}, "negative_int32"},
      {"concat", {F32({2, 3}), F32({3, 3})}, {}, {{-1, 1}}, "axis0"},
      {"concat",
       {F32({2, 2}), F32({2, 1}), F32({2, 3})},
       {{"axis", int64_t{-1}}},
       {{-1, 1}},
       "three_negative_axis"},
      {"concat",
       {F32({2, 2}), F32({2, 0}), F32({2, 3})},
       {{"axis", int64_t{1}}},
       {{-1, 1}},
       "empty_part"},
      {"concat", {F32({2, 3})}, {}, {{-1, 1}}, "single"},
      {"split",
       {F32({2, 4, 3})},
       {{"axis", int64_t{1}}, {"sections", Ints{1, 2, 1}}},
       {{-1, 1}},
       "three_parts"},
      {"split",
       {I32({3, 5})},
       {{"axis", int64_t{-1}}, {"sections", Ints{2, 0, 3}}},
       {{-9, 9}},
       "negative_axis_empty_part"},
      {"strided_slice",
       {F32({7, 4})},
       {{"begin", Ints{1}}, {"end", Ints{6}}, {"strides", Ints{2}}},
       {{-1, 1}},
       "step2"},
      {"strided_slice",
       {F32({5, 6})},
       {{"begin", Ints{-1}}, {"end", Ints{-100}}, {"strides", Ints{-2}}, {"axes", Ints{1}}},
       {{-1, 1}},
       "negative_step"},
      {"strided_slice",
       {F32({5, 6, 3})},
       {{"begin", Ints{1, -2}},
        {"end", Ints{100, 3}},
        {"strides", Ints{1, -1}},
        {"axes", Ints{0, 1}}},
       {{-1, 1}},
       "two_axes_clamped"},
      {"pad",
       {F32({3, 4})},
       {{"pad_width", Ints{1, 0, 2, 3}}, {"pad_value", 0.5}},
       {{-1, 1}},
       "constant"},
      {"pad",
       {F32({3, 4})},
       {{"pad_width", Ints{2, 1, 1, 2}}, {"mode", std::string("edge")}},
       {{-1, 1}},
       "edge"},
      {"pad",
       {F32({4, 5})},
       {{"pad_width", Ints{3, 1, 2, 4}}, {"mode", std::string("reflect")}},
       {{-1, 1}},
       "reflect"},
      {"pad",
       {I32({2, 3})},
       {{"pad_width", Ints{0, 1, 1, 0}}, {"pad_value", 7.0}},
       {{-9, 9}},
       "int32"},
      {"layout_transform",
       {F32({1, 3, 4, 5})},
       {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NHWC")}},
       {{-1, 1}},
       "nchw_to_nhwc"},
      {"layout_transform",
       {F32({1, 8, 3, 3})},
       {{"src_layout", std::string("NCHW")}, {"dst_layout", std::string("NCHW4c")}},
       {{-1, 1}},
       "split_channels"},
      {"layout_transform",
       {F32({1, 2, 3, 3, 4})},
       {{"src_layout", std::string("NCHW4c")}, {"dst_layout", std::string("NCHW")}},
       {{-1, 1}},
       "merge_channels"},
      {"layout_transform",
       {F32({1, 2, 3, 3, 4})},
       {{"src_layout", std::string("NCHW4c")}, {"dst_layout", std::string("NHWC2c")}},
       {{-1, 1}},
       "resplit"},
  };
}

// Winograd transforms: both tiles, partial tiles at the edges (odd extents), asymmetric
// padding and batch 2. y operands of the output transform are [a*a, N*tilesH*tilesW, K].
inline std::vector<Case> WinogradCases() {
  return {
      {"winograd_weight_transform",
       {F32({4, 3, 3, 3})},
       {{"tile", int64_t{2}}},
       {{-1, 1}},
       "tile2"},
      {"winograd_weight_transform",
       {F32({5, 2, 3, 3})},
       {{"tile", int64_t{4}}},
       {{-1, 1}},
       "tile4"},
      {"winograd_input_transform",
       {F32({1, 3, 7, 7})},
       {{"tile", int64_t{2}}, {"padding", Ints{1, 1, 1, 1}}},
       {{-1, 1}},
       "tile2_pad1_partial"},
      {"winograd_input_transform",
       {F32({2, 2, 9, 6})},
       {{"tile", int64_t{4}}, {"padding", Ints{0, 1, 2, 1}}},
       {{-1, 1}},
       "tile4_asymmetric_pad_batch2"},
      {"winograd_input_transform",
       {F32({1, 4, 5, 5})},
       {{"tile", int64_t{4}}},
       {{-1, 1}},
       "tile4_no_pad_one_partial_tile"},
      {"winograd_output_transform",
       {F32({16, 16, 3})},
       {{"tile", int64_t{2}}, {"output_shape", Ints{1, 3, 7, 7}}},
       {{-1, 1}},
       "tile2_partial"},
      {"winograd_output_transform",
       {F32({36, 12, 5})},
       {{"tile", int64_t{4}}, {"output_shape", Ints{2, 5, 9, 6}}},
       {{-1, 1}},
       "tile4_batch2_partial"},
      {"winograd_output_transform",
       {F32({36, 2, 16})},
       {{"tile", int64_t{4}}, {"output_shape", Ints{1, 16, 5, 3}}},
       {{-1, 1}},
       "tile4_odd"},
      {"winograd_input_transform",
       {F32({1, 7, 7, 3})},
       {{"tile", int64_t{2}}, {"padding", Ints{1, 1, 1, 1}}, {"layout", std::string("NHWC")}},
       {{-1, 1}},
       "nhwc_tile2_pad1_partial"},
      {"winograd_input_transform",
       {F32({2, 9, 6, 10})},
       {{"tile", int64_t{4}}, {"padding", Ints{0, 1, 2, 1}}, {"layout", std::string("NHWC")}},
       {{-1, 1}},
       "nhwc_tile4_asymmetric_pad_batch2"},
      {"winograd_output_transform",
       {F32({36, 12, 5})},
       {{"tile", int64_t{4}}, {"output_shape", Ints{2, 5, 9, 6}}, {"layout", std::string("NHWC")}},
       {{-1, 1}},
       "nhwc_tile4_batch2_partial"},
      {"winograd_output_transform",
       {F32({16, 16, 12})},
       {{"tile", int64_t{2}}, {"output_shape", Ints{1, 12, 7, 7}}, {"layout", std::string("NHWC")}},
       {{-1, 1}},
       "nhwc_tile2_partial"},
  };
}

// Integer and bool tensors: gathers on run-time indices (negative ones included), comparisons,
// logic, where, casts between f32/i64/i32/bool and i64 arithmetic.
inline std::vector<Case> IndexAndLogicCases() {
  std::vector<Case> cases = {
      {"gather", {F32({5, 3}), I64({2, 4})}, {}, {{-1, 1}, {-5, 5}}, "embedding"},
      {"gather",
       {F32({2, 6, 3}), I64({4})},
       {{"axis", int64_t{1}}},
       {{-1, 1}, {-6, 6}},
       "middle_axis"},
      {"gather",
       {F32({4, 5}), I64({2, 3})},
       {{"axis", int64_t{-1}}},
       {{-1, 1}, {-5, 5}},
       "last_axis"},
      {"gather", {I64({7, 2}), I32({3})}, {}, {{-100, 100}, {-7, 7}}, "i64_data_i32_indices"},
      {"gather_elements",
       {F32({3, 4}), I64({3, 4})},
       {{"axis", int64_t{1}}},
       {{-1, 1}, {-4, 4}},
       "axis1"},
      {"gather_elements", {F32({3, 4}), I64({2, 4})}, {}, {{-1, 1}, {-3, 3}}, "smaller_indices"},
      // Random rows repeat positions: the last one wins (none) or all combine.
      {"scatter_nd",
       {F32({4, 3}), I64({5, 1}), F32({5, 3})},
       {},
       {{-1, 1}, {-4, 4}, {-1, 1}},
       "rows"},
      {"scatter_nd",
       {F32({3, 4, 2}), I64({2, 3, 2}), F32({2, 3, 2})},
       {{"reduction", std::string("add")}},
       {{-1, 1}, {-3, 3}, {-1, 1}},
       "add_batched_rows"},
      {"scatter_nd",
       {F32({2, 3}), I64({4, 2}), F32({4})},
       {{"reduction", std::string("mul")}},
       {{-1, 1}, {-2, 2}, {-2, 2}},
       "mul_elements"},
      {"scatter_nd",
       {I64({5}), I32({3, 1}), I64({3})},
       {{"reduction", std::string("max")}},
       {{-9, 9}, {-5, 5}, {-9, 9}},
       "max_i64_data_i32_indices"},
      {"scatter_nd",
       {F32({3, 2}), I64({2, 1}), F32({2, 2})},
       {{"reduction", std::string("min")}},
       {{-1, 1}, {-3, 3}, {-1, 1}},
       "min"},
      {"logical_not", {Bool({3, 5})}, {}, {{0, 2}}, "bool"},
      {"logical_not", {Bool({2, 2, 3})}, {}, {{0, 2}}, "rank3"},
      {"where", {Bool({3, 1}), F32({3, 4}), F32({4})}, {}, {{0, 2}, {-1, 1}}, "broadcast"},
      {"where", {Bool({2, 3}), I64({2, 3}), I64({1})}, {}, {{0, 2}, {-9, 9}}, "i64"},
  };
  for (const char* op : {"equal", "less", "greater", "less_equal", "greater_equal"}) {
    cases.push_back({op, {F32({2, 3, 4}), F32({4})}, {}, {{-1, 1}}, "broadcast"});
    cases.push_back({op, {I64({3, 4}), I64({1})}, {}, {{-3, 3}}, "i64"});
    cases.push_back({op, {I32({3, 4}), I32({3, 4})}, {}, {{-2, 2}}, "i32"});
  }
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    cases.push_back({op, {Bool({3, 4}), Bool({4})}, {}, {{0, 2}}, "broadcast"});
    cases.push_back({op, {Bool({2, 5}), Bool({2, 5})}, {}, {{0, 2}}, "same_shape"});
  }
  for (const char* op : {"add", "subtract", "multiply", "divide"}) {
    cases.push_back({op, {I64({3, 4}), I64({4})}, {}, {{-99, 99}, {1, 9}}, "i64"});
  }
  for (auto [from, to] : {std::pair{I64({3, 4}), "f32"}, std::pair{F32({3, 4}), "i64"},
                          std::pair{Bool({3, 4}), "f32"}, std::pair{I64({3, 4}), "bool"},
                          std::pair{I64({3, 4}), "i32"}, std::pair{I32({3, 4}), "i64"},
                          std::pair{Bool({3, 4}), "i64"}}) {
    cases.push_back({"cast",
                     {from},
                     {{"dtype", std::string(to)}},
                     {{-3, 3}},
                     ir::ToString(from.dtype) + "_to_" + to});
  }
  return cases;
}

inline std::vector<Case> AllCases() {
  std::vector<Case> all;
  for (auto cases :
       {ConvolutionCases(), MatmulCases(), ElementwiseCases(), NormalizationCases(), PoolingCases(),
        ReductionCases(), ShapeCases(), WinogradCases(), IndexAndLogicCases()}) {
    all.insert(all.end(), cases.begin(), cases.end());
  }
  return all;
}

// The call as a one-op graph function; its result is returned (a tuple for split).
inline ir::GraphFunction BuildCall(const Case& c) {
  ir::GraphBuilder builder("call");
  std::vector<ir::ValueId> operands;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    operands.push_back(builder.Input("input" + std::to_string(i), c.inputs[i]));
  }
  return builder.Finish(builder.Call(c.op, operands, c.attrs, "result"));
}

inline std::vector<ir::Tensor> CaseInputs(const Case& c, uint64_t seed) {
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    auto [low, high] = c.ranges[std::min(i, c.ranges.size() - 1)];
    inputs.push_back(ir::Tensor::Random(c.inputs[i], seed * 131 + i, low, high));
  }
  return inputs;
}

}  // namespace tandem::testing
