// Elementwise, reduction and shape ops: type inference, reference semantics against
// hand-computed values and identities, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "backends/reference/interpreter.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "tests/ir/expect_error.h"

namespace tandem::ir {
namespace {

std::vector<Type> TypesOf(const std::vector<Tensor>& inputs) {
  std::vector<Type> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  return types;
}

// Infers the type of a call and runs its reference semantics; returns every result tensor.
std::vector<Tensor> EvaluateAll(const std::string& op, const std::vector<Tensor>& inputs,
                                Attrs attrs = {}) {
  Type type = InferCallType(op, TypesOf(inputs), attrs);
  std::vector<Tensor> results = EvaluateReference(op, inputs, attrs, type);
  if (type.is_tensor()) {
    EXPECT_EQ(results.size(), 1u);
    EXPECT_EQ(results.at(0).type(), type.tensor());
  } else {
    EXPECT_EQ(results.size(), type.fields().size());
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(results[i].type(), type.fields()[i].tensor());
    }
  }
  return results;
}

Tensor Evaluate(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  return EvaluateAll(op, inputs, std::move(attrs)).at(0);
}

TensorType InferTensor(const std::string& op, const std::vector<TensorType>& inputs,
                       Attrs attrs = {}) {
  std::vector<Type> types(inputs.begin(), inputs.end());
  return InferCallType(op, types, attrs).tensor();
}

using testing::ExpectError;

Tensor Floats(Shape shape, std::vector<double> values) {
  return Tensor::FromDoubles(std::move(shape), DataType::kFloat32, values);
}

Tensor Iota(Shape shape, DataType dtype = DataType::kFloat32) {
  Tensor t(shape, dtype);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, static_cast<double>(i));
  return t;
}

void ExpectValues(const Tensor& t, const std::vector<double>& expected, double tolerance = 0) {
  std::vector<double> actual = t.ToDoubles();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

void ExpectSameTensor(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.ToDoubles(), expected.ToDoubles());
}

TensorType F32(Shape shape, std::string layout = "") {
  return TensorType{std::move(shape), DataType::kFloat32, std::move(layout)};
}

// ---------------------------------------------------------------------------- elementwise

TEST(ElementwiseOps, AddBroadcastsLikeNumpy) {
  Tensor a = Iota({2, 1, 3});                  // a[i,0,k] = 3i + k
  Tensor b = Floats({4, 1}, {0, 10, 20, 30});  // b[j,0] = 10j
  Tensor out = Evaluate("add", {a, b});
  ASSERT_EQ(out.shape(), (Shape{2, 4, 3}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t k = 0; k < 3; ++k) {
        EXPECT_EQ(out.GetDouble((i * 4 + j) * 3 + k), 3 * i + k + 10 * j);
      }
    }
  }
  EXPECT_EQ(out.GetDouble(0), 0);
  EXPECT_EQ(out.GetDouble(23), 35);  // i=1, j=3, k=2: 5 + 30
}

TEST(ElementwiseOps, BinaryArithmetic) {
  Tensor a = Floats({4}, {1, -2, 3, 4});
  Tensor b = Floats({4}, {2, 4, -0.5, 0.5});
  ExpectValues(Evaluate("subtract", {a, b}), {-1, -6, 3.5, 3.5});
  ExpectValues(Evaluate("multiply", {a, b}), {2, -8, -1.5, 2});
  ExpectValues(Evaluate("divide", {a, b}), {0.5, -0.5, -6, 8});
  ExpectValues(Evaluate("pow", {a, b}), {1, 16, 1 / std::sqrt(3.0), 2}, 1e-6);
  // Scalar broadcast on either side.
  Tensor two = Floats({}, {2});
  ExpectValues(Evaluate("subtract", {two, a}), {1, 4, -1, -2});
  ExpectValues(Evaluate("pow", {a, two}), {1, 4, 9, 16});
}

TEST(ElementwiseOps, IntegerDivisionTruncatesTowardZero) {
  for (DataType dtype : {DataType::kInt32, DataType::kInt64}) {
    Tensor a = Tensor::FromDoubles({5}, dtype, {7, -7, 7, -7, 1});
    Tensor b = Tensor::FromDoubles({5}, dtype, {2, 2, -2, -2, 3});
    Tensor out = Evaluate("divide", {a, b});
    EXPECT_EQ(out.dtype(), dtype);
    ExpectValues(out, {3, -3, -3, 3, 0});
  }
}

TEST(ElementwiseOps, BinaryErrors) {
  ExpectError(
      [] {
        InferTensor("add", {F32({2, 3}), F32({4})});
      },
      {"add", "[2,3]", "[4]", "cannot be broadcast", "operands: f32[2,3], f32[4]"});
  ExpectError(
      [] {
        InferTensor("multiply", {F32({2}), TensorType{{2}, DataType::kInt32, ""}});
      },
      {"multiply", "f32", "i32"});
  ExpectError([] { InferTensor("add", {F32({2})}); }, {"add", "2", "1"});
}

TEST(ElementwiseOps, LayoutPropagation) {
  EXPECT_EQ(InferTensor("add", {F32({1, 8, 4, 4}, "NCHW"), F32({1})}).layout, "NCHW");
  EXPECT_EQ(InferTensor("add", {F32({1, 8, 4, 4}, "NCHW"), F32({1, 8, 4, 4}, "NCHW")}).layout,
            "NCHW");
  EXPECT_EQ(InferTensor("add", {F32({1, 8, 4, 4}, "NCHW"), F32({1, 8, 4, 4}, "NHWC")}).layout, "");
  // A lower-rank operand broadcasts over the physical shape and does not change the layout (an
  // ONNX bias [C,1,1] becomes [1,1,C] tagged HWC next to an NHWC convolution).
  EXPECT_EQ(InferTensor("add", {F32({1, 4, 4, 8}, "NHWC"), F32({1, 1, 8}, "HWC")}).layout, "NHWC");
  EXPECT_EQ(InferTensor("add", {F32({1, 1, 8}), F32({1, 4, 4, 8}, "NHWC")}).layout, "NHWC");
  EXPECT_EQ(InferTensor("relu", {F32({1, 2, 4, 4, 8}, "NCHW8c")}).layout, "NCHW8c");
  EXPECT_EQ(InferTensor("cast", {F32({2, 3}, "NC")}, {{"dtype", std::string("f64")}}).layout, "NC");
}

TEST(ElementwiseOps, UnaryFunctions) {
  Tensor x = Tensor::FromDoubles({4}, DataType::kFloat64, {-1, 0, 0.5, 4});
  ExpectValues(Evaluate("relu", {x}), {0, 0, 0.5, 4});
  ExpectValues(Evaluate("sigmoid", {x}),
               {1 - 0.7310585786300049, 0.5, 0.6224593312018546, 0.9820137900379085}, 1e-12);
  ExpectValues(Evaluate("tanh", {x}),
               {-0.7615941559557649, 0, 0.46211715726000974, 0.999329299739067}, 1e-12);
  ExpectValues(Evaluate("exp", {x}),
               {1 / std::numbers::e, 1, 1.6487212707001282, 54.598150033144236}, 1e-12);
  ExpectValues(Evaluate("erf", {x}),
               {-0.8427007929497149, 0, 0.5204998778130465, 0.9999999845827421}, 1e-12);
  Tensor root = Evaluate("sqrt", {x});
  EXPECT_TRUE(std::isnan(root.GetDouble(0)));
  EXPECT_EQ(root.GetDouble(3), 2);
}

TEST(ElementwiseOps, GeluMatchesKnownValues) {
  Tensor x = Tensor::FromDoubles({4}, DataType::kFloat64, {1, -1, 2, -0.5});
  ExpectValues(Evaluate("gelu", {x}),
               {0.8413447460685429, -0.15865525393145707, 1.9544997361036416, -0.15426876936299344},
               1e-12);
  ExpectValues(Evaluate("gelu", {x}, {{"approximate", std::string("tanh")}}),
               {0.8411919906082768, -0.15880800939172324, 1.954597694087775, -0.15428599017485606},
               1e-12);
  ExpectError(
      [&] {
        Evaluate("gelu", {x}, {{"approximate", std::string("fast")}});
      },
      {"gelu", "approximate", "fast"});
}

TEST(ElementwiseOps, Clip) {
  Tensor x = Floats({5}, {-3, -1, 0.5, 2, 5});
  ExpectValues(Evaluate("clip", {x}, {{"min", -1.0}, {"max", 2.0}}), {-1, -1, 0.5, 2, 2});
  ExpectValues(Evaluate("clip", {x}, {{"min", int64_t{0}}}), {0, 0, 0.5, 2, 5});
  ExpectValues(Evaluate("clip", {x}), {-3, -1, 0.5, 2, 5});
  ExpectError([&] { Evaluate("clip", {x}, {{"min", 3.0}, {"max", 1.0}}); }, {"clip", "min", "3"});
}

TEST(ElementwiseOps, Cast) {
  Tensor x = Floats({5}, {1.7, -1.7, 2.5, -0.2, 0});
  Tensor to_int = Evaluate("cast", {x}, {{"dtype", std::string("i32")}});
  EXPECT_EQ(to_int.dtype(), DataType::kInt32);
  EXPECT_EQ(to_int.data<int32_t>()[0], 1);
  EXPECT_EQ(to_int.data<int32_t>()[1], -1);
  EXPECT_EQ(to_int.data<int32_t>()[2], 2);
  EXPECT_EQ(to_int.data<int32_t>()[3], 0);
  Tensor to_bool = Evaluate("cast", {x}, {{"dtype", std::string("bool")}});
  EXPECT_EQ(to_bool.dtype(), DataType::kBool);
  ExpectValues(to_bool, {1, 1, 1, 1, 0});
  Tensor back = Evaluate("cast", {to_int}, {{"dtype", std::string("float64")}});
  ExpectValues(back, {1, -1, 2, 0, 0});
  // Same dtype copies exactly, also beyond 2^53.
  Tensor big = Tensor::FromInt64s({1}, {(int64_t{1} << 60) + 1});
  EXPECT_EQ(Evaluate("cast", {big}, {{"dtype", std::string("i64")}}).data<int64_t>()[0],
            (int64_t{1} << 60) + 1);
  ExpectError(
      [&] {
        Evaluate("cast", {x}, {{"dtype", std::string("float128")}});
      },
      {"cast", "dtype", "float128"});
  ExpectError([&] { Evaluate("cast", {x}); }, {"cast", "requires attribute 'dtype'"});
}

// ----------------------------------------------------------------------------- reductions

TEST(ReductionOps, SumMeanMaxOverAxes) {
  Tensor x = Iota({2, 3, 4});  // x[i,j,k] = 12i + 4j + k
  Tensor sum = Evaluate("sum", {x}, {{"axes", std::vector<int64_t>{1}}});
  ASSERT_EQ(sum.shape(), (Shape{2, 4}));
  // sum_j (12i + 4j + k) = 36i + 12 + 3k
  ExpectValues(sum, {12, 15, 18, 21, 48, 51, 54, 57});

  Tensor mean =
      Evaluate("mean", {x}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
  ASSERT_EQ(mean.shape(), (Shape{2, 3, 1}));
  // mean_k (12i + 4j + k) = 12i + 4j + 1.5
  ExpectValues(mean, {1.5, 5.5, 9.5, 13.5, 17.5, 21.5});

  Tensor max = Evaluate("max", {x}, {{"axes", std::vector<int64_t>{0, -1}}});
  ASSERT_EQ(max.shape(), (Shape{3}));
  ExpectValues(max, {15, 19, 23});

  Tensor all = Evaluate("sum", {x});
  EXPECT_EQ(all.shape(), Shape{});
  ExpectValues(all, {276});  // 0 + 1 + ... + 23
  Tensor all_kept = Evaluate("mean", {x}, {{"keepdims", int64_t{1}}});
  EXPECT_EQ(all_kept.shape(), (Shape{1, 1, 1}));
  ExpectValues(all_kept, {11.5});
}

TEST(ReductionOps, MaxOfNegativesAndIntegerMean) {
  Tensor x = Floats({2, 2}, {-5, -2, -7, -9});
  ExpectValues(Evaluate("max", {x}, {{"axes", std::vector<int64_t>{1}}}), {-2, -7});
  Tensor ints = Tensor::FromDoubles({3}, DataType::kInt32, {1, 2, 4});
  Tensor mean = Evaluate("mean", {ints});
  EXPECT_EQ(mean.dtype(), DataType::kInt32);
  ExpectValues(mean, {2});  // 7/3 truncated
}

TEST(ReductionOps, Errors) {
  ExpectError(
      [] {
        InferTensor("sum", {F32({2, 3})}, {{"axes", std::vector<int64_t>{1, -1}}});
      },
      {"sum", "twice"});
  ExpectError(
      [] {
        InferTensor("mean", {F32({2, 3})}, {{"axes", std::vector<int64_t>{2}}});
      },
      {"mean", "axis 2 is out of range for rank 2"});
  ExpectError(
      [] {
        InferTensor("max", {F32({2, 0})}, {{"axes", std::vector<int64_t>{1}}});
      },
      {"max", "extent 0"});
}

// ---------------------------------------------------------------------------- shape ops

TEST(ShapeOps, ReshapeWithZeroAndMinusOne) {
  Tensor x = Iota({2, 3, 4});
  Tensor a = Evaluate("reshape", {x}, {{"newshape", std::vector<int64_t>{0, -1}}});
  EXPECT_EQ(a.shape(), (Shape{2, 12}));
  EXPECT_EQ(a.ToDoubles(), x.ToDoubles());
  EXPECT_EQ(
      InferTensor("reshape", {F32({2, 3, 4})}, {{"newshape", std::vector<int64_t>{-1, 4}}}).shape,
      (Shape{6, 4}));
  EXPECT_EQ(
      InferTensor("reshape", {F32({2, 3, 4})}, {{"newshape", std::vector<int64_t>{4, 0, 2}}}).shape,
      (Shape{4, 3, 2}));
  ExpectError(
      [] {
        InferTensor("reshape", {F32({2, 3, 4})}, {{"newshape", std::vector<int64_t>{5, 5}}});
      },
      {"reshape", "[2,3,4]", "24", "[5,5]", "25"});
  ExpectError(
      [] {
        InferTensor("reshape", {F32({2, 3, 4})}, {{"newshape", std::vector<int64_t>{-1, -1}}});
      },
      {"more than one -1"});
  ExpectError(
      [] {
        InferTensor("reshape", {F32({2, 3, 4})}, {{"newshape", std::vector<int64_t>{5, -1}}});
      },
      {"[2,3,4]", "[5,-1]"});
}

TEST(ShapeOps, Transpose) {
  Tensor x = Iota({2, 3});
  Tensor t = Evaluate("transpose", {x});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  ExpectValues(t, {0, 3, 1, 4, 2, 5});
  Tensor y = Iota({2, 3, 4});
  Tensor u = Evaluate("transpose", {y}, {{"axes", std::vector<int64_t>{1, 2, 0}}});
  EXPECT_EQ(u.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(u.GetDouble((1 * 4 + 2) * 2 + 1), 12 * 1 + 4 * 1 + 2);  // u[1,2,1] = y[1,1,2]
}

TEST(ShapeOps, TransposeTwiceWithInversePermutationIsIdentity) {
  Tensor x = Tensor::Random(F32({2, 3, 4, 5}), 7);
  std::vector<int64_t> permutation = {2, 0, 3, 1};
  std::vector<int64_t> inverse(4);
  for (int64_t i = 0; i < 4; ++i) inverse[static_cast<size_t>(permutation[i])] = i;
  Tensor once = Evaluate("transpose", {x}, {{"axes", permutation}});
  EXPECT_EQ(once.shape(), (Shape{4, 2, 5, 3}));
  ExpectSameTensor(Evaluate("transpose", {once}, {{"axes", inverse}}), x);
}

TEST(ShapeOps, TransposeRejectsNonPermutations) {
  for (std::vector<int64_t> axes :
       {std::vector<int64_t>{0, 0, 1}, std::vector<int64_t>{0, 1}, std::vector<int64_t>{0, 1, 3}}) {
    ExpectError(
        [&] {
          InferTensor("transpose", {F32({2, 3, 4})}, {{"axes", axes}});
        },
        {"transpose", "not a permutation"});
  }
}

TEST(ShapeOps, Flatten) {
  EXPECT_EQ(InferTensor("flatten", {F32({2, 3, 4})}).shape, (Shape{2, 12}));
  EXPECT_EQ(InferTensor("flatten", {F32({2, 3, 4})}, {{"axis", int64_t{0}}}).shape, (Shape{1, 24}));
  EXPECT_EQ(InferTensor("flatten", {F32({2, 3, 4})}, {{"axis", int64_t{-1}}}).shape, (Shape{6, 4}));
  EXPECT_EQ(InferTensor("flatten", {F32({2, 3, 4})}, {{"axis", int64_t{3}}}).shape, (Shape{24, 1}));
  ExpectError(
      [] {
        InferTensor("flatten", {F32({2, 3})}, {{"axis", int64_t{3}}});
      },
      {"flatten", "axis 3"});
  Tensor x = Iota({2, 3, 4});
  EXPECT_EQ(Evaluate("flatten", {x}).ToDoubles(), x.ToDoubles());
}

TEST(ShapeOps, Concat) {
  Tensor a = Floats({2, 1}, {1, 2});
  Tensor b = Floats({2, 2}, {3, 4, 5, 6});
  Tensor c = Evaluate("concat", {a, b}, {{"axis", int64_t{1}}});
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  ExpectValues(c, {1, 3, 4, 2, 5, 6});
  Tensor d = Evaluate("concat", {b, b, a.Reshaped({1, 2})}, {{"axis", int64_t{-2}}});
  EXPECT_EQ(d.shape(), (Shape{5, 2}));
  ExpectValues(d, {3, 4, 5, 6, 3, 4, 5, 6, 1, 2});
  ExpectError(
      [] {
        InferTensor("concat", {F32({2, 1}), F32({3, 2})}, {{"axis", int64_t{1}}});
      },
      {"concat", "[3,2]", "[2,1]", "axis 0"});
  ExpectError([] { InferTensor("concat", {F32({2, 1}), F32({2})}); }, {"concat", "rank"});
}

TEST(ShapeOps, Split) {
  Tensor x = Iota({5, 2});
  std::vector<Tensor> parts = EvaluateAll("split", {x}, {{"sections", std::vector<int64_t>{2, 3}}});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].shape(), (Shape{2, 2}));
  ExpectValues(parts[0], {0, 1, 2, 3});
  ExpectValues(parts[1], {4, 5, 6, 7, 8, 9});
  std::vector<Tensor> columns =
      EvaluateAll("split", {x}, {{"axis", int64_t{1}}, {"sections", std::vector<int64_t>{1, 1}}});
  ExpectValues(columns[0], {0, 2, 4, 6, 8});
  ExpectValues(columns[1], {1, 3, 5, 7, 9});
  ExpectError(
      [] {
        Attrs attrs{{"sections", std::vector<int64_t>{2, 2}}};
        InferCallType("split", {F32({5, 2})}, attrs);
      },
      {"split", "sum to 4", "extent 5"});
}

TEST(ShapeOps, SplitThenConcatIsIdentity) {
  Tensor x = Tensor::Random(F32({3, 10, 4}), 11);
  std::vector<Tensor> parts = EvaluateAll(
      "split", {x}, {{"axis", int64_t{1}}, {"sections", std::vector<int64_t>{3, 0, 5, 2}}});
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[1].shape(), (Shape{3, 0, 4}));
  ExpectSameTensor(Evaluate("concat", parts, {{"axis", int64_t{1}}}), x);
}

TEST(ShapeOps, SplitThroughTheInterpreter) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", F32({4, 3}));
  ValueId parts = b.Call("split", {x}, {{"sections", std::vector<int64_t>{1, 3}}});
  ValueId second = b.TupleGetItem(parts, 1);
  GraphFunction f = b.Finish(b.Call("sum", {second}));
  std::vector<Tensor> out = backends::RunReference(f, {Iota({4, 3})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11});
}

TEST(ShapeOps, StridedSliceNegativeIndicesAndStrides) {
  Tensor x = Iota({10});
  auto slice = [&](int64_t begin, int64_t end, int64_t stride) {
    return Evaluate("strided_slice", {x},
                    {{"begin", std::vector<int64_t>{begin}},
                     {"end", std::vector<int64_t>{end}},
                     {"strides", std::vector<int64_t>{stride}}});
  };
  ExpectValues(slice(-3, 10, 1), {7, 8, 9});
  ExpectValues(slice(1, -6, 2), {1, 3});
  ExpectValues(slice(8, 1, -3), {8, 5, 2});
  ExpectValues(slice(-1, -11, -1), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  ExpectValues(slice(-1, std::numeric_limits<int64_t>::min(), -4), {9, 5, 1});
  ExpectValues(slice(-100, std::numeric_limits<int64_t>::max(), 4), {0, 4, 8});
  EXPECT_EQ(slice(5, 2, 1).shape(), (Shape{0}));

  Tensor y = Iota({3, 4});
  Tensor columns = Evaluate("strided_slice", {y},
                            {{"begin", std::vector<int64_t>{-1}},
                             {"end", std::vector<int64_t>{0}},
                             {"strides", std::vector<int64_t>{-2}},
                             {"axes", std::vector<int64_t>{-1}}});
  EXPECT_EQ(columns.shape(), (Shape{3, 2}));
  ExpectValues(columns, {3, 1, 7, 5, 11, 9});
  ExpectError([&] { slice(0, 5, 0); }, {"strided_slice", "strides"});
}

TEST(ShapeOps, SqueezeAndExpandDims) {
  EXPECT_EQ(InferTensor("squeeze", {F32({1, 3, 1, 2})}).shape, (Shape{3, 2}));
  EXPECT_EQ(InferTensor("squeeze", {F32({1, 3, 1, 2})}, {{"axes", std::vector<int64_t>{-2}}}).shape,
            (Shape{1, 3, 2}));
  ExpectError(
      [] {
        InferTensor("squeeze", {F32({1, 3, 1, 2})}, {{"axes", std::vector<int64_t>{1}}});
      },
      {"squeeze", "axis 1", "extent is 3"});
  EXPECT_EQ(InferTensor("expand_dims", {F32({3, 2})}, {{"axes", std::vector<int64_t>{0, 3}}}).shape,
            (Shape{1, 3, 2, 1}));
  EXPECT_EQ(InferTensor("expand_dims", {F32({3, 2})}, {{"axes", std::vector<int64_t>{-1}}}).shape,
            (Shape{3, 2, 1}));
  ExpectError(
      [] {
        InferTensor("expand_dims", {F32({3, 2})}, {{"axes", std::vector<int64_t>{1, -3}}});
      },
      {"expand_dims", "twice"});
  Tensor x = Iota({3, 2});
  Tensor y = Evaluate("expand_dims", {x}, {{"axes", std::vector<int64_t>{1}}});
  EXPECT_EQ(y.shape(), (Shape{3, 1, 2}));
  ExpectSameTensor(Evaluate("squeeze", {y}), x);
}

TEST(ShapeOps, PadModes) {
  Tensor x = Floats({3}, {1, 2, 3});
  Attrs pads{{"pad_width", std::vector<int64_t>{2, 1}}};
  Attrs constant = pads;
  constant.Set("pad_value", 9.0);
  ExpectValues(Evaluate("pad", {x}, constant), {9, 9, 1, 2, 3, 9});
  ExpectValues(Evaluate("pad", {x}, pads), {0, 0, 1, 2, 3, 0});
  Attrs edge = pads;
  edge.Set("mode", std::string("edge"));
  ExpectValues(Evaluate("pad", {x}, edge), {1, 1, 1, 2, 3, 3});
  Attrs reflect = pads;
  reflect.Set("mode", std::string("reflect"));
  ExpectValues(Evaluate("pad", {x}, reflect), {3, 2, 1, 2, 3, 2});
}

TEST(ShapeOps, ReflectPad2D) {
  Tensor x = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  // Begins: 1 row, 1 column; ends: 0 rows, 1 column.
  Tensor y =
      Evaluate("pad", {x},
               {{"pad_width", std::vector<int64_t>{1, 1, 0, 1}}, {"mode", std::string("reflect")}});
  EXPECT_EQ(y.shape(), (Shape{3, 5}));
  ExpectValues(y, {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5});
}

TEST(ShapeOps, PadErrors) {
  ExpectError(
      [] {
        InferTensor(
            "pad", {F32({2, 3})},
            {{"pad_width", std::vector<int64_t>{0, 3, 0, 0}}, {"mode", std::string("reflect")}});
      },
      {"pad", "reflect", "extent 3"});
  ExpectError(
      [] {
        InferTensor("pad", {F32({2, 3})}, {{"pad_width", std::vector<int64_t>{1, 1}}});
      },
      {"pad", "2*rank = 4"});
  ExpectError(
      [] {
        InferTensor("pad", {F32({2})},
                    {{"pad_width", std::vector<int64_t>{1, 1}}, {"mode", std::string("wrap")}});
      },
      {"pad", "wrap"});
}

TEST(ShapeOps, ResultsHaveNoLayout) {
  EXPECT_EQ(InferTensor("transpose", {F32({1, 2, 3, 4}, "NCHW")}).layout, "");
  EXPECT_EQ(InferTensor("flatten", {F32({1, 2, 3, 4}, "NCHW")}).layout, "");
}

TEST(ElementwiseOps, OpDefsDeclareDocumentedDefaults) {
  const OpRegistry& registry = OpRegistry::Global();
  EXPECT_EQ(registry.Get("add").pattern, PatternKind::kBroadcast);
  EXPECT_EQ(registry.Get("relu").pattern, PatternKind::kElementwise);
  EXPECT_EQ(registry.Get("sum").pattern, PatternKind::kReduction);
  EXPECT_EQ(registry.Get("pad").pattern, PatternKind::kInjective);
  EXPECT_EQ(registry.Get("concat").max_inputs, -1);
  Attrs attrs{{"pad_width", std::vector<int64_t>{1, 1}}};
  InferCallType("pad", {F32({2})}, attrs);
  EXPECT_EQ(attrs.GetString("mode"), "constant");
  EXPECT_EQ(attrs.GetFloat("pad_value"), 0.0);
  attrs = {};
  InferCallType("clip", {F32({2})}, attrs);
  EXPECT_EQ(attrs.GetFloat("min"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(attrs.GetFloat("max"), std::numeric_limits<double>::infinity());
  attrs = {};
  InferCallType("gelu", {F32({2})}, attrs);
  EXPECT_EQ(attrs.GetString("approximate"), "none");
  attrs = {};
  InferCallType("flatten", {F32({2, 2})}, attrs);
  EXPECT_EQ(attrs.GetInt("axis"), 1);
  attrs = {};
  InferCallType("sum", {F32({2, 2})}, attrs);
  EXPECT_EQ(attrs.GetInt("keepdims"), 0);
  EXPECT_TRUE(attrs.GetInts("axes").empty());
  for (const char* name : {"add",         "subtract",      "multiply",
                           "divide",      "pow",           "relu",
                           "gelu",        "sigmoid",       "tanh",
                           "exp",         "sqrt",          "erf",
                           "clip",        "cast",          "sum",
                           "mean",        "max",           "reshape",
                           "transpose",   "flatten",       "concat",
                           "split",       "strided_slice", "squeeze",
                           "expand_dims", "pad",           "layout_transform"}) {
    EXPECT_FALSE(registry.Get(name).doc.empty()) << name;
  }
}

}  // namespace
}  // namespace tandem::ir
