// Dynamic builds by buckets (backends/runtime/bucketed_executable.h): the range of the token-input
// BERT example's sequence axis split into buckets, each built at its own bound; a run goes to the
// bucket holding its length and matches the stored outputs and the interpreter. Bucket lists are
// parsed and checked (kernels::ParseDynamicBuckets), and builds whose buckets do not follow one
// another are refused. A grid of buckets over an image's height and width
// (kernels::ParseDynamicBucketGrid) runs each size in its bucket.
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
  EXPECT_TRUE(bucketed->SplitsFirstSymbolOnly());
  EXPECT_EQ(bucketed->range().minimum, 1);
  EXPECT_EQ(bucketed->range().bound, 128);
  EXPECT_EQ(bucketed->InputSignatures(),
            (std::vector<std::string>{"input_ids: i64[1, sequence]",
                                      "attention_mask: i64[1, sequence]"}));
  // Each bucket is compiled at its own bound.
  EXPECT_EQ(bucketed->BucketFor({16}).executable().output_types().at(0).shape,
            (ir::Shape{1, 16, 64}));
  EXPECT_EQ(bucketed->BucketFor({17}).executable().output_types().at(0).shape,
            (ir::Shape{1, 128, 64}));
  EXPECT_EQ(bucketed->BucketFor({1}).range().bound, 16);
  EXPECT_EQ(bucketed->BucketFor({128}).range().minimum, 17);
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

TEST(DynamicBuckets, GridsSplitEverySymbolNamed) {
  kernels::DynamicRanges ranges = {{"h", 1, 32}, {"w", 1, 32}, {"b", 1, 4}};
  std::vector<kernels::DynamicRanges> grid =
      kernels::ParseDynamicBucketGrid({"16,32", "w=8,32"}, ranges);
  ASSERT_EQ(grid.size(), 4u);
  EXPECT_EQ(kernels::ToString(grid[0]), "h in [1, 16], w in [1, 8], b in [1, 4]");
  EXPECT_EQ(kernels::ToString(grid[1]), "h in [1, 16], w in [9, 32], b in [1, 4]");
  EXPECT_EQ(kernels::ToString(grid[3]), "h in [17, 32], w in [9, 32], b in [1, 4]");
  EXPECT_EQ(kernels::ParseDynamicBucketGrid({}, ranges),
            std::vector<kernels::DynamicRanges>{ranges});
  testing::ExpectErrorContaining(
      [&] { kernels::ParseDynamicBucketGrid({"x=8,32"}, ranges); },
      "the buckets 'x=8,32' name 'x', which is not a --dynamic symbol (h, w, b)");
  testing::ExpectErrorContaining(
      [&] {
        kernels::ParseDynamicBucketGrid({"8,32", "h=16,32"}, ranges);
      },
      "the buckets of h are given twice");
  testing::ExpectErrorContaining([&] { kernels::ParseDynamicBucketGrid({"w=8,30"}, ranges); },
                                 "end at 30 but the range of w ends at 32");
}

// An image of height h and width w: a 3x3 convolution with stride 2 and padding 1, ReLU, and a
// global average pool, both results returned.
ir::IRModule StridedImage(int64_t h, int64_t w) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 4, h, w}, ir::DataType::kFloat32, ""});
  ir::ValueId weight =
      b.Constant(ir::Tensor::Random(ir::TensorType{{8, 4, 3, 3}, ir::DataType::kFloat32, ""}, 5));
  ir::ValueId conv =
      b.Call("relu", {b.Call("conv2d", {x, weight},
                             ir::Attrs{{"strides", std::vector<int64_t>{2, 2}},
                                       {"padding", std::vector<int64_t>{1, 1, 1, 1}}})});
  ir::IRModule module;
  module.Add(b.Finish(b.Tuple({conv, b.Call("global_avg_pool2d", {conv})})));
  return module;
}

TEST(DynamicBuckets, AGridOfHeightAndWidthRunsEachSizeInItsBucket) {
  backends::DynamicModuleSource source;
  source.ranges = {{"h", 4, 24}, {"w", 4, 20}};
  source.make = [](const std::vector<int64_t>& sizes) {
    passes::PassContext context;
    return context.RunPipeline(
        *passes::ParsePipeline(pipelines::WithoutFinalLegalize(
            pipelines::PipelineRegistry::Global().Get("default_heuristic").text)),
        StridedImage(sizes.at(0), sizes.at(1)));
  };
  std::vector<kernels::DynamicRanges> grid =
      kernels::ParseDynamicBucketGrid({"h=11,24", "w=9,20"}, source.ranges);
  std::unique_ptr<backends::BucketedExecutable> bucketed = backends::BuildBucketed(
      source, grid, [](const kernels::DynamicRanges&) { return backends::BuildOptions{}; });
  ASSERT_EQ(bucketed->buckets().size(), 4u);
  EXPECT_EQ(kernels::ToString(bucketed->ranges()), "h in [4, 24], w in [4, 20]");
  EXPECT_FALSE(bucketed->SplitsFirstSymbolOnly());
  EXPECT_EQ(kernels::ToString(bucketed->BucketFor({11, 10}).ranges()),
            "h in [4, 11], w in [10, 20]");
  EXPECT_EQ(kernels::ToString(bucketed->BucketFor({12, 9}).ranges()), "h in [12, 24], w in [4, 9]");
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{
           {4, 4}, {11, 9}, {12, 10}, {24, 20}, {7, 17}, {23, 5}, {13, 13}}) {
    SCOPED_TRACE(fmt::format("h={}, w={}", h, w));
    ir::IRModule at = StridedImage(h, w);
    std::vector<ir::Tensor> inputs = {ir::Tensor::Random(
        ir::TensorType{{1, 4, h, w}, ir::DataType::kFloat32, ""}, static_cast<uint64_t>(h * w))};
    std::vector<ir::Tensor> expected = backends::RunReference(at, inputs);
    std::vector<ir::Tensor> outputs = bucketed->Run(inputs);
    ASSERT_EQ(outputs.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(outputs[k].shape(), expected[k].shape());
      EXPECT_LT(ir::RelativeError(outputs[k], expected[k]), 1e-5);
    }
  }
  // A grid missing a combination is refused.
  std::vector<std::unique_ptr<backends::DynamicExecutable>> three;
  for (size_t b = 0; b < 3; ++b) three.push_back(backends::BuildDynamic({grid[b], source.make}));
  testing::ExpectErrorContaining(
      [&] { backends::BucketedExecutable missing(std::move(three)); },
      "the buckets do not cover h in [4, 24], w in [4, 20]: 3 of 4 combinations");
}

}  // namespace
}  // namespace tandem
