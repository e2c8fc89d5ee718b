// Tests of the converters of Gather, GatherElements, ScatterND, the comparisons, Not/And/Or/Xor and
// Where on values computed by the graph (run-time token ids and masks): imported, run on the
// reference interpreter and compared with values computed independently here; and the errors for
// indices out of range, known at import or given at run time.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Tensor;
using testing::CountOp;
using testing::ExpectError;
using testing::ImportAndRun;
using testing::IntAttr;
using testing::OnnxModel;

Tensor Table(int64_t rows, int64_t columns) {
  Tensor t({rows, columns}, DataType::kFloat32);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(i) * 0.5f;
  return t;
}

TEST(OnnxIndexConvert, GatherOfRuntimeIdsIsAnEmbeddingLookup) {
  OnnxModel model;
  model.Input("ids", {2, 3}, DataType::kInt64).Initializer("table", Table(5, 4));
  model.Node("Gather", {"table", "ids"}, {"y"}).Output("y");
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountOp(module, "gather"), 1);
  Tensor ids = Tensor::FromInt64s({2, 3}, {0, 4, -1, 2, -5, 3});
  Tensor y = backends::RunReference(module, {ids})[0];
  ASSERT_EQ(y.shape(), (ir::Shape{2, 3, 4}));
  std::vector<int64_t> rows = {0, 4, 4, 2, 0, 3};
  for (int64_t p = 0; p < 6; ++p) {
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_EQ(y.data<float>()[p * 4 + c], static_cast<float>(rows[p] * 4 + c) * 0.5f);
    }
  }
}

TEST(OnnxIndexConvert, RuntimeIndexOutOfRangeNamesNodeValueAndPosition) {
  OnnxModel model;
  model.Input("ids", {1, 3}, DataType::kInt64).Initializer("table", Table(5, 4));
  model.Node("Gather", {"table", "ids"}, {"embedded"}).Output("embedded");
  ir::IRModule module = model.Import();
  ExpectError(
      [&] {
        backends::RunReference(module, {Tensor::FromInt64s({1, 3}, {1, 5, 2})});
      },
      {"index 5", "position [0,1]", "[-5, 5)", "embedded"});
  ExpectError(
      [&] {
        backends::RunReference(module, {Tensor::FromInt64s({1, 3}, {-6, 0, 0})});
      },
      {"index -6", "position [0,0]"});
}

TEST(OnnxIndexConvert, KnownIndexOutOfRangeFailsAtImport) {
  OnnxModel model;
  model.Input("x", {3, 4}).Initializer("idx", Tensor::FromInt64s({2}, {1, 4}));
  model.Node("Gather", {"x", "idx"}, {"y"}, {IntAttr("axis", 1)}).Output("y");
  ExpectError([&] { model.Import(); }, {"Gather index 4 is out of range for extent 4"});
}

TEST(OnnxIndexConvert, GatherElementsOnRuntimeIndices) {
  OnnxModel model;
  model.Input("x", {2, 3}).Input("idx", {2, 2}, DataType::kInt32);
  model.Node("GatherElements", {"x", "idx"}, {"y"}, {IntAttr("axis", 1)}).Output("y");
  Tensor x = Tensor::FromFloats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor idx({2, 2}, DataType::kInt32);
  for (int i = 0; i < 4; ++i) idx.data<int32_t>()[i] = std::vector<int32_t>{2, 0, -1, 1}[i];
  Tensor y = ImportAndRun(model, {x, idx})[0];
  testing::ExpectNear(y, {2, 2}, {3, 1, 6, 5});
}

// The attention-mask patterns of exported models, on a run-time int64 mask: (1 - mask) * -1e4
// through Cast, and Where(mask == 0, -1e4, 0); then the comparisons and logic ops.
TEST(OnnxIndexConvert, MaskPatternsOnRuntimeValues) {
  OnnxModel model;
  model.Input("mask", {1, 4}, DataType::kInt64).Input("x", {1, 4});
  model.Initializer("one", Tensor::FromFloats({}, {1.0f}))
      .Initializer("big", Tensor::FromFloats({}, {-10000.0f}))
      .Initializer("zero_f", Tensor::FromFloats({}, {0.0f}))
      .Initializer("zero", Tensor::FromInt64s({}, {0}))
      .Initializer("half", Tensor::FromFloats({}, {0.5f}));
  model.Node("Cast", {"mask"}, {"mf"}, {IntAttr("to", onnx::TensorProto::FLOAT)});
  model.Node("Sub", {"one", "mf"}, {"inv"});
  model.Node("Mul", {"inv", "big"}, {"additive"});
  model.Node("Equal", {"mask", "zero"}, {"padding"});
  model.Node("Where", {"padding", "big", "zero_f"}, {"selected"});
  model.Node("Less", {"x", "half"}, {"lt"});
  model.Node("Greater", {"x", "half"}, {"gt"});
  model.Node("LessOrEqual", {"x", "half"}, {"le"});
  model.Node("GreaterOrEqual", {"x", "half"}, {"ge"});
  model.Node("Not", {"padding"}, {"valid"});
  model.Node("And", {"valid", "lt"}, {"both"});
  model.Node("Or", {"padding", "gt"}, {"either"});
  model.Node("Xor", {"le", "ge"}, {"not_equal"});
  for (const char* out :
       {"additive", "selected", "lt", "gt", "le", "ge", "valid", "both", "either", "not_equal"}) {
    model.Output(out);
  }
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountOp(module, "where"), 1);
  EXPECT_EQ(CountOp(module, "equal"), 1);
  Tensor mask = Tensor::FromInt64s({1, 4}, {1, 1, 0, 0});
  Tensor x = Tensor::FromFloats({1, 4}, {0.25f, 0.5f, 0.75f, 0.5f});
  std::vector<Tensor> out = backends::RunReference(module, {mask, x});
  testing::ExpectNear(out[0], {1, 4}, {0, 0, -10000, -10000});
  testing::ExpectNear(out[1], {1, 4}, {0, 0, -10000, -10000});
  std::vector<std::vector<double>> expected = {{1, 0, 0, 0}, {0, 0, 1, 0}, {1, 1, 0, 1},
                                               {0, 1, 1, 1}, {1, 1, 0, 0}, {1, 0, 0, 0},
                                               {0, 0, 1, 1}, {1, 0, 1, 0}};
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(out[k + 2].dtype(), DataType::kBool) << "output " << k + 2;
    testing::ExpectNear(out[k + 2], {1, 4}, expected[k]);
  }
}

TEST(OnnxIndexConvert, KnownOperandsStillFoldExactlyForInt64) {
  OnnxModel model;
  model.Input("x", {2});
  model.Initializer("a", Tensor::FromInt64s({2}, {(int64_t{1} << 60) + 1, 7}))
      .Initializer("b", Tensor::FromInt64s({2}, {int64_t{1} << 60, 7}));
  model.Node("Equal", {"a", "b"}, {"same"});
  model.Node("Cast", {"same"}, {"f"}, {IntAttr("to", onnx::TensorProto::FLOAT)});
  model.Node("Add", {"x", "f"}, {"y"}).Output("y");
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountOp(module, "equal"), 0);  // evaluated at import
  testing::ExpectNear(backends::RunReference(module, {Tensor::FromFloats({2}, {1, 1})})[0], {2},
                      {1, 2});
}

TEST(OnnxIndexConvert, MismatchedDtypesAreErrors) {
  OnnxModel model;
  model.Input("a", {2}).Input("b", {2}, DataType::kInt64);
  model.Node("Less", {"a", "b"}, {"y"}).Output("y");
  ExpectError([&] { model.Import(); }, {"Less needs operands of one dtype"});
}

// ScatterND on run-time indices: rows of data replaced (a negative index counts from the end).
TEST(OnnxIndexConvert, ScatterNDReplacesRowsAtRuntimeIndices) {
  OnnxModel model(11);
  model.Input("data", {4, 2}).Input("idx", {2, 1}, DataType::kInt64).Input("upd", {2, 2});
  model.Node("ScatterND", {"data", "idx", "upd"}, {"y"}).Output("y");
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountOp(module, "scatter_nd"), 1);
  Tensor data = Tensor::FromFloats({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor upd = Tensor::FromFloats({2, 2}, {10, 11, 12, 13});
  Tensor y = backends::RunReference(module, {data, Tensor::FromInt64s({2, 1}, {-1, 1}), upd})[0];
  testing::ExpectNear(y, {4, 2}, {0, 1, 12, 13, 4, 5, 10, 11});
}

// The reductions of opsets 16 and 18 on single elements (k = rank), one position given twice.
TEST(OnnxIndexConvert, ScatterNDReductionsCombineRepeatedPositions) {
  Tensor data = Tensor::FromFloats({2, 2}, {1, 2, 3, 4});
  Tensor idx = Tensor::FromInt64s({3, 2}, {0, 1, 1, 0, 0, 1});
  Tensor upd = Tensor::FromFloats({3}, {5, -6, 0.5f});
  struct Expected {
    std::string reduction;
    int opset;
    std::vector<double> values;
  };
  for (const Expected& c : std::vector<Expected>{{"none", 16, {1, 0.5, -6, 4}},
                                                 {"add", 16, {1, 2 + 5 + 0.5, 3 - 6, 4}},
                                                 {"mul", 16, {1, 2 * 5 * 0.5, 3 * -6, 4}},
                                                 {"max", 18, {1, 5, 3, 4}},
                                                 {"min", 18, {1, 0.5, -6, 4}}}) {
    SCOPED_TRACE(c.reduction);
    OnnxModel model(c.opset);
    model.Input("data", {2, 2}).Input("upd", {3}).Initializer("idx", idx);
    model.Node("ScatterND", {"data", "idx", "upd"}, {"y"},
               {testing::StringAttr("reduction", c.reduction)});
    model.Output("y");
    testing::ExpectNear(ImportAndRun(model, {data, upd})[0], {2, 2}, c.values);
  }
}

TEST(OnnxIndexConvert, ScatterNDErrors) {
  OnnxModel runtime(16);
  runtime.Input("data", {4, 2}).Input("idx", {2, 1}, DataType::kInt64).Input("upd", {2, 2});
  runtime.Node("ScatterND", {"data", "idx", "upd"}, {"scattered"}).Output("scattered");
  ir::IRModule module = runtime.Import();
  Tensor data({4, 2}, DataType::kFloat32), upd({2, 2}, DataType::kFloat32);
  ExpectError(
      [&] {
        backends::RunReference(module, {data, Tensor::FromInt64s({2, 1}, {1, 4}), upd});
      },
      {"index 4", "position [1,0]", "[-4, 4)", "scattered"});
  ExpectError(
      [&] {
        backends::RunReference(module, {data, Tensor::FromInt64s({2, 1}, {-5, 0}), upd});
      },
      {"index -5", "position [0,0]"});

  OnnxModel unknown(18);
  unknown.Input("data", {4, 2}).Input("idx", {2, 1}, DataType::kInt64).Input("upd", {2, 2});
  unknown.Node("ScatterND", {"data", "idx", "upd"}, {"y"},
               {testing::StringAttr("reduction", "mean")}, "scatter");
  unknown.Output("y");
  ExpectError([&] { unknown.Import(); }, {"scatter", "reduction 'mean' is not supported"});

  OnnxModel known(16);
  known.Input("data", {4, 2})
      .Input("upd", {2, 2})
      .Initializer("idx", Tensor::FromInt64s({2, 1}, {0, -5}));
  known.Node("ScatterND", {"data", "idx", "upd"}, {"y"}).Output("y");
  ExpectError([&] { known.Import(); }, {"ScatterND index -5", "extent 4"});

  OnnxModel shapes(16);
  shapes.Input("data", {4, 2}).Input("idx", {2, 1}, DataType::kInt64).Input("upd", {2, 3});
  shapes.Node("ScatterND", {"data", "idx", "upd"}, {"y"}).Output("y");
  ExpectError([&] { shapes.Import(); }, {"updates [2,3] must have shape [2,2]"});
}

}  // namespace
}  // namespace tandem::frontend
