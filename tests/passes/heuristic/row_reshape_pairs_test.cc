// SimplifyExpr's row reshape pairs (passes/heuristic/row_reshape_pairs.h): a reshape regrouping
// leading axes, row-wise ops and a reshape back become the row-wise ops on the original axes;
// each case where the pair must stay; every rewrite computes what its input computes.
#include <gtest/gtest.h>

#include <regex>

#include "backends/reference/interpreter.h"
#include "ir/printer.h"
#include "tests/passes/rewrite_test_util.h"

namespace tandem::passes {
namespace {

using rewrite_testing::ExpectRewrite;
using rewrite_testing::ExpectUnchanged;

constexpr const char* kPipeline = "InferType, SimplifyExpr";

// `text` with each `constant f32[dims] random` given data: element i is ((i * 7) % 11 - 5) / 4.
std::string WithData(const std::string& text) {
  static const std::regex kRandom(R"(constant f32\[([0-9,]+)\] random)");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), kRandom);
  size_t copied = 0;
  for (auto match = begin; match != std::sregex_iterator(); ++match) {
    out += text.substr(copied, static_cast<size_t>(match->position()) - copied);
    int64_t count = 1;
    std::string dims = (*match)[1];
    for (size_t start = 0; start < dims.size();) {
      size_t comma = dims.find(',', start);
      if (comma == std::string::npos) comma = dims.size();
      count *= std::stoll(dims.substr(start, comma - start));
      start = comma + 1;
    }
    std::string data;
    for (int64_t i = 0; i < count; ++i) {
      data += (i ? ", " : "") + std::to_string(static_cast<double>((i * 7) % 11 - 5) / 4);
    }
    out += "constant f32[" + dims + "] [" + data + "]";
    copied = static_cast<size_t>(match->position() + match->length());
  }
  return out + text.substr(copied);
}

// Expects the pipeline to rewrite `input` into `expected` and the rewrite to give the input's
// outputs on random inputs.
void ExpectSameResultRewrite(const std::string& input_text, const std::string& expected) {
  std::string input = WithData(input_text);
  ExpectRewrite(kPipeline, input, WithData(expected));
  ir::IRModule before = ir::ParseModule(input, "input");
  ir::IRModule after = rewrite_testing::Run(kPipeline, before);
  std::vector<ir::Tensor> inputs = backends::RandomInputs(before.Get("main"), 5);
  std::vector<ir::Tensor> want = backends::RunReference(before, inputs);
  std::vector<ir::Tensor> got = backends::RunReference(after, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].type(), want[i].type());
    EXPECT_LT(ir::RelativeError(got[i], want[i]), 1e-6) << "output " << i;
  }
}

// A linear layer applied to flattened rows (GPT-2's Conv1D as exported): reshape, dense, bias,
// reshape back.
TEST(RowReshapePairs, LinearLayerOnFlattenedRows) {
  ExpectSameResultRewrite(R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,5] {
  %w = constant f32[5,4] random
  %bias = constant f32[5] random
  %rows = reshape(%x) {newshape=[6,4]}
  %d = dense(%rows, %w)
  %b = add(%d, %bias)
  %y = reshape(%b) {newshape=[2,3,5]}
  return %y
})",
                          R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,5] {
  %w = constant f32[5,4] random
  %bias = constant f32[5] random
  %d = dense(%x, %w)
  %b = add(%d, %bias)
  return %b
})");
}

// The attention output's heads merged into the row by the same reshape that flattens batch and
// sequence: the heads stay merged ([2,3,2,2] -> [2,3,4]), batch and sequence stay apart; a
// matmul with a rank-2 weight, an elementwise op and a [1, n] operand are row-wise too.
TEST(RowReshapePairs, TrailingAxesMergedIntoTheRow) {
  ExpectSameResultRewrite(R"(
graph @main(%x: f32[2,3,2,2], %w: f32[4,5]) -> f32[2,3,5] {
  %scale = constant f32[1,5] random
  %rows = reshape(%x) {newshape=[6,4]}
  %m = matmul(%rows, %w)
  %t = tanh(%m)
  %s = multiply(%scale, %t)
  %y = reshape(%s) {newshape=[2,3,5]}
  return %y
})",
                          R"(
graph @main(%x: f32[2,3,2,2], %w: f32[4,5]) -> f32[2,3,5] {
  %scale = constant f32[1,5] random
  %x_rows = reshape(%x) {newshape=[2,3,4]}
  %m = matmul(%x_rows, %w)
  %t = tanh(%m)
  %s = multiply(%scale, %t)
  return %s
})");
}

// The rows flattened around a whole block, as OPT's decoder layer does: a layer norm's mean over
// the row, a two-layer MLP, and a residual add that reads the flattened value again. The
// reduction names the last axis of the restored rank.
TEST(RowReshapePairs, BlockOnFlattenedRows) {
  ExpectSameResultRewrite(R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,4] {
  %w1 = constant f32[6,4] random
  %w2 = constant f32[4,6] random
  %rows = reshape(%x) {newshape=[6,4]}
  %mean = mean(%rows) {axes=[1], keepdims=1}
  %centered = subtract(%rows, %mean)
  %h = dense(%centered, %w1)
  %r = relu(%h)
  %o = dense(%r, %w2)
  %s = softmax(%o) {axis=1}
  %sum = add(%rows, %s)
  %y = reshape(%sum) {newshape=[2,3,4]}
  return %y
})",
                          R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,4] {
  %w1 = constant f32[6,4] random
  %w2 = constant f32[4,6] random
  %mean = mean(%x) {axes=[2], keepdims=1}
  %centered = subtract(%x, %mean)
  %h = dense(%centered, %w1)
  %r = relu(%h)
  %o = dense(%r, %w2)
  %s = softmax(%o) {axis=2}
  %sum = add(%x, %s)
  return %sum
})");
}

TEST(RowReshapePairs, PairsThatStay) {
  // The flattened value read by an op that is not row-wise (a sum over the rows).
  ExpectUnchanged(kPipeline, WithData(R"(
graph @main(%x: f32[2,3,4]) -> (f32[2,3,5], f32[1,4]) {
  %w = constant f32[5,4] random
  %rows = reshape(%x) {newshape=[6,4]}
  %d = dense(%rows, %w)
  %y = reshape(%d) {newshape=[2,3,5]}
  %e = sum(%rows) {axes=[0], keepdims=1}
  %out = tuple(%y, %e)
  return %out
})"));
  // A value inside the region also returned: its regrouped shape is seen elsewhere.
  ExpectUnchanged(kPipeline, WithData(R"(
graph @main(%x: f32[2,3,4]) -> (f32[2,3,5], f32[6,5]) {
  %w = constant f32[5,4] random
  %rows = reshape(%x) {newshape=[6,4]}
  %d = dense(%rows, %w)
  %y = reshape(%d) {newshape=[2,3,5]}
  %out = tuple(%y, %d)
  return %out
})"));
  // An operand that differs by row: the op is not row-wise.
  ExpectUnchanged(kPipeline, WithData(R"(
graph @main(%x: f32[2,3,4], %r: f32[6,1]) -> f32[2,3,4] {
  %rows = reshape(%x) {newshape=[6,4]}
  %a = add(%rows, %r)
  %y = reshape(%a) {newshape=[2,3,4]}
  return %y
})"));
  // A reduction over the rows' axis, and an op with an axis (softmax) in between.
  ExpectUnchanged(kPipeline, WithData(R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,4] {
  %rows = reshape(%x) {newshape=[6,4]}
  %s = softmax(%rows) {axis=0}
  %y = reshape(%s) {newshape=[2,3,4]}
  return %y
})"));
  // The second reshape groups the rows otherwise ([3,2] instead of [2,3]).
  ExpectUnchanged(kPipeline, WithData(R"(
graph @main(%x: f32[2,3,4]) -> f32[3,2,5] {
  %w = constant f32[5,4] random
  %rows = reshape(%x) {newshape=[6,4]}
  %d = dense(%rows, %w)
  %y = reshape(%d) {newshape=[3,2,5]}
  return %y
})"));
  // The first reshape splits the row itself ([2,3,4] -> [12,2]): a dense over pairs of the
  // row is not a dense over the row.
  ExpectUnchanged(kPipeline, WithData(R"(
graph @main(%x: f32[2,3,4]) -> f32[2,3,10] {
  %w = constant f32[5,2] random
  %rows = reshape(%x) {newshape=[12,2]}
  %d = dense(%rows, %w)
  %y = reshape(%d) {newshape=[2,3,10]}
  return %y
})"));
  // The dense reads the regrouped value as its weight, not as its rows.
  ExpectUnchanged(kPipeline, WithData(R"(
graph @main(%x: f32[2,3,4], %a: f32[5,4]) -> f32[5,2,3] {
  %rows = reshape(%x) {newshape=[6,4]}
  %d = dense(%a, %rows)
  %y = reshape(%d) {newshape=[5,2,3]}
  return %y
})"));
}

}  // namespace
}  // namespace tandem::passes
