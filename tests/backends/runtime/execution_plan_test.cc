// PlanExecution: a kernel result takes the memory of an input the kernel may compute it in place
// of (ir::InPlacePairs) only when no later call reads that input; executables so planned match
// the reference interpreter.
#include "backends/runtime/execution_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "ir/parser.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem::backends {
namespace {

using testing::F32;

// Two residual blocks: relu(conv(relu(conv(x))) + skip), the second's skip the first's output.
ir::IRModule ResidualBlocks() {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", F32({1, 8, 6, 6}));
  ir::Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  ir::ValueId skip = x;
  for (int block = 0; block < 2; ++block) {
    ir::ValueId w1 = b.Constant(ir::Tensor::Random(F32({8, 8, 3, 3}), 10 + block, -0.2, 0.2));
    ir::ValueId w2 = b.Constant(ir::Tensor::Random(F32({8, 8, 3, 3}), 20 + block, -0.2, 0.2));
    ir::ValueId r = b.Call("relu", {b.Call("conv2d", {skip, w1}, pad)});
    ir::ValueId c = b.Call("conv2d", {r, w2}, pad);
    skip = b.Call("relu", {b.Call("add", {c, skip})});
  }
  ir::IRModule m;
  m.Add(b.Finish(skip));
  return m;
}

// The slot of argument `index` of the first call of `op`, at or after call `from`.
struct CallArgs {
  size_t call;
  std::vector<int> args;
};
CallArgs FindCall(const ir::GraphFunction& fn, const ExecutionPlan& plan, const std::string& op,
                  size_t from = 0) {
  for (size_t c = from; c < plan.calls.size(); ++c) {
    if (fn.node(plan.calls[c].node).op == op) return {c, plan.calls[c].args};
  }
  ADD_FAILURE() << "no call of " << op;
  return {plan.calls.size(), {}};
}

TEST(ExecutionPlan, AResultTakesTheMemoryOfAnInputNoLaterCallReads) {
  ir::IRModule legalized = LegalizeForBuild(ResidualBlocks());
  const ir::GraphFunction& fn = legalized.Get("main");
  ExecutionPlan separate = PlanExecution(fn, 64);
  ExecutionPlan shared = PlanExecution(fn, 64, &legalized);

  // First block: add(conv, x) reads the function's input, which is never overwritten; its
  // result takes the conv's slot (the conv's result is read by nothing else).
  CallArgs add = FindCall(fn, shared, "add");
  ASSERT_EQ(add.args.size(), 3u);
  EXPECT_EQ(shared.slots[static_cast<size_t>(add.args[1])].kind, ExecutionPlan::SlotKind::kInput);
  EXPECT_EQ(add.args[2], add.args[0]);
  // The relu after it computes in place too.
  CallArgs relu = FindCall(fn, shared, "relu", add.call + 1);
  ASSERT_EQ(relu.args.size(), 2u);
  EXPECT_EQ(relu.args[1], relu.args[0]);

  // Second block: the skip (the first block's output) is read by the next conv and then by
  // the add, so the conv's result cannot take it; at the add it is read for the last time.
  CallArgs conv = FindCall(fn, shared, "conv2d", relu.call + 1);
  EXPECT_NE(conv.args.back(), relu.args[1]);
  CallArgs second_add = FindCall(fn, shared, "add", relu.call + 1);
  EXPECT_EQ(second_add.args[1], relu.args[1]);
  EXPECT_EQ(second_add.args[2], second_add.args[0]);  // the first same-shaped input

  // The last relu writes the function's output: it keeps its own slot.
  CallArgs last = FindCall(fn, shared, "relu", second_add.call + 1);
  EXPECT_EQ(shared.slots[static_cast<size_t>(last.args[1])].kind, ExecutionPlan::SlotKind::kOutput);
  EXPECT_NE(last.args[1], last.args[0]);

  // Without the kernels nothing is shared; with them the arena needs less.
  for (const ExecutionPlan::Call& call : separate.calls) {
    for (size_t i = 0; i + 1 < call.args.size(); ++i) EXPECT_NE(call.args[i], call.args.back());
  }
  EXPECT_LT(shared.unplanned_bytes, separate.unplanned_bytes);
  EXPECT_LE(shared.arena_bytes, separate.arena_bytes);
}

TEST(ExecutionPlan, ExecutablesComputingInPlaceMatchTheReference) {
  ir::IRModule m = ResidualBlocks();
  auto exe = Build(m);
  for (uint64_t seed : {1, 2}) {
    auto inputs = RandomInputs(m.Get("main"), seed);
    auto want = RunReference(m, inputs);
    auto got = exe->Run(inputs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LT(ir::RelativeError(got[0], want[0]), 1e-5) << "seed " << seed;
    // The input is read by both blocks and must come out untouched.
    EXPECT_EQ(ir::RelativeError(inputs[0], RandomInputs(m.Get("main"), seed)[0]), 0);
  }
}

}  // namespace
}  // namespace tandem::backends
