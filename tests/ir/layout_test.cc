// Layout strings, shape conversion, TransformLayout and the layout_transform op.
#include "ir/layout.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "tests/ir/expect_error.h"

namespace tandem::ir {
namespace {

using testing::ExpectError;

Tensor Evaluate(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs) {
  std::vector<Type> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  Type type = InferCallType(op, types, attrs);
  std::vector<Tensor> results = EvaluateReference(op, inputs, attrs, type);
  EXPECT_EQ(results.size(), 1u);
  EXPECT_EQ(results.at(0).type(), type.tensor());
  return results.at(0);
}

Tensor Relayout(const Tensor& x, const std::string& from, const std::string& to) {
  return Evaluate("layout_transform", {x}, {{"src_layout", from}, {"dst_layout", to}});
}

TEST(Layout, ParsesPrimalAndSplitAxes) {
  Layout plain("NCHW");
  EXPECT_EQ(plain.rank(), 4);
  EXPECT_EQ(plain.primal_axes(), "NCHW");
  EXPECT_EQ(plain.SplitFactor('C'), 1);
  EXPECT_EQ(plain.IndexOf('W'), 3);
  EXPECT_EQ(plain.IndexOf('c'), -1);

  Layout blocked("NCHW8c");
  EXPECT_EQ(blocked.rank(), 5);
  EXPECT_EQ(blocked.name(), "NCHW8c");
  EXPECT_EQ(blocked.primal_axes(), "NCHW");
  EXPECT_EQ(blocked.SplitFactor('C'), 8);
  EXPECT_EQ(blocked.IndexOf('c'), 4);
  EXPECT_EQ(blocked.axes()[4], (Layout::Axis{'c', 8}));
  EXPECT_TRUE(blocked.axes()[1].is_primal());

  Layout kernel("OIHW16i8o");
  EXPECT_EQ(kernel.rank(), 6);
  EXPECT_EQ(kernel.SplitFactor('I'), 16);
  EXPECT_EQ(kernel.SplitFactor('O'), 8);
  EXPECT_EQ(kernel.IndexOf('o'), 5);
  EXPECT_TRUE(kernel.SamePrimalAxes(Layout("OIHW")));
  EXPECT_FALSE(kernel.SamePrimalAxes(Layout("NCHW")));
  EXPECT_EQ(Layout("NC").rank(), 2);
  EXPECT_TRUE(Layout("NCHW") == Layout("NCHW"));
  EXPECT_FALSE(Layout("NCHW") == Layout("NHWC"));
}

TEST(Layout, RejectsMalformedStrings) {
  ExpectError([] { Layout("NCHWC"); }, {"'NCHWC'", "duplicate axis 'C'"});
  ExpectError([] { Layout("NCHW8c4c"); }, {"duplicate sub-axis 'c'"});
  ExpectError([] { Layout("NHW8c"); }, {"'NHW8c'", "sub-axis 'c'", "primal axis 'C'"});
  ExpectError([] { Layout("N8cCHW"); }, {"sub-axis 'c'", "before"});
  ExpectError([] { Layout("NCHW0c"); }, {"factor 0"});
  ExpectError([] { Layout("NCHW8"); }, {"not followed"});
  ExpectError([] { Layout("NCHW8C"); }, {"lower-case"});
  ExpectError([] { Layout("NCHWc"); }, {"no split factor"});
  ExpectError([] { Layout("NC-HW"); }, {"unexpected character '-'", "position 2"});
  ExpectError([] { Layout(""); }, {"invalid layout"});
}

TEST(Layout, ConvertsShapes) {
  EXPECT_EQ(ConvertShape({1, 16, 5, 7}, Layout("NCHW"), Layout("NCHW8c")), (Shape{1, 2, 5, 7, 8}));
  EXPECT_EQ(ConvertShape({1, 2, 5, 7, 8}, Layout("NCHW8c"), Layout("NHWC")), (Shape{1, 5, 7, 16}));
  EXPECT_EQ(ConvertShape({1, 2, 5, 7, 8}, Layout("NCHW8c"), Layout("NCHW4c")),
            (Shape{1, 4, 5, 7, 4}));
  EXPECT_EQ(ConvertShape({32, 64, 3, 3}, Layout("OIHW"), Layout("OIHW16i8o")),
            (Shape{4, 4, 3, 3, 16, 8}));
  ExpectError(
      [] {
        ConvertShape({1, 12, 5, 5}, Layout("NCHW"), Layout("NCHW8c"));
      },
      {"split factor 8", "extent 12", "'C'"});
  ExpectError(
      [] {
        ConvertShape({1, 12, 5}, Layout("NCHW"), Layout("NHWC"));
      },
      {"[1,12,5]", "rank 3", "4 axes"});
  ExpectError(
      [] {
        ConvertShape({1, 2, 5, 5, 4}, Layout("NCHW8c"), Layout("NCHW"));
      },
      {"sub-axis 'c'", "extent 4", "factor 8"});
  ExpectError(
      [] {
        ConvertShape({1, 2, 5, 5}, Layout("NCHW"), Layout("NCDHW"));
      },
      {"same primal axes"});
}

TEST(Layout, BlockedElementMapping) {
  Tensor x = Tensor::Random(TensorType{{2, 16, 3, 2}, DataType::kFloat32, ""}, 3);
  Tensor y = TransformLayout(x, Layout("NCHW"), Layout("NCHW8c"));
  ASSERT_EQ(y.shape(), (Shape{2, 2, 3, 2, 8}));
  EXPECT_EQ(y.type().layout, "NCHW8c");
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t cb = 0; cb < 2; ++cb) {
      for (int64_t h = 0; h < 3; ++h) {
        for (int64_t w = 0; w < 2; ++w) {
          for (int64_t ci = 0; ci < 8; ++ci) {
            int64_t out = (((n * 2 + cb) * 3 + h) * 2 + w) * 8 + ci;
            int64_t in = ((n * 16 + cb * 8 + ci) * 3 + h) * 2 + w;
            ASSERT_EQ(y.GetDouble(out), x.GetDouble(in));
          }
        }
      }
    }
  }
}

TEST(LayoutTransformOp, RoundTripThroughBlockedLayoutIsIdentity) {
  Tensor x = Tensor::Random(TensorType{{2, 16, 5, 3}, DataType::kFloat32, ""}, 5);
  Tensor blocked = Relayout(x, "NCHW", "NCHW8c");
  EXPECT_EQ(blocked.type(), (TensorType{{2, 2, 5, 3, 8}, DataType::kFloat32, "NCHW8c"}));
  Tensor back = Relayout(blocked, "NCHW8c", "NCHW");
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(back.ToDoubles(), x.ToDoubles());
  // Re-blocking directly equals going through the plain layout.
  Tensor four = Relayout(blocked, "NCHW8c", "NCHW4c");
  EXPECT_EQ(four.ToDoubles(), Relayout(x, "NCHW", "NCHW4c").ToDoubles());
}

TEST(LayoutTransformOp, TwoBlockedAxesRoundTripAndCommute) {
  // Weights blocked on both channel axes, the innermost output axis a sub-axis of another letter.
  Tensor w = Tensor::Random(TensorType{{16, 24, 3, 3}, DataType::kFloat32, ""}, 11);
  Tensor blocked = Relayout(w, "OIHW", "OIHW8i4o");
  EXPECT_EQ(blocked.shape(), (Shape{4, 3, 3, 3, 8, 4}));
  EXPECT_EQ(Relayout(blocked, "OIHW8i4o", "OIHW").ToDoubles(), w.ToDoubles());
  EXPECT_EQ(Relayout(blocked, "OIHW8i4o", "HWIO").ToDoubles(),
            Relayout(w, "OIHW", "HWIO").ToDoubles());
  EXPECT_EQ(Relayout(Relayout(w, "OIHW", "HWIO"), "HWIO", "OIHW8i4o").ToDoubles(),
            blocked.ToDoubles());
}

TEST(LayoutTransformOp, NchwToNhwcEqualsTranspose) {
  Tensor x = Tensor::Random(TensorType{{2, 3, 4, 5}, DataType::kFloat32, ""}, 9);
  Tensor nhwc = Relayout(x, "NCHW", "NHWC");
  Tensor transposed = Evaluate("transpose", {x}, {{"axes", std::vector<int64_t>{0, 2, 3, 1}}});
  EXPECT_EQ(nhwc.shape(), transposed.shape());
  EXPECT_EQ(nhwc.ToDoubles(), transposed.ToDoubles());
}

TEST(LayoutTransformOp, CopiesIntegersExactly) {
  int64_t big = (int64_t{1} << 60) + 3;
  Tensor x = Tensor::FromInt64s({1, 2, 1, 1}, {big, -big});
  Tensor y = Relayout(x, "NCHW", "NHWC");
  EXPECT_EQ(y.data<int64_t>()[0], big);
  EXPECT_EQ(y.data<int64_t>()[1], -big);
}

TEST(LayoutTransformOp, Errors) {
  auto infer = [](TensorType type, const std::string& from, const std::string& to) {
    Attrs attrs{{"src_layout", from}, {"dst_layout", to}};
    return InferCallType("layout_transform", {type}, attrs);
  };
  ExpectError(
      [&] {
        infer({{1, 8, 4, 4}, DataType::kFloat32, "NHWC"}, "NCHW", "NCHW8c");
      },
      {"layout_transform", "'NHWC'", "src_layout is 'NCHW'"});
  ExpectError(
      [&] {
        infer({{1, 6, 4, 4}, DataType::kFloat32, ""}, "NCHW", "NCHW4c");
      },
      {"layout_transform", "split factor 4", "extent 6"});
  ExpectError(
      [&] {
        infer({{1, 8, 4, 4}, DataType::kFloat32, ""}, "NCHW", "NCHW8");
      },
      {"layout_transform", "invalid layout 'NCHW8'"});
  EXPECT_EQ(infer({{1, 8, 4, 4}, DataType::kFloat32, "NCHW"}, "NCHW", "NHWC"),
            Type(TensorType{{1, 4, 4, 8}, DataType::kFloat32, "NHWC"}));
}

}  // namespace
}  // namespace tandem::ir
