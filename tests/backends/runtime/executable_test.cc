// Build + Executable: compiled graphs match the reference interpreter; memory is planned.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "ir/error.h"
#include "ir/parser.h"

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
  EXPECT_EQ(exe->ProfileTable().find("GFLOP/s"), std::string::npos);
  // With operation counts, the kernels they name get a rate: flops / mean seconds per call.
  const KernelProfile& first = profile.front();
  double mean = first.total_seconds / static_cast<double>(first.calls);
  std::string table = exe->ProfileTable({{first.kernel, 3e9 * mean}});
  EXPECT_NE(table.find("GFLOP/s"), std::string::npos);
  std::string row = table.substr(table.find("\n" + first.kernel + " ") + 1);
  row = row.substr(0, row.find('\n'));
  EXPECT_EQ(row.substr(row.size() - 3), "3.0") << row;
}

TEST(Executable, RejectsBadInputs) {
  ir::IRModule m = ConvChain();
  auto exe = Build(m);
  EXPECT_THROW(exe->Run({}), ir::Error);
  EXPECT_THROW(exe->Run({ir::Tensor(F32({1, 8, 12, 11}))}), ir::Error);
}

// A backend whose relu runs through tandem_parallel_for with a body that throws, as generated
// code would call it. Available only inside the test below (the registry is global).
class ThrowingLoopBackend : public ExternalBackend {
 public:
  static inline bool in_test = false;
  std::string name() const override { return "throwing_loop_test"; }
  bool Available(std::string*) const override { return in_test; }
  const std::vector<Pattern>& patterns() const override {
    static const std::vector<Pattern> none;
    return none;
  }
  std::unique_ptr<ExternalFunction> Compile(const ir::GraphFunction&) const override {
    struct Function : ExternalFunction {
      void Run(void* const*) override {
        tandem_parallel_for(
            16, [](int64_t, int64_t, void*) { throw std::runtime_error("the body failed"); },
            nullptr);
      }
      std::string Describe() const override { return "throws in a parallel loop"; }
    };
    return std::make_unique<Function>();
  }
};

TEST(Executable, RunRethrowsAnErrorOfAParallelLoop) {
  static bool registered = false;
  if (!registered) {
    ExternalBackendRegistry::Global().Register(std::make_shared<ThrowingLoopBackend>());
    registered = true;
  }
  ThrowingLoopBackend::in_test = true;
  ir::IRModule m = ir::ParseModule(R"(module {
graph @main(%x: f32[64]) -> f32[64] {
  %0 = relu(%x) : f32[64]
  %1 = call_extern @ext_0 relu(%0) : f32[64] @{backend="throwing_loop_test", pattern="relu"}
  return %1
}

graph @ext_0(%x: f32[64]) -> f32[64] attributes {extern_backend="throwing_loop_test", pattern="relu"} {
  %0 = relu(%x) : f32[64]
  return %0
}
})");
  auto exe = Build(m);
  ThrowingLoopBackend::in_test = false;
  auto inputs = RandomInputs(m.Get("main"), 1);
  for (int run = 0; run < 2; ++run) {  // nothing stays pending after the first failure
    try {
      exe->Run(inputs);
      ADD_FAILURE() << "Run did not throw";
    } catch (const ir::Error& e) {
      EXPECT_NE(std::string(e.what()).find("the body failed"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("ext_0"), std::string::npos) << e.what();
      EXPECT_EQ(e.where().op, "relu");
    }
  }
  EXPECT_FALSE(TakeParallelForError());
}

}  // namespace
}  // namespace tandem::backends
