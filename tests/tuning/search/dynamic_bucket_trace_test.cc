// The trace of a dynamic build by buckets (tuning/search/dynamic_bucket_trace.h): written,
// serialized to JSON and read back to the same buckets, schedules and other symbols; traces that
// are not one, or whose buckets do not split the same symbols as a grid, are
// errors naming the instruction.
#include "tuning/search/dynamic_bucket_trace.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/common/expect_error.h"

namespace tandem::tuning {
namespace {

ir::Trace Schedule(int64_t factor) {
  ir::Instruction split;
  split.kind = "split";
  split.inputs = {"loop0"};
  split.outputs = {"loop1", "loop2"};
  split.attrs.Set("factors", std::vector<int64_t>{-1, factor});
  return ir::Trace({split});
}

std::vector<DynamicBucketDecision> TwoBuckets() {
  return {{{"seq", 1, 32}, {{"aaaa", Schedule(4)}, {"bbbb", Schedule(8)}}},
          {{"seq", 33, 128}, {{"cccc", Schedule(16)}}}};
}

TEST(DynamicBucketTrace, RoundTripsThroughJson) {
  ir::Trace trace = DynamicBucketTrace(TwoBuckets());
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_TRUE(IsDynamicBucketTrace(trace));
  ir::Trace decoded = ir::Trace::FromJson(trace.ToJson());
  EXPECT_EQ(decoded, trace);
  std::vector<DynamicBucketDecision> buckets = ReadDynamicBucketTrace(decoded);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].range.symbol, "seq");
  EXPECT_EQ(buckets[0].range.minimum, 1);
  EXPECT_EQ(buckets[0].range.bound, 32);
  EXPECT_EQ(buckets[1].range.minimum, 33);
  EXPECT_EQ(buckets[1].range.bound, 128);
  EXPECT_EQ(buckets[0].schedules, TwoBuckets()[0].schedules);
  EXPECT_EQ(buckets[1].schedules, TwoBuckets()[1].schedules);
  EXPECT_TRUE(buckets[0].others.empty());
  // A build over several symbols: the others' whole ranges travel with every bucket.
  std::vector<DynamicBucketDecision> with_batch = TwoBuckets();
  for (DynamicBucketDecision& bucket : with_batch) {
    bucket.others = {{"batch", 1, 4}, {"beams", 2, 6}};
  }
  ir::Trace batch_trace = ir::Trace::FromJson(DynamicBucketTrace(with_batch).ToJson());
  EXPECT_EQ(batch_trace.instructions()[0].attrs.GetString("others"), "batch=1:4,beams=2:6");
  std::vector<DynamicBucketDecision> read = ReadDynamicBucketTrace(batch_trace);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].others, with_batch[1].others);
  EXPECT_EQ(read[1].range, with_batch[1].range);
  // A bucket whose kernels all took default schedules carries none.
  std::vector<DynamicBucketDecision> defaults = {{{"n", 2, 9}, {}}};
  EXPECT_TRUE(ReadDynamicBucketTrace(DynamicBucketTrace(defaults))[0].schedules.empty());
}

TEST(DynamicBucketTrace, OtherTracesAndGapsAreErrors) {
  EXPECT_FALSE(IsDynamicBucketTrace(ir::Trace()));
  EXPECT_FALSE(IsDynamicBucketTrace(Schedule(2)));
  testing::ExpectErrorContaining([] { ReadDynamicBucketTrace(ir::Trace()); }, "has no buckets");
  testing::ExpectErrorContaining(
      [] { ReadDynamicBucketTrace(Schedule(2)); },
      "instruction 0 (split) of the dynamic bucket trace: not a DynamicBucket");

  std::vector<DynamicBucketDecision> gap = TwoBuckets();
  gap[1].range.minimum = 40;
  testing::ExpectErrorContaining(
      [&] { ReadDynamicBucketTrace(DynamicBucketTrace(gap)); },
      "instruction 1 (DynamicBucket) of the dynamic bucket trace: the bucket seq in "
      "[40, 128] does not follow the bucket seq in [1, 32]");
  std::vector<DynamicBucketDecision> other_symbol = TwoBuckets();
  other_symbol[1].range.symbol = "batch";
  testing::ExpectErrorContaining([&] { ReadDynamicBucketTrace(DynamicBucketTrace(other_symbol)); },
                                 "has other symbols than the bucket");
  std::vector<DynamicBucketDecision> other_batch = TwoBuckets();
  other_batch[0].others = {{"batch", 1, 4}};
  other_batch[1].others = {{"batch", 1, 8}};
  testing::ExpectErrorContaining([&] { ReadDynamicBucketTrace(DynamicBucketTrace(other_batch)); },
                                 "the buckets batch in [1, 8] and batch in [1, 4] overlap");
  std::vector<DynamicBucketDecision> repeated = TwoBuckets();
  repeated[0].others = {{"seq", 1, 4}};
  testing::ExpectErrorContaining([&] { ReadDynamicBucketTrace(DynamicBucketTrace(repeated)); },
                                 "the dynamic symbol 'seq' is given twice");
  // A grid of seq x batch missing its last combination: every bucket follows the ones before
  // it, so the whole is what is wrong.
  std::vector<DynamicBucketDecision> incomplete = TwoBuckets();
  incomplete[0].others = {{"batch", 1, 4}};
  incomplete[1].others = {{"batch", 1, 4}};
  incomplete.insert(incomplete.begin() + 1, incomplete[0]);
  incomplete[1].others = {{"batch", 5, 8}};
  EXPECT_EQ(GridOf(incomplete)[1], (kernels::DynamicRanges{{"seq", 1, 32}, {"batch", 5, 8}}));
  testing::ExpectErrorContaining([&] { ReadDynamicBucketTrace(DynamicBucketTrace(incomplete)); },
                                 "the buckets do not cover seq in [1, 128], batch in [1, 8]: 3 of "
                                 "4 combinations");
  std::vector<DynamicBucketDecision> one_size = {{{"seq", 5, 5}, {}}};
  testing::ExpectErrorContaining([&] { ReadDynamicBucketTrace(DynamicBucketTrace(one_size)); },
                                 "the bucket [5, 5] holds fewer than two sizes");

  ir::Trace missing = DynamicBucketTrace(TwoBuckets());
  std::vector<ir::Instruction> instructions = missing.instructions();
  instructions[0].attrs.Erase("bound");
  testing::ExpectErrorContaining([&] { ReadDynamicBucketTrace(ir::Trace(instructions)); }, "bound");
  instructions = missing.instructions();
  instructions[1].decision.reset();
  testing::ExpectErrorContaining([&] { ReadDynamicBucketTrace(ir::Trace(instructions)); },
                                 "carries no kernel schedules");
}

}  // namespace
}  // namespace tandem::tuning
