// Build + Executable: compiled graphs match the reference interpreter; memory is planned.
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "ir/error.h"

namespace tandem::backends {
namespace {

ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

ir::IRModule ConvChain() {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", F32({1, 8, 12, 12}));
  ir::ValueId w1 = b.Constant(ir::Tensor::Random(F32({16, 8, 3, 3}), 1, -0.2, 0.2), "w1");
  ir::ValueId w2 = b.Constant(ir::Tensor::Random(F32({8, 16, 3, 3}), 2, -0.2, 0.2), "w2");
  ir::ValueId bias = b.Constant(ir::Tensor::Random(F32({16, 1, 1}), 3), "bias");
  ir::Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  ir::ValueId c1 = b.Call("conv2d", {x, w1}, pad);
  ir::ValueId a1 = b.Call("add", {c1, bias});
  ir::ValueId r1 = b.Call("relu", {a1});
  ir::ValueId c2 = b.Call("conv2d", {r1, w2}, pad);
  ir::ValueId s = b.Call("add", {c2, x});
  ir::ValueId p = b.Call("global_avg_pool2d", {s});
  ir::ValueId f = b.Call("flatten", {p});
  ir::ValueId parts = b.Call(
      "split", {f}, ir::Attrs{{"axis", int64_t{1}}, {"sections", std::vector<int64_t>{3, 5}}});
  ir::ValueId first = b.TupleGetItem(parts, 0);
  ir::ValueId soft = b.Call("softmax", {first});
  ir::IRModule m;
  m.Add(b.Finish(std::vector<ir::ValueId>{soft, b.TupleGetItem(parts, 1), x}));
  return m;
}

TEST(Executable, MatchesReferenceAndPlansMemory) {
  ir::IRModule m = ConvChain();
  auto exe = Build(m);
  auto inputs = RandomInputs(m.Get("main"), 5);
  auto want = RunReference(m, inputs);
  auto got = exe->Run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LT(ir::RelativeError(got[i], want[i]), 1e-5) << "output " << i;
  }
  EXPECT_GT(exe->arena_bytes(), 0);
  EXPECT_LT(exe->arena_bytes(), exe->unplanned_bytes());  // buffers are reused
  // A second run with other inputs gives the right answer too (no state leaks between runs).
  auto inputs2 = RandomInputs(m.Get("main"), 6);
  auto want2 = RunReference(m, inputs2);
  auto got2 = exe->Run(inputs2);
  for (size_t i = 0; i < got2.size(); ++i) EXPECT_LT(ir::RelativeError(got2[i], want2[i]), 1e-5);
}

TEST(Executable, ProfilesKernels) {
  ir::IRModule m = ConvChain();
  auto exe = Build(m);
  exe->set_profiling(true);
  auto inputs = RandomInputs(m.Get("main"), 5);
  for (int i = 0; i < 3; ++i) exe->Run(inputs);
  auto profile = exe->Profile();
  ASSERT_FALSE(profile.empty());
  int64_t calls = 0;
  for (const KernelProfile& p : profile) calls += p.calls;
  EXPECT_EQ(calls, 3 * static_cast<int64_t>(exe->num_kernel_calls()));
  EXPECT_NE(exe->ProfileTable().find("conv2d"), std::string::npos);
}

TEST(Executable, RejectsBadInputs) {
  ir::IRModule m = ConvChain();
  auto exe = Build(m);
  EXPECT_THROW(exe->Run({}), ir::Error);
  EXPECT_THROW(exe->Run({ir::Tensor(F32({1, 8, 12, 11}))}), ir::Error);
}

}  // namespace
}  // namespace tandem::backends
