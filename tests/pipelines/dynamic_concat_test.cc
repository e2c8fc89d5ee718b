// Concatenations along a dynamic axis whose later parts start at a run-time offset
// (kernels/dynamic_padding.h): a dynamic part before a static one, two dynamic parts, three
// parts, along a middle and along the innermost axis, fused with elementwise ops; and one
// decoding step of attention over a cache of n keys and values that appends the step's key and
// value (a KV cache). Each is built once for every n in its range and matched with the
// interpreter on the graph made at several sizes, with default schedules and with schedules
// sampled from the design space.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "tests/pipelines/dynamic_graphs.h"

namespace tandem {
namespace {

ir::ValueId RandomConstant(ir::GraphBuilder& b, ir::Shape shape, uint64_t seed) {
  return b.Constant(
      ir::Tensor::Random(ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""}, seed));
}

ir::ValueId Concat(ir::GraphBuilder& b, std::vector<ir::ValueId> parts, int64_t axis) {
  return b.Call("concat", std::move(parts), ir::Attrs{{"axis", axis}});
}

// x [n, 4], y [3, n, 5] and z [2, n]: x then a static part (n + 2 rows), tanh(x) then x (2n),
// x, a static part, relu(x) (2n + 2); y then a static part along the middle axis, exp of it
// (n + 2); z then a static part along the innermost axis (n + 3), where vector lanes cross from
// one part to the next.
ir::IRModule Concatenations(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{n, 4}, ir::DataType::kFloat32, ""});
  ir::ValueId y = b.Input("y", ir::TensorType{{3, n, 5}, ir::DataType::kFloat32, ""});
  ir::ValueId z = b.Input("z", ir::TensorType{{2, n}, ir::DataType::kFloat32, ""});
  ir::ValueId suffix = RandomConstant(b, {2, 4}, 7);
  ir::ValueId then_static = Concat(b, {x, suffix}, 0);
  ir::ValueId two_dynamic = Concat(b, {b.Call("tanh", {x}), x}, 0);
  ir::ValueId three = Concat(b, {x, suffix, b.Call("relu", {x})}, 0);
  ir::ValueId middle = b.Call("exp", {Concat(b, {y, RandomConstant(b, {3, 2, 5}, 8)}, 1)});
  ir::ValueId inner = Concat(b, {z, RandomConstant(b, {2, 3}, 9)}, -1);
  ir::IRModule module;
  module.Add(b.Finish(b.Tuple({then_static, two_dynamic, three, middle, inner})));
  return module;
}

// One decoding step over a cache of n positions: the step's x [1, 16] projected to a query, a
// key and a value; the key and value appended to the cache (n + 1 rows, returned as the new
// cache); the query attends to all n + 1 keys.
ir::IRModule CachedAttentionStep(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 16}, ir::DataType::kFloat32, ""});
  ir::ValueId past_keys = b.Input("past_keys", ir::TensorType{{n, 16}, ir::DataType::kFloat32, ""});
  ir::ValueId past_values =
      b.Input("past_values", ir::TensorType{{n, 16}, ir::DataType::kFloat32, ""});
  auto project = [&](uint64_t seed) {
    return b.Call("matmul",
                  {x, b.Constant(ir::Tensor::Random(
                          ir::TensorType{{16, 16}, ir::DataType::kFloat32, ""}, seed, -0.3, 0.3))});
  };
  ir::ValueId keys = Concat(b, {past_keys, project(2)}, 0);
  ir::ValueId values = Concat(b, {past_values, project(3)}, 0);
  ir::ValueId scores = b.Call(
      "matmul",
      {project(1), b.Call("transpose", {keys}, ir::Attrs{{"axes", std::vector<int64_t>{1, 0}}})});
  ir::ValueId probabilities = b.Call("softmax", {scores}, ir::Attrs{{"axis", int64_t{-1}}});
  ir::IRModule module;
  module.Add(b.Finish(b.Tuple({b.Call("matmul", {probabilities, values}), keys, values})));
  return module;
}

TEST(DynamicConcat, LaterPartsStartWhereTheEarlierOnesEnd) {
  testing::ExpectEverySizeMatches(Concatenations, 1);
}

TEST(DynamicConcat, AttentionAppendingToACacheMatchesTheInterpreter) {
  testing::ExpectEverySizeMatches(CachedAttentionStep, 1);
}

TEST(DynamicConcat, SampledSchedulesMatchTheInterpreter) {
  for (uint64_t seed : {1, 2, 3}) {
    for (const auto& [name, make] : std::vector<std::pair<std::string, testing::MakeGraph>>{
             {"concatenations", Concatenations}, {"cached attention", CachedAttentionStep}}) {
      SCOPED_TRACE(fmt::format("seed {}, {}", seed, name));
      testing::SampledKernels counts;
      std::unique_ptr<backends::DynamicExecutable> dynamic =
          testing::BuildGraph(make, 1, 48, testing::HeuristicGraphPasses(),
                              testing::SampledScheduleOptions(seed, counts));
      EXPECT_GT(counts.sampled, 1);
      for (int64_t n : {48, 1, 2, 17, 40}) {
        testing::ExpectMatchesAt(*dynamic, make, n, static_cast<uint64_t>(n) + seed, 1e-4);
      }
    }
  }
}

}  // namespace
}  // namespace tandem
