// Accuracy of the f32 approximations the code generator emits for exp (vector code), erf, tanh
// and sigmoid, measured against double-precision libm.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>
#include <sstream>

#include "backends/llvm/codegen.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem {
namespace {

using ir::DataType;
using ir::ForKind;

struct Accuracy {
  double max_relative = 0;  // over results that are normal f32 numbers
  double max_absolute = 0;  // over the other results
  double worst_input = 0;
};

// Applies intrinsic `name` to every value of `inputs` with compiled code (a loop of `kind`).
Accuracy Measure(const std::string& name, const std::vector<float>& inputs, ForKind kind,
                 const std::function<double(double)>& exact) {
  auto n = static_cast<int64_t>(inputs.size());
  ir::Buffer a = ir::MakeBuffer("a", DataType::kFloat32, {n});
  ir::Buffer out = ir::MakeBuffer("out", DataType::kFloat32, {n});
  ir::Var i = ir::MakeVar("i"), vi = ir::MakeVar("vi");
  ir::Stmt block = testing::MakeBlock(
      "apply", {{vi, n, ir::IterKind::kSpatial, i}},
      ir::MakeStore(out, {vi}, ir::Call(name, {ir::Load(a, {vi})}, DataType::kFloat32)));
  ir::KernelFunction kernel = testing::Kernel("accuracy_" + name, {a, out},
                                              testing::Root(testing::Loop(i, n, block, kind)));
  auto module = backends::CompileKernels({kernel});
  ir::Tensor input = ir::Tensor::FromFloats({n}, inputs);
  ir::Tensor output = module->Run(kernel.name, {input}, true)[0];
  Accuracy accuracy;
  for (int64_t k = 0; k < n; ++k) {
    double x = inputs[static_cast<size_t>(k)];
    double expected = exact(x);
    double actual = output.data<float>()[k];
    if (std::abs(expected) >= FLT_MIN && std::abs(expected) <= FLT_MAX) {
      double relative = std::abs(actual - expected) / std::abs(expected);
      if (relative > accuracy.max_relative) {
        accuracy.max_relative = relative;
        accuracy.worst_input = x;
      }
    } else if (std::isfinite(expected)) {
      accuracy.max_absolute = std::max(accuracy.max_absolute, std::abs(actual - expected));
    } else {
      EXPECT_EQ(actual, expected) << name << "(" << x << ")";
    }
  }
  return accuracy;
}

// Evenly spaced values in [low, high] plus tiny magnitudes of both signs.
std::vector<float> Inputs(double low, double high) {
  std::vector<float> values;
  const int count = 60000;
  for (int k = 0; k <= count; ++k)
    values.push_back(static_cast<float>(low + (high - low) * k / count));
  for (double magnitude = 1e-30; magnitude < 2; magnitude *= 1.07) {
    values.push_back(static_cast<float>(magnitude));
    values.push_back(static_cast<float>(-magnitude));
  }
  values.push_back(0.0f);
  return values;
}

void ExpectAccurate(const std::string& name, double low, double high,
                    const std::function<double(double)>& exact, double bound) {
  std::vector<float> inputs = Inputs(low, high);
  for (ForKind kind : {ForKind::kVectorized, ForKind::kSerial}) {
    Accuracy accuracy = Measure(name, inputs, kind, exact);
    EXPECT_LT(accuracy.max_relative, bound)
        << name << " (" << ir::ToString(kind) << ") worst at x = " << accuracy.worst_input;
    EXPECT_LT(accuracy.max_absolute, 1e-37) << name;
    std::ostringstream text;
    text << std::scientific << accuracy.max_relative << " at x = " << accuracy.worst_input;
    ::testing::Test::RecordProperty(name + "_" + ir::ToString(kind) + "_max_relative_error",
                                    text.str());
  }
}

TEST(Intrinsics, ErfIsAccurate) {
  ExpectAccurate(
      "erf", -12, 12, [](double x) { return std::erf(x); }, 5e-7);
}

TEST(Intrinsics, TanhIsAccurate) {
  ExpectAccurate(
      "tanh", -20, 20, [](double x) { return std::tanh(x); }, 5e-7);
}

TEST(Intrinsics, SigmoidIsAccurate) {
  ExpectAccurate(
      "sigmoid", -90, 30, [](double x) { return 1 / (1 + std::exp(-x)); }, 5e-7);
}

TEST(Intrinsics, VectorExpIsAccurate) {
  ExpectAccurate(
      "exp", -104, 88.7, [](double x) { return std::exp(x); }, 3e-7);
}

TEST(Intrinsics, SpecialValues) {
  std::vector<float> inputs = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e30f, -1e30f};
  auto n = static_cast<int64_t>(inputs.size());
  for (const char* name : {"erf", "tanh", "sigmoid", "exp"}) {
    for (ForKind kind : {ForKind::kVectorized, ForKind::kSerial}) {
      ir::Buffer a = ir::MakeBuffer("a", DataType::kFloat32, {n});
      ir::Buffer out = ir::MakeBuffer("out", DataType::kFloat32, {n});
      ir::Var i = ir::MakeVar("i"), vi = ir::MakeVar("vi");
      ir::Stmt block = testing::MakeBlock(
          "apply", {{vi, n, ir::IterKind::kSpatial, i}},
          ir::MakeStore(out, {vi}, ir::Call(name, {ir::Load(a, {vi})}, DataType::kFloat32)));
      ir::KernelFunction kernel =
          testing::Kernel("special", {a, out}, testing::Root(testing::Loop(i, n, block, kind)));
      ir::Tensor input = ir::Tensor::FromFloats({n}, inputs);
      ir::Tensor compiled = backends::CompileKernels({kernel})->Run("special", {input}, true)[0];
      ir::Tensor reference = backends::RunKernelReference(kernel, {input}, true)[0];
      for (int64_t k = 0; k < n; ++k) {
        float c = compiled.data<float>()[k], r = reference.data<float>()[k];
        if (std::isnan(r)) {
          EXPECT_TRUE(std::isnan(c)) << name << "(" << inputs[static_cast<size_t>(k)] << ")";
        } else {
          EXPECT_EQ(c, r) << name << "(" << inputs[static_cast<size_t>(k)] << ")";
        }
      }
    }
  }
}

}  // namespace
}  // namespace tandem
