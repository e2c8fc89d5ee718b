// The kernel interpreter's thread-block simulation: threads of one launch that share an element
// (one writes it, another reads or writes it) are a race; the same accesses in two launches are
// ordered and fine.
#include <gtest/gtest.h>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"

namespace tandem::backends {
namespace {

// C[t] = B[(t + 1) % 4] where B[t] = A[t], with the two stores in one launch or in two.
ir::KernelFunction ShiftThroughScratch(bool two_launches) {
  ir::Buffer a = ir::MakeBuffer("A", ir::DataType::kFloat32, {4});
  ir::Buffer b = ir::MakeBuffer("B", ir::DataType::kFloat32, {4});
  ir::Buffer c = ir::MakeBuffer("C", ir::DataType::kFloat32, {4});
  ir::Var t = ir::MakeVar("t");
  ir::Var u = ir::MakeVar("u");
  ir::Stmt produce = ir::MakeStore(b, {t}, ir::Load(a, {t}));
  auto consume = [&](const ir::Var& v) {
    return ir::MakeStore(c, {v}, ir::Load(b, {ir::FloorMod(v + 1, 4)}));
  };
  ir::Stmt body =
      two_launches
          ? ir::MakeSeq({ir::MakeFor(t, 4, ir::ForKind::kThreadIdxX, produce),
                         ir::MakeFor(u, 4, ir::ForKind::kThreadIdxX, consume(u))})
          : ir::MakeFor(t, 4, ir::ForKind::kThreadIdxX, ir::MakeSeq({produce, consume(t)}));
  auto root = std::make_shared<ir::BlockNode>();
  root->name = "root";
  root->alloc_buffers = {b};
  root->body = body;
  ir::KernelFunction kernel;
  kernel.name = two_launches ? "two_launches" : "one_launch";
  kernel.params = {a, c};
  kernel.num_outputs = 1;
  kernel.body = ir::MakeBlockRealize({}, ir::IntImm(1), root);
  return kernel;
}

TEST(ThreadSimulation, ThreadsOfOneLaunchSharingAnElementRace) {
  ir::Tensor input = ir::Tensor::FromFloats({4}, {1, 2, 3, 4});
  try {
    RunKernelReference(ShiftThroughScratch(false), {input}, true);
    FAIL() << "the race was not reported";
  } catch (const ir::Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("race: thread (threadIdx.x="), std::string::npos) << message;
    EXPECT_NE(message.find(" B["), std::string::npos) << message;
    EXPECT_NE(message.find("another thread of the same launch"), std::string::npos) << message;
  }
}

TEST(ThreadSimulation, LaunchesAreOrdered) {
  ir::Tensor input = ir::Tensor::FromFloats({4}, {1, 2, 3, 4});
  std::vector<ir::Tensor> out = RunKernelReference(ShiftThroughScratch(true), {input}, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].GetDouble(0), 2);
  EXPECT_EQ(out[0].GetDouble(3), 1);
}

}  // namespace
}  // namespace tandem::backends
