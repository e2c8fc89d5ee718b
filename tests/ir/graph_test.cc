#include <gtest/gtest.h>

#include <type_traits>
#include <utility>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace tandem::ir {
namespace {

TEST(GraphBuilder, UnknownOpIsAnErrorNamingTheOp) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{2, 3}, DataType::kFloat32, ""});
  try {
    b.Call("relu_typo", {x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'relu_typo'"), std::string::npos) << e.what();
  }
}

TEST(GraphBuilder, OperandOutOfRangeIsAnError) {
  GraphBuilder b("main");
  EXPECT_THROW(b.Tuple({3}), Error);
}

// TypeOf and TensorTypeOf hand out copies: a type kept across later Calls (which grow the node
// list) stays valid and unchanged.
static_assert(!std::is_reference_v<decltype(std::declval<GraphBuilder&>().TypeOf(0))>);
static_assert(!std::is_reference_v<decltype(std::declval<GraphBuilder&>().TensorTypeOf(0))>);

TEST(GraphBuilder, TypesStayValidAcrossLaterCalls) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", TensorType{{2, 3}, DataType::kFloat32, ""});
  ValueId t = b.Call("transpose", {x}, Attrs{{"axes", std::vector<int64_t>{1, 0}}});
  Type kept = b.TypeOf(t);
  TensorType kept_tensor = b.TensorTypeOf(t);
  ValueId last = t;
  for (int i = 0; i < 200; ++i) last = b.Call("relu", {last});
  EXPECT_EQ(ToString(kept), "f32[3,2]");
  EXPECT_EQ(kept_tensor.shape, (Shape{3, 2}));
  EXPECT_EQ(b.TypeOf(last), kept);
  ValueId tuple = b.Tuple({x, t});
  EXPECT_THROW(b.TensorTypeOf(tuple), Error);
  EXPECT_EQ(b.TypeOf(tuple).fields().size(), 2u);
}

TEST(Error, CarriesLocation) {
  Error e("bad thing",
          ErrorLocation{.pass = "FuseOps", .op = "conv2d", .node = "x", .line = 3, .column = 7});
  std::string text = e.what();
  EXPECT_NE(text.find("line 3, column 7"), std::string::npos) << text;
  EXPECT_NE(text.find("pass 'FuseOps'"), std::string::npos) << text;
  EXPECT_NE(text.find("op 'conv2d'"), std::string::npos) << text;
  Error outer = e.WithPass("Other");
  EXPECT_EQ(outer.where().pass, "FuseOps");  // innermost context wins
}

TEST(Tensor, HalfRoundTrip) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 0.333251953125f}) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(v)), v);
  }
}

TEST(Attrs, TypedGettersReportWrongKind) {
  Attrs a{{"axis", int64_t{1}}, {"name", std::string("x")}};
  EXPECT_EQ(a.GetInt("axis"), 1);
  EXPECT_DOUBLE_EQ(a.GetFloat("axis"), 1.0);
  EXPECT_THROW(a.GetInts("axis"), Error);
  EXPECT_THROW(a.GetInt("missing"), Error);
  EXPECT_EQ(a.GetInt("missing", 5), 5);
}

}  // namespace
}  // namespace tandem::ir
