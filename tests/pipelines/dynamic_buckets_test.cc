// Dynamic builds by buckets (backends/runtime/bucketed_executable.h): the range of the token-input
// BERT example's sequence axis split into buckets, each built at its own bound; a run goes to the
// bucket holding its length and matches the stored outputs and the interpreter. Bucket lists are
// parsed and checked (kernels::ParseDynamicBuckets), and builds whose buckets do not follow one
// another are refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "backends/runtime/bucketed_executable.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "tests/common/expect_error.h"
#include "tests/pipelines/token_models.h"

namespace tandem {
namespace {

const testing::TokenExample kBert{"bert_tokens"};

// The BERT example's source for builds over `range`: its symbols bound at import.
backends::DynamicModuleSource BertTokensSource(const kernels::DynamicRange& range) {
  return kBert.DynamicSource(kBert.ModelBytes(), range, testing::TokenBinding::kSymbols);
}

TEST(DynamicBuckets, ParsedIntoConsecutiveRanges) {
  kernels::DynamicRange range = kernels::ParseDynamicRange("seq=1:128");
  std::vector<kernels::DynamicRange> buckets = kernels::ParseDynamicBuckets("16,64,128", range);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].minimum, 1);
  EXPECT_EQ(buckets[0].bound, 16);
  EXPECT_EQ(buckets[1].minimum, 17);
  EXPECT_EQ(buckets[1].bound, 64);
  EXPECT_EQ(buckets[2].minimum, 65);
  EXPECT_EQ(buckets[2].bound, 128);
  EXPECT_EQ(buckets[2].symbol, "seq");
  ASSERT_EQ(kernels::ParseDynamicBuckets("", range).size(), 1u);
  EXPECT_EQ(kernels::ParseDynamicBuckets("", range)[0].bound, 128);

  kernels::DynamicRange from_one = kernels::ParseDynamicRange("seq=64");
  EXPECT_EQ(kernels::ToString(from_one), "seq in [1, 64]");
  for (const char* bad :
       {"seq=1:x", "=5", "seq", "seq=4:", "seq=:9", "seq=1:99999999999999999999"}) {
    testing::ExpectErrorContaining(
        [&] { kernels::ParseDynamicRange(bad); },
        fmt::format("the dynamic range '{}' is not SYMBOL=MIN:MAX", bad));
  }
  auto parse = [&](const std::string& text) { kernels::ParseDynamicBuckets(text, range); };
  testing::ExpectErrorContaining([&] { parse("16,64"); },
                                 "end at 64 but the range of seq ends at 128");
  testing::ExpectErrorContaining(
      [&] { parse("64,16,128"); },
      "the bucket from seq=65 needs a bound of at least 66 (a bucket holds at least two "
      "sizes), not 16");
  testing::ExpectErrorContaining([&] { parse("1,128"); },
                                 "the bucket from seq=1 needs a bound of at least 2");
  testing::ExpectErrorContaining([&] { parse("127,128"); },
                                 "the bucket from seq=128 needs a bound of at least 129");
  testing::ExpectErrorContaining([&] { parse("16,,128"); },
                                 "not a list of sizes such as 32,128 ('')");
  testing::ExpectErrorContaining([&] { parse("16;128"); }, "('16;128')");
  testing::ExpectErrorContaining([&] { parse("200"); },
                                 "bucket bound 200 is past the range's bound 128");
}

TEST(DynamicBuckets, EachLengthRunsInItsBucketToTheStoredOutputs) {
  kernels::DynamicRange range{"sequence", 1, 128};
  backends::DynamicModuleSource source = BertTokensSource(range);
  std::unique_ptr<backends::BucketedExecutable> bucketed =
      backends::BuildBucketed(source, kernels::ParseDynamicBuckets("16,128", range));
  ASSERT_EQ(bucketed->buckets().size(), 2u);
  EXPECT_EQ(bucketed->range().minimum, 1);
  EXPECT_EQ(bucketed->range().bound, 128);
  EXPECT_EQ(bucketed->InputSignatures(),
            (std::vector<std::string>{"input_ids: i64[1, sequence]",
                                      "attention_mask: i64[1, sequence]"}));
  // Each bucket is compiled at its own bound.
  EXPECT_EQ(bucketed->BucketFor(16).executable().output_types().at(0).shape,
            (ir::Shape{1, 16, 64}));
  EXPECT_EQ(bucketed->BucketFor(17).executable().output_types().at(0).shape,
            (ir::Shape{1, 128, 64}));
  EXPECT_EQ(bucketed->BucketFor(1).range().bound, 16);
  EXPECT_EQ(bucketed->BucketFor(128).range().minimum, 17);
  ASSERT_NO_FATAL_FAILURE(kBert.ExpectStoredOutputs(
      [&](const std::vector<ir::Tensor>& inputs) { return bucketed->Run(inputs).at(0); }, 64,
      1e-4));
  // Lengths at both sides of the buckets' border, in an order that moves between them.
  for (int64_t length : {17, 1, 15, 100, 2}) {
    SCOPED_TRACE("sequence length " + std::to_string(length));
    std::vector<ir::Tensor> inputs =
        testing::RandomTokenInputs(length, 40 + static_cast<uint64_t>(length), 4, 1000);
    ir::Tensor expected = backends::RunReference(source.make({length}), inputs).at(0);
    EXPECT_LT(ir::RelativeError(bucketed->Run(inputs).at(0), expected), 1e-4);
  }
  ir::Tensor too_long(ir::TensorType{{1, 129}, ir::DataType::kInt64, ""});
  testing::ExpectErrorContaining(
      [&] {
        bucketed->Run({too_long, too_long});
      },
      "i64[1, sequence] with sequence in [1, 128]");
}

TEST(DynamicBuckets, BucketsMustFollowOneAnother) {
  kernels::DynamicRange range{"sequence", 1, 40};
  backends::DynamicModuleSource source = BertTokensSource(range);
  std::vector<std::unique_ptr<backends::DynamicExecutable>> builds;
  for (const kernels::DynamicRange& bucket :
       {kernels::DynamicRange{"sequence", 1, 8}, kernels::DynamicRange{"sequence", 10, 16}}) {
    builds.push_back(backends::BuildDynamic({{bucket}, source.make}));
  }
  testing::ExpectErrorContaining(
      [&] { backends::BucketedExecutable bucketed(std::move(builds)); },
      "the bucket sequence in [10, 16] does not follow the bucket sequence in [1, 8]");
  testing::ExpectErrorContaining(
      [&] {
        backends::BuildBucketed(source, {{"sequence", 1, 8}, {"sequence", 9, 48}});
      },
      "the bucket sequence in [9, 48] is not part of the range sequence in [1, 40]");
  testing::ExpectErrorContaining([] { backends::BucketedExecutable bucketed({}); },
                                 "at least one bucket");
}

}  // namespace
}  // namespace tandem
