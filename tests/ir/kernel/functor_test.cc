// The expression queries of ir/kernel/functor.h: which buffers an expression reads against
// which buffers a statement writes.
#include "ir/kernel/functor.h"

#include <gtest/gtest.h>

namespace tandem::ir {
namespace {

class LoadsBufferStoredInTest : public ::testing::Test {
 protected:
  Buffer a_ = MakeBuffer("a", DataType::kInt64, {8});
  Buffer b_ = MakeBuffer("b", DataType::kInt64, {8});
  Buffer out_ = MakeBuffer("out", DataType::kFloat32, {8});
  Var i_ = MakeVar("i");
};

TEST_F(LoadsBufferStoredInTest, ABoundReadingABufferTheBodyWritesIsFound) {
  Stmt body = MakeFor(i_, 8, ForKind::kSerial, MakeStore(a_, {i_}, Load(b_, {i_}) + IntImm(1)));
  EXPECT_TRUE(LoadsBufferStoredIn(Load(a_, {IntImm(0)}) + IntImm(2), body));
  // Nested under a comparison, a min and a select the read is still found.
  EXPECT_TRUE(
      LoadsBufferStoredIn(Select(i_ < IntImm(3), Min(Load(a_, {i_}), IntImm(4)), IntImm(0)), body));
}

TEST_F(LoadsBufferStoredInTest, ReadsOfOtherBuffersAndLoadFreeExpressionsAreNot) {
  Stmt body =
      MakeSeq({MakeStore(a_, {IntImm(0)}, IntImm(1)), MakeStore(out_, {IntImm(0)}, FloatImm(2.0))});
  // The body only reads %b; %b is never stored.
  EXPECT_FALSE(LoadsBufferStoredIn(Load(b_, {i_}) * IntImm(2), body));
  EXPECT_FALSE(LoadsBufferStoredIn(i_ + IntImm(3), body));
  // A store into another buffer of the same shape does not count.
  Stmt writes_b = MakeStore(b_, {i_}, IntImm(0));
  EXPECT_FALSE(LoadsBufferStoredIn(Load(a_, {i_}), writes_b));
  EXPECT_TRUE(LoadsBufferStoredIn(Load(b_, {i_}), writes_b));
}

TEST_F(LoadsBufferStoredInTest, AStoreInsideABranchCounts) {
  Stmt body = MakeIfThenElse(i_ < IntImm(4), MakeStore(b_, {i_}, IntImm(0)),
                             MakeStore(out_, {i_}, FloatImm(1.0)));
  EXPECT_TRUE(LoadsBufferStoredIn(Load(b_, {IntImm(1)}), body));
  EXPECT_FALSE(LoadsBufferStoredIn(Load(a_, {IntImm(1)}), body));
}

}  // namespace
}  // namespace tandem::ir
