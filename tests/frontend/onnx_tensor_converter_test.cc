// Tests of the converters of ONNX tensor ops (reshaping, slicing, combining, reducing, casting)
// and of the import-time evaluation of shape computations: small models built with the protobuf
// API, imported, run on the reference interpreter and compared with values computed
// independently in this file.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Shape;
using ir::Tensor;
using testing::CountCalls;
using testing::CountOp;
using testing::ExpectError;
using testing::ExpectNear;
using testing::FloatAttr;
using testing::FloatsAttr;
using testing::ImportAndRun;
using testing::IntAttr;
using testing::IntsAttr;
using testing::OnnxModel;
using testing::StringAttr;

Tensor Random(const Shape& shape, uint64_t seed) {
  return Tensor::Random(ir::TensorType{shape, DataType::kFloat32, ""}, seed);
}

Tensor Ints(const std::vector<int64_t>& values) {
  return Tensor::FromInt64s({static_cast<int64_t>(values.size())}, values);
}

TEST(OnnxTensorConvert, SplitBySizesAttributeAndEqualParts) {
  Tensor x = Random({2, 6}, 11);
  auto column_block = [&](int64_t begin, int64_t end) {
    std::vector<double> out;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t col = begin; col < end; ++col) out.push_back(x.GetDouble(r * 6 + col));
    return out;
  };
  {  // sizes from the input (opset 13)
    OnnxModel model;
    model.Input("x", {2, 6}).Initializer("sizes", Ints({1, 3, 2}));
    model.Node("Split", {"x", "sizes"}, {"a", "b", "c"}, {IntAttr("axis", -1)});
    model.Output("c").Output("a").Output("b");
    std::vector<Tensor> out = ImportAndRun(model, {x});
    ASSERT_EQ(out.size(), 3u);
    ExpectNear(out[0], {2, 2}, column_block(4, 6));
    ExpectNear(out[1], {2, 1}, column_block(0, 1));
    ExpectNear(out[2], {2, 3}, column_block(1, 4));
  }
  {  // equal parts from the number of outputs
    OnnxModel model;
    model.Input("x", {2, 6}).Node("Split", {"x"}, {"a", "b"}, {IntAttr("axis", 1)});
    model.Output("a").Output("b");
    std::vector<Tensor> out = ImportAndRun(model, {x});
    ExpectNear(out[0], {2, 3}, column_block(0, 3));
    ExpectNear(out[1], {2, 3}, column_block(3, 6));
  }
  {  // num_outputs (opset 18): chunks of ceil(6/4)=2, the last one smaller
    OnnxModel model(18);
    model.Input("x", {2, 6})
        .Node("Split", {"x"}, {"a", "b", "c"}, {IntAttr("axis", 1), IntAttr("num_outputs", 3)});
    model.Output("c").Output("a");
    std::vector<Tensor> out = ImportAndRun(model, {x});
    ExpectNear(out[0], {2, 2}, column_block(4, 6));
    ExpectNear(out[1], {2, 2}, column_block(0, 2));
  }
  {  // num_outputs that does not divide: chunks of ceil(6/4)=2, the last one smaller
    OnnxModel model(18);
    model.Input("x", {2, 6})
        .Node("Split", {"x"}, {"a", "b", "c", "d"},
              {IntAttr("axis", 1), IntAttr("num_outputs", 4)});
    model.Output("c");
    ExpectNear(ImportAndRun(model, {x})[0], {2, 2}, column_block(4, 6));
  }
  {  // sizes that do not add up
    OnnxModel model;
    model.Input("x", {2, 6}).Initializer("sizes", Ints({1, 3}));
    model.Node("Split", {"x", "sizes"}, {"a", "b"}, {IntAttr("axis", 1)}, "bad_split").Output("a");
    ExpectError([&] { model.Import(); }, {"bad_split", "Split", "sum to the extent 6"});
  }
}

TEST(OnnxTensorConvert, SliceWithNegativeStepsAndSentinels) {
  Tensor x = Random({4, 5}, 12);
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  OnnxModel model;
  model.Input("x", {4, 5});
  // Rows from the last down to 1 (exclusive) by -2, columns 1..end.
  model.Initializer("starts", Ints({-1, 1})).Initializer("ends", Ints({0, kMax}));
  model.Initializer("axes", Ints({0, -1})).Initializer("steps", Ints({-2, 1}));
  model.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}).Output("y");
  std::vector<double> expected;
  for (int64_t r : {3, 1})
    for (int64_t col = 1; col < 5; ++col) expected.push_back(x.GetDouble(r * 5 + col));
  ExpectNear(ImportAndRun(model, {x})[0], {2, 4}, expected);

  OnnxModel reverse;  // the whole axis reversed: from INT64_MAX down past INT64_MIN
  reverse.Input("x", {4, 5});
  reverse.Initializer("starts", Ints({kMax}))
      .Initializer("ends", Ints({std::numeric_limits<int64_t>::min()}));
  reverse.Initializer("axes", Ints({1})).Initializer("steps", Ints({-1}));
  reverse.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}).Output("y");
  expected.clear();
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t col = 4; col >= 0; --col) expected.push_back(x.GetDouble(r * 5 + col));
  ExpectNear(ImportAndRun(reverse, {x})[0], {4, 5}, expected);
}

// The pattern PyTorch exports for x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat
// -> Reshape. Every step before the Reshape is known at import time, so only the reshape remains.
TEST(OnnxTensorConvert, ShapeChainIsEvaluatedAtImport) {
  Tensor x = Random({2, 3, 4}, 13);
  OnnxModel model;
  model.Input("x", {2, 3, 4});
  model.Node("Shape", {"x"}, {"shape"});
  model.Node("Constant", {}, {"zero"}, {testing::TensorAttr("value", Tensor::FromInt64s({}, {0}))});
  model.Node("Gather", {"shape", "zero"}, {"batch"}, {IntAttr("axis", 0)});
  model.Node("Constant", {}, {"axes"}, {IntsAttr("value_ints", {0})});
  model.Node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  model.Node("Constant", {}, {"minus_one"}, {IntsAttr("value_ints", {-1})});
  model.Node("Concat", {"batch1", "minus_one"}, {"target"}, {IntAttr("axis", 0)});
  model.Node("Reshape", {"x", "target"}, {"y"}).Output("y");
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountCalls(module), 1);
  EXPECT_EQ(CountOp(module, "reshape"), 1);
  std::vector<Tensor> out = backends::RunReference(module, {x});
  ExpectNear(out[0], {2, 12}, x.ToDoubles());
}

TEST(OnnxTensorConvert, RangeWhereAndConstantOfShapeAreEvaluated) {
  OnnxModel model;
  model.Input("x", {2, 4});
  model.Initializer("start", Tensor::FromInt64s({}, {0}))
      .Initializer("limit", Tensor::FromInt64s({}, {4}));
  model.Initializer("delta", Tensor::FromInt64s({}, {1}))
      .Initializer("two", Tensor::FromInt64s({}, {2}));
  model.Node("Range", {"start", "limit", "delta"}, {"r"});  // [0,1,2,3]
  model.Node("Less", {"r", "two"}, {"low"});                // [1,1,0,0]
  model.Node("Shape", {"x"}, {"s"});
  model.Node("ConstantOfShape", {"s"}, {"ones"},
             {testing::TensorAttr("value", Tensor::FromFloats({1}, {1.0f}))});  // ones [2,4]
  model.Node("Cast", {"low"}, {"lowf"}, {IntAttr("to", onnx::TensorProto::FLOAT)});
  model.Node("Where", {"low", "lowf", "ones"}, {"mask"});  // [1,1,1,1] rows
  model.Node("Equal", {"r", "two"}, {"is_two"});           // [0,0,1,0]
  model.Node("Where", {"is_two", "ones", "mask"}, {"m2"});
  model.Node("Mul", {"x", "m2"}, {"y"}).Output("y");
  Tensor x = Random({2, 4}, 14);
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountCalls(module), 1);  // only the multiply
  ExpectNear(backends::RunReference(module, {x})[0], {2, 4}, x.ToDoubles());
}

TEST(OnnxTensorConvert, GatherFromGraphValueWithKnownIndices) {
  Tensor x = Random({3, 4}, 15);
  OnnxModel model;
  model.Input("x", {3, 4}).Initializer("idx", Ints({2, -4, 2}));
  model.Node("Gather", {"x", "idx"}, {"y"}, {IntAttr("axis", 1)}).Output("y");
  std::vector<double> expected;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t col : {2, 0, 2}) expected.push_back(x.GetDouble(r * 4 + col));
  ExpectNear(ImportAndRun(model, {x})[0], {3, 3}, expected);
}

TEST(OnnxTensorConvert, ReductionsWithAxesAsInputOrAttribute) {
  Tensor x = Tensor::FromFloats({2, 3}, {1, 2, 3, 4, 5, 6});
  OnnxModel model;
  model.Input("x", {2, 3}).Initializer("axes", Ints({-1}));
  model.Node("ReduceSum", {"x", "axes"}, {"s"});
  model.Node("ReduceMean", {"x"}, {"m"}, {IntsAttr("axes", {0}), IntAttr("keepdims", 0)});
  model.Node("ReduceMax", {"x"}, {"a"}, {IntAttr("keepdims", 0)});
  model.Output("s").Output("m").Output("a");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  ExpectNear(out[0], {2, 1}, {6, 15});
  ExpectNear(out[1], {3}, {2.5, 3.5, 4.5});
  ExpectNear(out[2], {}, {6});
}

TEST(OnnxTensorConvert, ShapeOps) {
  Tensor x = Random({2, 1, 3}, 19);
  OnnxModel model;
  model.Input("x", {2, 1, 3}).Initializer("axes1", Ints({1})).Initializer("axes02", Ints({0, -1}));
  model.Node("Squeeze", {"x", "axes1"}, {"sq"});                       // [2,3]
  model.Node("Unsqueeze", {"sq", "axes02"}, {"un"});                   // [1,2,3,1]
  model.Node("Transpose", {"sq"}, {"t"}, {IntsAttr("perm", {1, 0})});  // [3,2]
  model.Node("Flatten", {"x"}, {"f"}, {IntAttr("axis", -1)});          // [2,3]
  model.Node("Concat", {"sq", "f"}, {"c"}, {IntAttr("axis", 0)});      // [4,3]
  model.Output("un").Output("t").Output("c");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  std::vector<double> v = x.ToDoubles();
  ExpectNear(out[0], {1, 2, 3, 1}, v);
  ExpectNear(out[1], {3, 2}, {v[0], v[3], v[1], v[4], v[2], v[5]});
  std::vector<double> twice = v;
  twice.insert(twice.end(), v.begin(), v.end());
  ExpectNear(out[2], {4, 3}, twice);
}

TEST(OnnxTensorConvert, PadConstantReflectAndNegative) {
  Tensor x = Tensor::FromFloats({1, 3}, {1, 2, 3});
  OnnxModel model;
  model.Input("x", {1, 3});
  model.Initializer("p", Ints({0, 2, 0, 1})).Initializer("v", Tensor::FromFloats({}, {9}));
  model.Initializer("crop", Ints({0, -1, 1, 0}));
  model.Node("Pad", {"x", "p", "v"}, {"a"});
  model.Node("Pad", {"x", "p"}, {"b"}, {StringAttr("mode", "reflect")});
  model.Node("Pad", {"x", "crop"}, {"c"});
  model.Output("a").Output("b").Output("c");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  ExpectNear(out[0], {1, 6}, {9, 9, 1, 2, 3, 9});
  ExpectNear(out[1], {1, 6}, {3, 2, 1, 2, 3, 2});
  ExpectNear(out[2], {2, 2}, {2, 3, 0, 0});
}

TEST(OnnxTensorConvert, IdentityDropoutCastAndConstantsAddNoNodes) {
  OnnxModel model;
  model.Input("x", {3});
  model.Node("Identity", {"x"}, {"i"}).Node("Dropout", {"i"}, {"d", "mask"});
  model.Node("Cast", {"d"}, {"c"}, {IntAttr("to", onnx::TensorProto::FLOAT)});  // same dtype
  model.Node("Constant", {}, {"k"}, {FloatsAttr("value_floats", {1, 2, 3})});
  model.Node("Add", {"c", "k"}, {"y"})
      .Node("Cast", {"y"}, {"yi"}, {IntAttr("to", onnx::TensorProto::INT32)});
  model.Output("y").Output("yi").Output("mask");
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountCalls(module), 2);  // add and cast
  std::vector<Tensor> out =
      backends::RunReference(module, {Tensor::FromFloats({3}, {0.5f, 1.5f, -4.25f})});
  ExpectNear(out[0], {3}, {1.5, 3.5, -1.25});
  EXPECT_EQ(out[1].dtype(), DataType::kInt32);
  ExpectNear(out[1], {3}, {1, 3, -1});
  EXPECT_EQ(out[2].dtype(), DataType::kBool);
  ExpectNear(out[2], {3}, {1, 1, 1});
}

TEST(OnnxTensorConvert, GraphInputThatIsAnInitializerIsAConstant) {
  OnnxModel model;
  model.Input("x", {2}).Input("w", {2}).Initializer("w", Tensor::FromFloats({2}, {10, 20}));
  model.Node("Add", {"x", "w"}, {"y"}).Output("y");
  ir::IRModule module = model.Import();
  ASSERT_EQ(module.Get("main").params.size(), 1u);
  EXPECT_EQ(module.Get("main").node(module.Get("main").params[0]).name, "x");
  ExpectNear(backends::RunReference(module, {Tensor::FromFloats({2}, {1, 2})})[0], {2}, {11, 22});
}

TEST(OnnxTensorConvert, ExpandAndSqueezeWithoutAxes) {
  Tensor x = Tensor::FromFloats({3, 1}, {1, 2, 3});
  OnnxModel model;
  model.Input("x", {3, 1}).Initializer("shape", Ints({2, 1, 4}));
  model.Node("Expand", {"x", "shape"}, {"e"}).Node("Squeeze", {"x"}, {"s"});
  model.Output("e").Output("s");
  std::vector<Tensor> out = ImportAndRun(model, {x});
  std::vector<double> expected;
  for (int a = 0; a < 2; ++a)
    for (double v : {1, 2, 3})
      for (int c = 0; c < 4; ++c) expected.push_back(v);
  ExpectNear(out[0], {2, 3, 4}, expected);
  ExpectNear(out[1], {3}, {1, 2, 3});
}

}  // namespace
}  // namespace tandem::frontend

namespace tandem::frontend {
namespace {

// An attribute too large for its field is an error naming it, never truncated: Cast `to` of
// 2^32 + 7 was truncated to 7 (INT64), a silently wrong dtype.
TEST(OnnxTensorConvert, CastToOutOfRangeIsAnErrorNotTruncated) {
  testing::OnnxModel model;
  model.Input("x", {3});
  model.Node("Cast", {"x"}, {"y"}, {testing::IntAttr("to", (int64_t{1} << 32) + 7)}, "big_cast");
  model.Output("y");
  testing::ExpectError([&] { model.Import(); },
                       {"big_cast", "attribute 'to' of Cast is 4294967303", "32-bit"});
}

}  // namespace
}  // namespace tandem::frontend
