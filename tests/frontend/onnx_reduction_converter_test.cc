// Tests of the converters of ONNX reductions (onnx_reduction_converters.cc): ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, ArgMax,
// ArgMin, CumSum and TopK, imported from small models and run on the reference interpreter against
// values computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Tensor;
using testing::CountOp;
using testing::ExpectError;
using testing::ExpectNear;
using testing::ImportAndRun;
using testing::IntAttr;
using testing::IntsAttr;
using testing::OnnxModel;

const Tensor& Positive() {
  static const Tensor x = Tensor::FromFloats({2, 3}, {0.5f, 2.0f, 1.5f, 3.0f, 0.25f, 4.0f});
  return x;
}

// A ReduceX model over axis 1 of Positive() without keepdims, compared per row with `fn` of the
// row's values.
void ExpectRowReduction(const std::string& op,
                        const std::function<double(const std::vector<double>&)>& fn,
                        int opset = 13) {
  SCOPED_TRACE(op);
  OnnxModel model(opset);
  model.Input("x", {2, 3});
  if (opset >= 18) {
    model.Initializer("axes", Tensor::FromInt64s({1}, {-1}));
    model.Node(op, {"x", "axes"}, {"y"}, {IntAttr("keepdims", 0)});
  } else {
    model.Node(op, {"x"}, {"y"}, {IntsAttr("axes", {-1}), IntAttr("keepdims", 0)});
  }
  model.Output("y");
  std::vector<double> v = Positive().ToDoubles();
  std::vector<double> expected = {fn({v[0], v[1], v[2]}), fn({v[3], v[4], v[5]})};
  ExpectNear(ImportAndRun(model, {Positive()}).at(0), {2}, expected, 1e-5);
}

double Sum(const std::vector<double>& v, const std::function<double(double)>& f) {
  double s = 0;
  for (double x : v) s += f(x);
  return s;
}

TEST(OnnxReductionConvert, ReductionsOverAnAxis) {
  for (int opset : {13, 18}) {
    SCOPED_TRACE(opset);
    ExpectRowReduction(
        "ReduceMin",
        [](const std::vector<double>& v) {
          return std::min({v[0], v[1], v[2]});
        },
        opset);
    ExpectRowReduction(
        "ReduceProd", [](const std::vector<double>& v) { return v[0] * v[1] * v[2]; }, opset);
    ExpectRowReduction(
        "ReduceL1",
        [](const std::vector<double>& v) { return Sum(v, [](double x) { return std::abs(x); }); },
        opset);
    ExpectRowReduction(
        "ReduceL2",
        [](const std::vector<double>& v) {
          return std::sqrt(Sum(v, [](double x) { return x * x; }));
        },
        opset);
    ExpectRowReduction(
        "ReduceSumSquare",
        [](const std::vector<double>& v) { return Sum(v, [](double x) { return x * x; }); }, opset);
    ExpectRowReduction(
        "ReduceLogSum",
        [](const std::vector<double>& v) { return std::log(Sum(v, [](double x) { return x; })); },
        opset);
    ExpectRowReduction(
        "ReduceLogSumExp",
        [](const std::vector<double>& v) {
          return std::log(Sum(v, [](double x) { return std::exp(x); }));
        },
        opset);
  }
}

TEST(OnnxReductionConvert, ReduceMinAndProdAreGraphOps) {
  for (const auto& [onnx_op, op] :
       {std::pair{"ReduceMin", "min"}, std::pair{"ReduceProd", "prod"}}) {
    OnnxModel model;
    model.Input("x", {2, 3}).Node(onnx_op, {"x"}, {"y"}).Output("y");
    ir::IRModule module = model.Import();
    EXPECT_EQ(CountOp(module, op), 1) << onnx_op;
    // No axes: every axis, kept with extent 1.
    std::vector<Tensor> out = backends::RunReference(module, {Positive()});
    ExpectNear(out.at(0), {1, 1}, {std::string(op) == "min" ? 0.25 : 0.5 * 2 * 1.5 * 3 * 0.25 * 4});
  }
}

TEST(OnnxReductionConvert, LogSumExpOfLargeValuesStaysFinite) {
  OnnxModel model;
  model.Input("x", {1, 3})
      .Node("ReduceLogSumExp", {"x"}, {"y"}, {IntsAttr("axes", {1})})
      .Output("y");
  Tensor x = Tensor::FromFloats({1, 3}, {1000.0f, 999.0f, -1e30f});
  ExpectNear(ImportAndRun(model, {x}).at(0), {1, 1}, {1000.0 + std::log(1 + std::exp(-1.0))}, 1e-3);
  Tensor infinite = Tensor::FromFloats({1, 3}, {-INFINITY, -INFINITY, -INFINITY});
  EXPECT_EQ(ImportAndRun(model, {infinite}).at(0).GetDouble(0), -INFINITY);
}

TEST(OnnxReductionConvert, NoopWithEmptyAxesKeepsTheElementwisePart) {
  OnnxModel model(18);
  model.Input("x", {2, 3});
  model.Node("ReduceL2", {"x"}, {"y"}, {IntAttr("noop_with_empty_axes", 1)});
  model.Node("ReduceSumSquare", {"x"}, {"z"}, {IntAttr("noop_with_empty_axes", 1)});
  model.Output("y").Output("z");
  Tensor x = Tensor::FromFloats({2, 3}, {-1, 2, -3, 4, -5, 6});
  std::vector<Tensor> out = ImportAndRun(model, {x});
  ExpectNear(out.at(0), {2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectNear(out.at(1), {2, 3}, {1, 4, 9, 16, 25, 36});
}

TEST(OnnxReductionConvert, ArgMaxAndArgMinGiveInt64IndicesOfTheFirstOrLastExtreme) {
  Tensor x = Tensor::FromFloats({2, 4}, {1, 3, 3, 0, -2, -2, 5, -2});
  struct Expected {
    std::string op;
    int64_t select_last;
    std::vector<double> indices;
  };
  for (const Expected& c : std::vector<Expected>{{"ArgMax", 0, {1, 2}},
                                                 {"ArgMax", 1, {2, 2}},
                                                 {"ArgMin", 0, {3, 0}},
                                                 {"ArgMin", 1, {3, 3}}}) {
    SCOPED_TRACE(c.op + " select_last_index=" + std::to_string(c.select_last));
    OnnxModel model;
    model.Input("x", {2, 4});
    model.Node(
        c.op, {"x"}, {"y"},
        {IntAttr("axis", -1), IntAttr("keepdims", 0), IntAttr("select_last_index", c.select_last)});
    model.Output("y");
    Tensor y = ImportAndRun(model, {x}).at(0);
    EXPECT_EQ(y.dtype(), DataType::kInt64);
    ExpectNear(y, {2}, c.indices, 0);
  }
  OnnxModel kept;  // the default axis 0, kept
  kept.Input("x", {2, 4}).Node("ArgMax", {"x"}, {"y"}).Output("y");
  ExpectNear(ImportAndRun(kept, {x}).at(0), {1, 4}, {0, 0, 1, 0}, 0);
}

TEST(OnnxReductionConvert, CumSumVariants) {
  Tensor x = Tensor::FromFloats({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Expected {
    int64_t exclusive, reverse;
    std::vector<double> values;
  };
  for (const Expected& c : std::vector<Expected>{{0, 0, {1, 3, 6, 4, 9, 15}},
                                                 {1, 0, {0, 1, 3, 0, 4, 9}},
                                                 {0, 1, {6, 5, 3, 15, 11, 6}},
                                                 {1, 1, {5, 3, 0, 11, 6, 0}}}) {
    SCOPED_TRACE(std::to_string(c.exclusive) + std::to_string(c.reverse));
    OnnxModel model;
    model.Input("x", {2, 3}).Initializer("axis", Tensor::FromInt64s({}, {-1}));
    model.Node("CumSum", {"x", "axis"}, {"y"},
               {IntAttr("exclusive", c.exclusive), IntAttr("reverse", c.reverse)});
    model.Output("y");
    ExpectNear(ImportAndRun(model, {x}).at(0), {2, 3}, c.values);
  }
  OnnxModel runtime_axis;
  runtime_axis.Input("x", {2, 3}).Input("axis", {}, DataType::kInt64);
  runtime_axis.Node("CumSum", {"x", "axis"}, {"y"}).Output("y");
  ExpectError([&] { runtime_axis.Import(); }, {"CumSum", "axis", "known at import"});
}

// TopK on rows with repeated values: values sorted from the extreme one, equal values in index
// order, int64 indices.
TEST(OnnxReductionConvert, TopKLargestAndSmallestWithTies) {
  // Rows [1, 5, 3, 5] and [2, 2, 0, 7].
  Tensor x = Tensor::FromFloats({2, 4}, {1, 5, 3, 5, 2, 2, 0, 7});
  struct Expected {
    int64_t largest;
    std::vector<double> values, indices;
  };
  for (const Expected& c : std::vector<Expected>{{1, {5, 5, 3, 7, 2, 2}, {1, 3, 2, 3, 0, 1}},
                                                 {0, {1, 3, 5, 0, 2, 2}, {0, 2, 1, 2, 0, 1}}}) {
    SCOPED_TRACE(c.largest);
    OnnxModel model(11);
    model.Input("x", {2, 4}).Initializer("k", Tensor::FromInt64s({1}, {3}));
    model.Node("TopK", {"x", "k"}, {"values", "indices"},
               {IntAttr("axis", -1), IntAttr("largest", c.largest), IntAttr("sorted", 1)});
    model.Output("values").Output("indices");
    ir::IRModule module = model.Import();
    EXPECT_EQ(CountOp(module, "topk"), 1);
    std::vector<Tensor> out = backends::RunReference(module, {x});
    ExpectNear(out.at(0), {2, 3}, c.values);
    EXPECT_EQ(out.at(1).dtype(), DataType::kInt64);
    ExpectNear(out.at(1), {2, 3}, c.indices);
  }
}

TEST(OnnxReductionConvert, TopKAlongTheFirstAxis) {
  // Columns [4, 1, 6] and [0, 9, 9].
  Tensor x = Tensor::FromFloats({3, 2}, {4, 0, 1, 9, 6, 9});
  OnnxModel model;
  model.Input("x", {3, 2}).Initializer("k", Tensor::FromInt64s({1}, {2}));
  model.Node("TopK", {"x", "k"}, {"values", "indices"}, {IntAttr("axis", 0)});
  model.Output("values").Output("indices");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  ExpectNear(out.at(0), {2, 2}, {6, 9, 4, 9});
  ExpectNear(out.at(1), {2, 2}, {2, 1, 0, 2});
}

TEST(OnnxReductionConvert, TopKErrors) {
  OnnxModel runtime_k(11);
  runtime_k.Input("x", {2, 4}).Input("k", {1}, DataType::kInt64);
  runtime_k.Node("TopK", {"x", "k"}, {"values", "indices"}, {}, "top").Output("values");
  ExpectError([&] { runtime_k.Import(); }, {"top", "TopK", "'k'", "known at import"});
  auto with = [](int64_t k, const std::vector<onnx::AttributeProto>& attrs) {
    OnnxModel model(11);
    model.Input("x", {2, 4}).Initializer("k", Tensor::FromInt64s({1}, {k}));
    model.Node("TopK", {"x", "k"}, {"values", "indices"}, attrs, "top").Output("values");
    return model;
  };
  ExpectError([&] { with(5, {}).Import(); }, {"top", "K = 5", "[1, 4]"});
  ExpectError([&] { with(0, {}).Import(); }, {"top", "K = 0"});
  ExpectError([&] { with(2, {IntAttr("largest", 2)}).Import(); },
              {"top", "'largest' must be 0 or 1 but is 2"});
  ExpectError([&] { with(2, {IntAttr("axis", 2)}).Import(); }, {"top", "axis 2"});
}

}  // namespace
}  // namespace tandem::frontend
