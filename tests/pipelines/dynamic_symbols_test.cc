// Dynamic builds over two symbols at once: the token-input BERT and GPT examples built once for
// every batch in [1, 4] and every sequence length in [1, 64] run at many combinations of the two
// to the reference interpreter on the model imported at those sizes; a row's result does not
// depend on the other rows of its batch; blocks on rows flattened across both symbols
// build once after the graph passes; inputs that disagree on a size, sizes out of range, an
// axis that changes with both symbols and a symbol given twice are errors naming them; buckets
// split the first symbol and keep the second's whole range.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>

#include "backends/reference/interpreter.h"
#include "backends/runtime/bucketed_executable.h"
#include "backends/runtime/dynamic_executable.h"
#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "tests/common/expect_error.h"
#include "tests/pipelines/dynamic_graphs.h"
#include "tests/pipelines/token_models.h"

namespace tandem {
namespace {

const kernels::DynamicRanges kBatchAndSequence = {{"batch", 1, 4}, {"sequence", 1, 64}};

// The example `name` at the symbols' sizes, with default_heuristic's graph passes applied.
backends::DynamicModuleSource TokenSource(const std::string& name,
                                          const kernels::DynamicRanges& ranges) {
  testing::TokenExample example{name};
  std::string bytes = example.ModelBytes();
  std::string graph_part = pipelines::WithoutFinalLegalize(
      pipelines::PipelineRegistry::Global().Get("default_heuristic").text);
  backends::DynamicModuleSource source;
  source.ranges = ranges;
  source.make = [name, bytes, graph_part, ranges](const std::vector<int64_t>& sizes) {
    frontend::OnnxImportOptions options;
    options.symbols = kernels::SymbolSizes(ranges, sizes);
    passes::PassContext context;
    return context.RunPipeline(*passes::ParsePipeline(graph_part),
                               frontend::ImportOnnxModel(bytes, name, options));
  };
  return source;
}

// Row `row` of the [batch, length] token inputs, as a batch of one.
std::vector<ir::Tensor> RowOf(const std::vector<ir::Tensor>& inputs, int64_t row) {
  std::vector<ir::Tensor> out;
  for (const ir::Tensor& input : inputs) {
    int64_t length = input.shape()[1];
    ir::Tensor one(ir::TensorType{{1, length}, input.dtype(), ""});
    std::memcpy(one.raw_data(), input.data<int64_t>() + row * length,
                static_cast<size_t>(length) * sizeof(int64_t));
    out.push_back(one);
  }
  return out;
}

// Rows [row] of a [batch, ...] float tensor, as a batch of one.
ir::Tensor RowOfOutput(const ir::Tensor& output, int64_t row) {
  ir::Shape shape = output.shape();
  shape[0] = 1;
  ir::Tensor one(ir::TensorType{shape, output.dtype(), ""});
  int64_t count = one.num_elements();
  std::memcpy(one.raw_data(), output.data<float>() + row * count,
              static_cast<size_t>(count) * sizeof(float));
  return one;
}

class DynamicSymbols : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamicSymbols, OneBuildRunsEveryBatchAndLengthToTheInterpreter) {
  backends::DynamicModuleSource source = TokenSource(GetParam(), kBatchAndSequence);
  std::unique_ptr<backends::DynamicExecutable> dynamic = backends::BuildDynamic(source);
  EXPECT_EQ(dynamic->InputSignatures(),
            (std::vector<std::string>{"input_ids: i64[batch, sequence]",
                                      "attention_mask: i64[batch, sequence]"}));
  // Sizes at the bounds, the minimums, and between, in an order that shrinks and grows each.
  for (auto [batch, length] : std::vector<std::pair<int64_t, int64_t>>{
           {4, 64}, {1, 1}, {3, 17}, {2, 64}, {4, 5}, {1, 33}, {3, 2}}) {
    SCOPED_TRACE(fmt::format("batch {}, sequence {}", batch, length));
    std::vector<ir::Tensor> inputs = testing::RandomTokenInputs(
        length, 100 + static_cast<uint64_t>(length), static_cast<uint64_t>(batch), 500, batch);
    EXPECT_EQ(dynamic->SizesOf(inputs), (std::vector<int64_t>{batch, length}));
    ir::Tensor output = dynamic->Run(inputs).at(0);
    ir::Tensor expected = backends::RunReference(source.make({batch, length}), inputs).at(0);
    ASSERT_EQ(output.shape(), expected.shape());
    EXPECT_LT(ir::RelativeError(output, expected), 1e-4);
    // Each row alone, as a batch of one, gives the same row: the junk rows past the batch and
    // the other rows do not reach it.
    for (int64_t row = 0; row < batch; ++row) {
      ir::Tensor alone = dynamic->Run(RowOf(inputs, row)).at(0);
      EXPECT_LT(ir::RelativeError(alone, RowOfOutput(output, row)), 1e-5) << "row " << row;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TokenModels, DynamicSymbols,
                         ::testing::Values("bert_tokens", "gpt_tokens"));

TEST(DynamicSymbolsErrors, InputsMustAgreeOnEachSymbolWithinItsRange) {
  std::unique_ptr<backends::DynamicExecutable> dynamic =
      backends::BuildDynamic(TokenSource("bert_tokens", kBatchAndSequence));
  auto tokens = [](int64_t batch, int64_t length) {
    return ir::Tensor(ir::TensorType{{batch, length}, ir::DataType::kInt64, ""});
  };
  testing::ExpectErrorContaining(
      [&] {
        dynamic->Run({tokens(2, 8), tokens(3, 8)});
      },
      "input 'attention_mask' gives batch=3 but input 'input_ids' "
      "gives batch=2");
  testing::ExpectErrorContaining(
      [&] {
        dynamic->Run({tokens(5, 8), tokens(5, 8)});
      },
      "i64[batch, sequence] with batch in [1, 4], sequence in [1, 64]");
  testing::ExpectErrorContaining(
      [&] {
        dynamic->Run({tokens(2, 65), tokens(2, 65)});
      },
      "sequence in [1, 64]");
}

// x: f32[batch, n, 8] flattened to [batch * n, 8]: with both symbols dynamic, its first axis
// changes with both.
ir::IRModule Flattened(int64_t batch, int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{batch, n, 8}, ir::DataType::kFloat32, ""});
  ir::ValueId flat =
      b.Call("reshape", {x}, ir::Attrs{{"newshape", std::vector<int64_t>{batch * n, 8}}});
  ir::IRModule module;
  module.Add(b.Finish(b.Call("relu", {flat})));
  return module;
}

TEST(DynamicSymbolsErrors, AnAxisMayFollowOneSymbolOnly) {
  backends::DynamicModuleSource source;
  source.ranges = {{"batch", 1, 4}, {"n", 1, 16}};
  source.make = [](const std::vector<int64_t>& sizes) { return Flattened(sizes[0], sizes[1]); };
  testing::ExpectErrorContaining([&] { backends::BuildDynamic(source); }, "axis 0 of %");
  testing::ExpectErrorContaining([&] { backends::BuildDynamic(source); },
                                 "changes with both batch and n");
  // The batch alone, n bound, builds and runs: the batch stays the outer part of the merged
  // axis, so its valid rows are a prefix.
  source.ranges = {{"batch", 1, 4}};
  source.make = [](const std::vector<int64_t>& sizes) { return Flattened(sizes[0], 16); };
  std::unique_ptr<backends::DynamicExecutable> dynamic = backends::BuildDynamic(source);
  ir::Tensor x = ir::Tensor::Random(ir::TensorType{{3, 16, 8}, ir::DataType::kFloat32, ""}, 3);
  EXPECT_LT(ir::RelativeError(dynamic->Run({x}).at(0),
                              backends::RunReference(Flattened(3, 16), {x}).at(0)),
            1e-6);
}

// A block applied to flattened rows, as GPT-2's Conv1D and OPT's decoder layer are exported: the
// heads of x: f32[batch, n, 2, 4] and the batch and sequence axes flattened to [batch * n, 8],
// centered by the row's mean, dense, bias, tanh, dense, a residual add of the flattened rows,
// and the rows regrouped to [batch, n, 8].
ir::IRModule LinearOnFlattenedRows(int64_t batch, int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{batch, n, 2, 4}, ir::DataType::kFloat32, ""});
  auto constant = [&](ir::Shape shape, uint64_t seed) {
    return b.Constant(ir::Tensor::Random(
        ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""}, seed, -0.5, 0.5));
  };
  ir::ValueId flat =
      b.Call("reshape", {x}, ir::Attrs{{"newshape", std::vector<int64_t>{batch * n, 8}}});
  ir::ValueId mean = b.Call("mean", {flat},
                            ir::Attrs{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{1}}});
  ir::ValueId centered = b.Call("subtract", {flat, mean});
  ir::ValueId hidden = b.Call(
      "tanh",
      {b.Call("add", {b.Call("dense", {centered, constant({16, 8}, 1)}), constant({16}, 2)})});
  ir::ValueId out = b.Call("add", {flat, b.Call("dense", {hidden, constant({8, 16}, 3)})});
  ir::IRModule module;
  module.Add(b.Finish(
      b.Call("reshape", {out}, ir::Attrs{{"newshape", std::vector<int64_t>{batch, n, 8}}})));
  return module;
}

// SimplifyExpr keeps the row-wise ops on the original axes (passes/heuristic/row_reshape_pairs.h),
// so the graph passes leave no axis that changes with both symbols: one build runs every pair.
TEST(DynamicSymbolsFlattenedRows, LinearLayersBuildOnceForBatchAndLength) {
  backends::DynamicModuleSource source;
  source.ranges = {{"batch", 1, 4}, {"n", 1, 24}};
  std::string graph_part = testing::HeuristicGraphPasses();
  source.make = [graph_part](const std::vector<int64_t>& sizes) {
    passes::PassContext context;
    return context.RunPipeline(*passes::ParsePipeline(graph_part),
                               LinearOnFlattenedRows(sizes[0], sizes[1]));
  };
  std::unique_ptr<backends::DynamicExecutable> dynamic = backends::BuildDynamic(source);
  for (auto [batch, n] :
       std::vector<std::pair<int64_t, int64_t>>{{4, 24}, {1, 1}, {3, 7}, {2, 24}, {4, 13}}) {
    SCOPED_TRACE(fmt::format("batch {}, n {}", batch, n));
    ir::IRModule at = LinearOnFlattenedRows(batch, n);
    std::vector<ir::Tensor> inputs = testing::RandomInputs(at, 40 + static_cast<uint64_t>(n));
    ir::Tensor output = dynamic->Run(inputs).at(0);
    ir::Tensor expected = backends::RunReference(at, inputs).at(0);
    ASSERT_EQ(output.shape(), expected.shape());
    EXPECT_LT(ir::RelativeError(output, expected), 1e-5);
  }
  // Without the graph passes the flattened axis changes with both symbols.
  source.make = [](const std::vector<int64_t>& sizes) {
    return LinearOnFlattenedRows(sizes[0], sizes[1]);
  };
  testing::ExpectErrorContaining([&] { backends::BuildDynamic(source); },
                                 "changes with both batch and n");
}

TEST(DynamicSymbolsErrors, SymbolsAreDistinctAndRangesHoldTwoSizes) {
  testing::ExpectErrorContaining(
      [] {
        kernels::CheckDynamicRanges({{"seq", 1, 8}, {"seq", 1, 16}});
      },
      "the dynamic symbol 'seq' is given twice");
  testing::ExpectErrorContaining(
      [] {
        kernels::CheckDynamicRanges({{"batch", 4, 4}});
      },
      "dynamic axis 'batch': the range [4, 4]");
  testing::ExpectErrorContaining([] { kernels::CheckDynamicRanges({}); },
                                 "at least one dynamic symbol");
}

TEST(DynamicSymbolsBuckets, BucketsSplitTheFirstSymbolAndKeepTheOthersWhole) {
  backends::DynamicModuleSource source = TokenSource("bert_tokens", kBatchAndSequence);
  std::unique_ptr<backends::BucketedExecutable> bucketed =
      backends::BuildBucketed(source, kernels::ParseDynamicBuckets("2,4", source.ranges[0]));
  ASSERT_EQ(bucketed->buckets().size(), 2u);
  EXPECT_EQ(kernels::ToString(bucketed->ranges()), "batch in [1, 4], sequence in [1, 64]");
  EXPECT_EQ(kernels::ToString(bucketed->buckets()[1]->ranges()),
            "batch in [3, 4], sequence in [1, 64]");
  for (auto [batch, length] :
       std::vector<std::pair<int64_t, int64_t>>{{3, 40}, {1, 7}, {4, 64}, {2, 1}}) {
    SCOPED_TRACE(fmt::format("batch {}, sequence {}", batch, length));
    std::vector<ir::Tensor> inputs =
        testing::RandomTokenInputs(length, 7 + static_cast<uint64_t>(length), 11, 1000, batch);
    ir::Tensor expected = backends::RunReference(source.make({batch, length}), inputs).at(0);
    EXPECT_LT(ir::RelativeError(bucketed->Run(inputs).at(0), expected), 1e-4);
  }
}

}  // namespace
}  // namespace tandem
