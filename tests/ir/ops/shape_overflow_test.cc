// Shape arithmetic with hostile attributes: an int64 overflow in an element count, a byte size
// or an extent derived from an attribute is an Error naming the op and the attribute, never a
// wrapped shape.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "ir/checked_math.h"
#include "ir/graph.h"
#include "tests/ir/nn_test_util.h"

namespace tandem::ir {
namespace {

using testing::F32;
using testing::InferError;
using Ints = std::vector<int64_t>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedMath, OverflowIsAnErrorNamingTheQuantity) {
  EXPECT_EQ(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(CheckedAdd(kMax - 1, 1, "x"), kMax);
  try {
    CheckedMul(int64_t{1} << 32, int64_t{1} << 32, "the arena size");
    FAIL() << "expected an overflow";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.message(), "the arena size overflows int64");
  }
  EXPECT_THROW(CheckedAdd(kMax, 1, "x"), Error);
  EXPECT_THROW(CheckedSub(std::numeric_limits<int64_t>::min(), 1, "x"), Error);
}

TEST(ShapeOverflow, ElementCountAndByteSizeAreChecked) {
  EXPECT_EQ(NumElements({int64_t{1} << 62, 0, int64_t{1} << 62}), 0);
  EXPECT_THROW(NumElements({int64_t{1} << 32, int64_t{1} << 32}), Error);
  EXPECT_EQ(F32({int64_t{1} << 60}).num_elements(), int64_t{1} << 60);
  try {
    F32({int64_t{1} << 62}).num_bytes();
    FAIL() << "expected an overflow";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.message(), "byte size of f32[4611686018427387904] overflows int64");
  }
}

TEST(ShapeOverflow, ConvolutionPaddingOf2To31IsAnError) {
  Attrs attrs{
      {"padding", Ints{int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31}}};
  EXPECT_CONTAINS(InferError("conv2d", {F32({1, 1, 8, 8}), F32({1, 1, 3, 3})}, attrs),
                  "conv2d: the element count of f32[1,1,4294967302,4294967302] overflows int64");
  Attrs huge{{"padding", Ints{kMax, 0, 0, 0}}};
  EXPECT_CONTAINS(InferError("conv2d", {F32({1, 1, 8, 8}), F32({1, 1, 3, 3})}, huge),
                  "padded input extent (padding) on axis H overflows int64");
  Attrs dilated{{"dilation", Ints{kMax, 1}}};
  EXPECT_CONTAINS(InferError("conv2d", {F32({1, 1, 8, 8}), F32({1, 1, 3, 3})}, dilated),
                  "dilated kernel extent on axis H overflows int64");
}

TEST(ShapeOverflow, TransposedConvolutionAndPoolingAreChecked) {
  Attrs strides{{"strides", Ints{kMax, 1}}};
  EXPECT_CONTAINS(InferError("conv2d_transpose", {F32({1, 1, 8, 8}), F32({1, 1, 3, 3})}, strides),
                  "output extent on axis H");
  Attrs pool{{"pool_size", Ints{2, 2}}, {"dilation", Ints{kMax, 1}}};
  EXPECT_CONTAINS(InferError("max_pool2d", {F32({1, 1, 8, 8})}, pool),
                  "dilated pool_size extent on axis H overflows int64");
}

TEST(ShapeOverflow, ShapeOpsAreChecked) {
  EXPECT_CONTAINS(InferError("pad", {F32({2, 2})}, Attrs{{"pad_width", Ints{kMax, 0, 0, 0}}}),
                  "padded extent of axis 0 (pad_width) overflows int64");
  EXPECT_CONTAINS(InferError("reshape", {F32({4})},
                             Attrs{{"newshape", Ints{int64_t{1} << 32, int64_t{1} << 32, -1}}}),
                  "newshape");
  EXPECT_CONTAINS(InferError("concat",
                             {F32({int64_t{1} << 62, 0}), F32({int64_t{1} << 62, 0}),
                              F32({int64_t{1} << 62, 0})},
                             Attrs{{"axis", int64_t{0}}}),
                  "concatenated extent along axis overflows int64");
}

TEST(ShapeOverflow, GraphBuilderNamesTheNode) {
  GraphBuilder b("main");
  ValueId x = b.Input("x", F32({1, 1, 8, 8}));
  ValueId w = b.Input("w", F32({1, 1, 3, 3}));
  Attrs attrs{
      {"padding", Ints{int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31}}};
  try {
    b.Call("conv2d", {x, w}, attrs, "big_conv");
    FAIL() << "expected an overflow";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().op, "conv2d");
    EXPECT_EQ(e.where().node, "big_conv");
    EXPECT_CONTAINS(e.message(), "overflows int64");
  }
}

}  // namespace
}  // namespace tandem::ir
