// The elementwise ops added for real-world models: log, abs, floor, ceil, round (halves to
// even), maximum and minimum (NaN-propagating), and the parametric activations leaky_relu, elu
// and prelu: type inference, reference values computed by hand, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "tests/ir/expect_error.h"

namespace tandem::ir {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor Evaluate(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  std::vector<Type> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  Type type = InferCallType(op, types, attrs);
  std::vector<Tensor> results = EvaluateReference(op, inputs, attrs, type);
  EXPECT_EQ(results.size(), 1u);
  EXPECT_EQ(results.at(0).type(), type.tensor());
  return results.at(0);
}

Tensor Doubles(Shape shape, const std::vector<double>& values) {
  return Tensor::FromDoubles(std::move(shape), DataType::kFloat64, values);
}

// Exact comparison; NaN matches NaN.
void ExpectValues(const Tensor& t, const std::vector<double>& expected, double tolerance = 0) {
  std::vector<double> actual = t.ToDoubles();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i << " is " << actual[i];
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
    }
  }
}

using testing::ExpectError;

TEST(ActivationOps, RoundingFunctions) {
  Tensor x = Doubles({8}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.2});
  ExpectValues(Evaluate("round", {x}), {-2, -2, -0, 0, 2, 2, 3, -2});
  ExpectValues(Evaluate("floor", {x}), {-3, -2, -1, 0, 1, 2, 2, -3});
  ExpectValues(Evaluate("ceil", {x}), {-2, -1, -0, 1, 2, 3, 3, -2});
  ExpectValues(Evaluate("abs", {x}), {2.5, 1.5, 0.5, 0.5, 1.5, 2.5, 2.7, 2.2});
  // Integers: exact; the most negative int32 saturates under abs.
  Tensor i = Tensor::FromDoubles({3}, DataType::kInt32, {-7, 3, -2147483648.0});
  ExpectValues(Evaluate("round", {i}), {-7, 3, -2147483648.0});
  ExpectValues(Evaluate("abs", {i}), {7, 3, 2147483647});
  EXPECT_EQ(Evaluate("floor", {i}).dtype(), DataType::kInt32);
}

TEST(ActivationOps, Log) {
  Tensor log = Evaluate("log", {Doubles({4}, {1, std::exp(2.0), 0, -1})});
  ExpectValues(log, {0, 2, -kInf, kNaN}, 1e-15);
}

TEST(ActivationOps, MaximumAndMinimumPropagateNaN) {
  Tensor a = Doubles({2, 3}, {1, -2, kNaN, 4, 0, 1});
  Tensor b = Doubles({3}, {0.5, kNaN, 2});
  ExpectValues(Evaluate("maximum", {a, b}), {1, kNaN, kNaN, 4, kNaN, 2});
  ExpectValues(Evaluate("minimum", {a, b}), {0.5, kNaN, kNaN, 0.5, kNaN, 1});
  EXPECT_EQ(Evaluate("maximum", {b, a}).shape(), (Shape{2, 3}));
  ExpectError([&] { Evaluate("maximum", {a, Doubles({2}, {1, 2})}); }, {"broadcast"});
}

TEST(ActivationOps, LeakyReluAndElu) {
  Tensor x = Doubles({5}, {-2, -0.5, 0, 3, kNaN});
  ExpectValues(Evaluate("leaky_relu", {x}), {-0.02, -0.005, 0, 3, kNaN}, 1e-15);
  ExpectValues(Evaluate("leaky_relu", {x}, {{"alpha", 0.5}}), {-1, -0.25, 0, 3, kNaN}, 1e-15);
  ExpectValues(Evaluate("elu", {x}), {std::exp(-2.0) - 1, std::exp(-0.5) - 1, 0, 3, kNaN}, 1e-15);
  ExpectValues(Evaluate("elu", {x}, {{"alpha", 2.0}}),
               {2 * (std::exp(-2.0) - 1), 2 * (std::exp(-0.5) - 1), 0, 3, kNaN}, 1e-15);
  Attrs attrs;
  InferCallType("elu", {Type(TensorType{{2}, DataType::kFloat32, ""})}, attrs);
  EXPECT_EQ(attrs.GetFloat("alpha"), 1.0);
  ExpectError([&] { Evaluate("leaky_relu", {x}, {{"alpha", kInf}}); }, {"leaky_relu", "alpha"});
}

TEST(ActivationOps, PreluBroadcastsTheSlopeToTheData) {
  Tensor x = Doubles({1, 2, 2}, {-1, 2, -3, 4});
  Tensor slope = Doubles({2, 1}, {0.5, 0.25});
  ExpectValues(Evaluate("prelu", {x, slope}), {-0.5, 2, -0.75, 4});
  ExpectValues(Evaluate("prelu", {x, Doubles({}, {0.1})}), {-0.1, 2, -0.3, 4}, 1e-15);
  // The slope may not make the result larger than the data, nor have another dtype.
  ExpectError(
      [&] {
        Evaluate("prelu", {Doubles({2}, {1, 2}), slope});
      },
      {"prelu", "slope", "does not broadcast"});
  ExpectError(
      [&] {
        Evaluate("prelu", {x, Tensor::FromDoubles({1}, DataType::kFloat32, {0.5})});
      },
      {"prelu"});
}

TEST(ActivationOps, EveryNewOpIsDocumented) {
  for (const char* name : {"log", "abs", "floor", "ceil", "round", "maximum", "minimum",
                           "leaky_relu", "elu", "prelu"}) {
    EXPECT_FALSE(OpRegistry::Global().Get(name).doc.empty()) << name;
  }
}

}  // namespace
}  // namespace tandem::ir
