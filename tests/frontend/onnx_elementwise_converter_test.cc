// Tests of the converters of ONNX activations and elementwise math
// (onnx_elementwise_converters.cc): small models built with the protobuf API, imported, run on the
// reference interpreter and compared with values computed independently in this file, and the graph
// ops each becomes.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Shape;
using ir::Tensor;
using testing::CountOp;
using testing::ExpectError;
using testing::ExpectNear;
using testing::FloatAttr;
using testing::ImportAndRun;
using testing::OnnxModel;

const Tensor& Sample() {
  static const Tensor x =
      Tensor::FromFloats({2, 4}, {-3.5f, -1.5f, -0.5f, 0.0f, 0.5f, 1.25f, 2.5f, 4.0f});
  return x;
}

// Runs a one-node model of `op` with `attrs` on Sample() and compares with fn per element.
void ExpectUnary(const std::string& op, const std::vector<onnx::AttributeProto>& attrs,
                 const std::function<double(double)>& fn, double tolerance = 1e-6) {
  SCOPED_TRACE(op);
  OnnxModel model;
  model.Input("x", {2, 4}).Node(op, {"x"}, {"y"}, attrs).Output("y");
  std::vector<Tensor> out = ImportAndRun(model, {Sample()});
  std::vector<double> expected;
  for (double v : Sample().ToDoubles()) expected.push_back(fn(v));
  ExpectNear(out.at(0), {2, 4}, expected, tolerance);
}

TEST(OnnxElementwiseConvert, Activations) {
  ExpectUnary("LeakyRelu", {}, [](double x) { return x < 0 ? 0.01 * x : x; });
  ExpectUnary("LeakyRelu", {FloatAttr("alpha", 0.25f)},
              [](double x) { return x < 0 ? 0.25 * x : x; });
  ExpectUnary("Elu", {}, [](double x) { return x < 0 ? std::exp(x) - 1 : x; });
  ExpectUnary("Elu", {FloatAttr("alpha", 2.0f)},
              [](double x) { return x < 0 ? 2 * (std::exp(x) - 1) : x; });
  const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  ExpectUnary("Selu", {},
              [&](double x) { return gamma * (x <= 0 ? alpha * std::exp(x) - alpha : x); });
  ExpectUnary("Selu", {FloatAttr("alpha", 2.0f), FloatAttr("gamma", 3.0f)},
              [](double x) { return 3 * (x <= 0 ? 2 * std::exp(x) - 2 : x); });
  ExpectUnary("HardSigmoid", {},
              [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); });
  ExpectUnary("HardSigmoid", {FloatAttr("alpha", 0.5f), FloatAttr("beta", 0.25f)},
              [](double x) { return std::max(0.0, std::min(1.0, 0.5 * x + 0.25)); });
  ExpectUnary("HardSwish", {},
              [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); });
  ExpectUnary("Softplus", {}, [](double x) { return std::log(std::exp(x) + 1); });
}

TEST(OnnxElementwiseConvert, MathFunctions) {
  ExpectUnary("Abs", {}, [](double x) { return std::abs(x); });
  ExpectUnary("Floor", {}, [](double x) { return std::floor(x); });
  ExpectUnary("Ceil", {}, [](double x) { return std::ceil(x); });
  ExpectUnary("Round", {}, [](double x) { return std::nearbyint(x); });  // -0.5 -> -0, 2.5 -> 2
  OnnxModel model;
  model.Input("x", {3}).Node("Log", {"x"}, {"y"}).Output("y");
  ExpectNear(ImportAndRun(model, {Tensor::FromFloats({3}, {1.0f, 2.0f, 10.0f})}).at(0), {3},
             {0, std::log(2.0), std::log(10.0)});
}

TEST(OnnxElementwiseConvert, PReluTakesAChannelSlope) {
  Tensor x = Tensor::FromFloats({1, 2, 1, 2}, {-1, 2, -4, 8});
  OnnxModel model;
  model.Input("x", {1, 2, 1, 2}).Initializer("slope", Tensor::FromFloats({2, 1, 1}, {0.5f, 0.25f}));
  model.Node("PRelu", {"x", "slope"}, {"y"}).Output("y");
  ExpectNear(ImportAndRun(model, {x}).at(0), {1, 2, 1, 2}, {-0.5, 2, -1, 8});
  EXPECT_EQ(CountOp(model.Import(), "prelu"), 1);

  OnnxModel wider;  // the slope may not broadcast the data to a larger shape
  wider.Input("x", {2}).Initializer("slope", Tensor::FromFloats({3, 1}, {1, 2, 3}));
  wider.Node("PRelu", {"x", "slope"}, {"y"}, {}, "prelu").Output("y");
  ExpectError([&] { wider.Import(); }, {"prelu", "PRelu", "does not broadcast"});
}

TEST(OnnxElementwiseConvert, VariadicOpsBroadcastAllTheirInputs) {
  Tensor a = Tensor::FromFloats({2, 2}, {1, 5, -2, 0});
  Tensor b = Tensor::FromFloats({2}, {3, -1});
  Tensor c = Tensor::FromFloats({1}, {2});
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    OnnxModel model;
    model.Input("a", {2, 2}).Input("b", {2}).Input("c", {1});
    model.Node(op, {"a", "b", "c"}, {"y"}).Node(op, {"a"}, {"one"}).Output("y").Output("one");
    std::vector<Tensor> out = ImportAndRun(model, {a, b, c});
    std::vector<double> expected;
    for (int64_t i = 0; i < 4; ++i) {
      double x = a.GetDouble(i), y = b.GetDouble(i % 2), z = c.GetDouble(0);
      std::string name = op;
      expected.push_back(name == "Sum"    ? x + y + z
                         : name == "Mean" ? (x + y + z) / 3
                         : name == "Max"  ? std::max({x, y, z})
                                          : std::min({x, y, z}));
    }
    ExpectNear(out.at(0), {2, 2}, expected);
    ExpectNear(out.at(1), {2, 2}, a.ToDoubles());  // one input: itself
  }
  OnnxModel mixed;
  mixed.Input("a", {2})
      .Input("b", {2}, DataType::kInt32)
      .Node("Max", {"a", "b"}, {"y"})
      .Output("y");
  ExpectError([&] { mixed.Import(); }, {"Max", "input 1"});
}

OnnxModel MicrosoftModel(const std::string& op, const std::vector<std::string>& inputs) {
  OnnxModel model;
  auto* entry = model.proto().add_opset_import();
  entry->set_domain("com.microsoft");
  entry->set_version(1);
  model.Input("x", {2, 4});
  if (inputs.size() > 1) model.Initializer("bias", Tensor::FromFloats({4}, {0.5f, -1, 0, 2}));
  model.Node(op, inputs, {"y"}).Output("y");
  model.graph()->mutable_node(0)->set_domain("com.microsoft");
  return model;
}

TEST(OnnxElementwiseConvert, MicrosoftGelus) {
  auto exact = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  auto tanh_gelu = [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  const double bias[] = {0.5, -1, 0, 2};
  struct Expected {
    std::string op;
    std::vector<std::string> inputs;
    std::function<double(double, int)> fn;
    std::string approximate;
  };
  std::vector<Expected> cases = {
      {"Gelu", {"x"}, [&](double x, int) { return exact(x); }, "none"},
      {"BiasGelu", {"x", "bias"}, [&](double x, int i) { return exact(x + bias[i]); }, "none"},
      {"FastGelu", {"x"}, [&](double x, int) { return tanh_gelu(x); }, "tanh"},
      {"FastGelu", {"x", "bias"}, [&](double x, int i) { return tanh_gelu(x + bias[i]); }, "tanh"},
  };
  for (const Expected& c : cases) {
    SCOPED_TRACE(c.op + " with " + std::to_string(c.inputs.size()) + " inputs");
    OnnxModel model = MicrosoftModel(c.op, c.inputs);
    std::vector<double> expected;
    std::vector<double> x = Sample().ToDoubles();
    for (size_t i = 0; i < x.size(); ++i) expected.push_back(c.fn(x[i], static_cast<int>(i % 4)));
    ExpectNear(ImportAndRun(model, {Sample()}).at(0), {2, 4}, expected, 1e-5);
    ir::IRModule module = model.Import();
    ASSERT_EQ(CountOp(module, "gelu"), 1);
    for (const ir::Node& node : module.Get("main").nodes) {
      if (node.op == "gelu") {
        EXPECT_EQ(node.attrs.GetString("approximate"), c.approximate);
      }
    }
  }
}

}  // namespace
}  // namespace tandem::frontend
