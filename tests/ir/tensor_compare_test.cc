// RelativeError and LargestDifference with non-finite values: identical infinities and NaN
// positions compare equal, a NaN or infinity on one side is +infinity (never NaN), and the
// differing element is found.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/tensor.h"

namespace tandem::ir {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor Floats(const std::vector<float>& values) {
  return Tensor::FromFloats({static_cast<int64_t>(values.size())}, values);
}

TEST(TensorCompare, IdenticalInfinitiesAndNaNsAreEqual) {
  Tensor a = Floats({kInf, -kInf, kNaN, 1.0f});
  EXPECT_EQ(RelativeError(a, Floats({kInf, -kInf, kNaN, 1.0f})), 0.0);
  EXPECT_EQ(LargestDifference(a, Floats({kInf, -kInf, kNaN, 1.0f})), -1);
  EXPECT_NEAR(RelativeError(a, Floats({kInf, -kInf, kNaN, 2.0f})), 0.5, 1e-12);
}

TEST(TensorCompare, MismatchedSpecialValuesAreInfiniteNeverNaN) {
  Tensor a = Floats({kInf, 1.0f, 2.0f});
  for (const Tensor& b :
       {Floats({-kInf, 1.0f, 2.0f}), Floats({kNaN, 1.0f, 2.0f}), Floats({1.0f, 1.0f, 2.0f})}) {
    double error = RelativeError(a, b);
    EXPECT_FALSE(std::isnan(error));
    EXPECT_TRUE(std::isinf(error));
    EXPECT_EQ(LargestDifference(a, b), 0);
  }
  EXPECT_EQ(LargestDifference(Floats({1, 2, 3}), Floats({1, 2, kNaN})), 2);
  EXPECT_EQ(LargestDifference(Floats({1, 2, 3}), Floats({1, 5, 3.5})), 1);
}

TEST(TensorCompare, HugeFiniteValuesDoNotOverflow) {
  Tensor a(TensorType{{2}, DataType::kFloat64, ""});
  Tensor b(TensorType{{2}, DataType::kFloat64, ""});
  a.SetDouble(0, 1e300);
  a.SetDouble(1, -1e308);
  b.SetDouble(0, 1e300);
  b.SetDouble(1, -1e308);
  EXPECT_EQ(RelativeError(a, b), 0.0);
  b.SetDouble(1, 1e308);
  EXPECT_NEAR(RelativeError(a, b), 2.0, 1e-9);
}

}  // namespace
}  // namespace tandem::ir
