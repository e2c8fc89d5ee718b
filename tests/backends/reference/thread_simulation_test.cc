// The kernel interpreter's thread-block simulation: threads of one launch that share an element
// (one writes it, another reads or writes it) are a race; the same accesses in two launches are
// ordered and fine. Sibling loops over one thread block's threads are ordered for its "shared"
// buffers (the code generator puts barriers between them); "local" buffers are per thread.
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

// C[t] = B[(t + 1) % 4] where B[t] = A[t], B in a thread block's shared memory: the store and
// the load in two sibling loops over the block's threads (a barrier between them on the GPU),
// or in one.
ir::KernelFunction ShiftThroughSharedMemory(bool two_steps) {
  ir::Buffer a = ir::MakeBuffer("A", ir::DataType::kFloat32, {4});
  ir::Buffer b = ir::MakeBuffer("B", ir::DataType::kFloat32, {4}, "shared");
  ir::Buffer c = ir::MakeBuffer("C", ir::DataType::kFloat32, {4});
  ir::Var block = ir::MakeVar("block");
  ir::Var t = ir::MakeVar("t");
  ir::Var u = ir::MakeVar("u");
  ir::Stmt produce = ir::MakeStore(b, {t}, ir::Load(a, {t}));
  auto consume = [&](const ir::Var& v) {
    return ir::MakeStore(c, {v}, ir::Load(b, {ir::FloorMod(v + 1, 4)}));
  };
  ir::Stmt threads =
      two_steps ? ir::MakeSeq({ir::MakeFor(t, 4, ir::ForKind::kThreadIdxX, produce),
                               ir::MakeFor(u, 4, ir::ForKind::kThreadIdxX, consume(u))})
                : ir::MakeFor(t, 4, ir::ForKind::kThreadIdxX, ir::MakeSeq({produce, consume(t)}));
  auto root = std::make_shared<ir::BlockNode>();
  root->name = "root";
  root->alloc_buffers = {b};
  root->body = ir::MakeFor(block, 1, ir::ForKind::kBlockIdxX, threads);
  ir::KernelFunction kernel;
  kernel.name = two_steps ? "two_steps" : "one_step";
  kernel.params = {a, c};
  kernel.num_outputs = 1;
  kernel.body = ir::MakeBlockRealize({}, ir::IntImm(1), root);
  return kernel;
}

TEST(ThreadSimulation, SiblingThreadLoopsShareSharedMemoryInOrder) {
  ir::Tensor input = ir::Tensor::FromFloats({4}, {1, 2, 3, 4});
  std::vector<ir::Tensor> out = RunKernelReference(ShiftThroughSharedMemory(true), {input}, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].GetDouble(0), 2);
  EXPECT_EQ(out[0].GetDouble(3), 1);
  try {
    RunKernelReference(ShiftThroughSharedMemory(false), {input}, true);
    FAIL() << "the race inside one loop over the threads was not reported";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("race: thread ("), std::string::npos) << e.what();
  }
}

TEST(ThreadSimulation, ThreadsSharingALocalElementRace) {
  // acc[0] += A[t] by every thread: on the GPU each thread has its own acc.
  ir::Buffer a = ir::MakeBuffer("A", ir::DataType::kFloat32, {4});
  ir::Buffer acc = ir::MakeBuffer("acc", ir::DataType::kFloat32, {1}, "local");
  ir::Buffer c = ir::MakeBuffer("C", ir::DataType::kFloat32, {4});
  ir::Var t = ir::MakeVar("t");
  ir::Stmt body = ir::MakeFor(
      t, 4, ir::ForKind::kThreadIdxX,
      ir::MakeSeq(
          {ir::MakeStore(acc, {ir::IntImm(0)}, ir::Load(acc, {ir::IntImm(0)}) + ir::Load(a, {t})),
           ir::MakeStore(c, {t}, ir::Load(acc, {ir::IntImm(0)}))}));
  auto root = std::make_shared<ir::BlockNode>();
  root->name = "root";
  root->alloc_buffers = {acc};
  root->body = body;
  ir::KernelFunction kernel;
  kernel.name = "shared_local";
  kernel.params = {a, c};
  kernel.num_outputs = 1;
  kernel.body = ir::MakeBlockRealize({}, ir::IntImm(1), root);
  ir::Tensor input = ir::Tensor::FromFloats({4}, {1, 2, 3, 4});
  try {
    RunKernelReference(kernel, {input}, true);
    FAIL() << "threads sharing a local element were not reported";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("acc["), std::string::npos) << e.what();
  }
}

// Two thread blocks of 4 threads over A[8]: the block's own code sets local s[0] = A[4b], then
// C[4b + t] = A[4b + t] + s[0] by each thread. `thread_writes`: each thread then also writes s[0];
// `block_reads_thread_value`: a one-thread loop writes s[0] and the block's code reads it.
ir::KernelFunction BlockWideLocal(bool thread_writes, bool block_reads_thread_value) {
  ir::Buffer a = ir::MakeBuffer("A", ir::DataType::kFloat32, {8});
  ir::Buffer local = ir::MakeBuffer("s", ir::DataType::kFloat32, {1}, "local");
  ir::Buffer c = ir::MakeBuffer("C", ir::DataType::kFloat32, {8});
  ir::Var b = ir::MakeVar("b"), t = ir::MakeVar("t"), u = ir::MakeVar("u");
  ir::Expr zero = ir::IntImm(0);
  std::vector<ir::Stmt> per_thread = {
      ir::MakeStore(c, {b * 4 + t}, ir::Load(a, {b * 4 + t}) + ir::Load(local, {zero}))};
  if (thread_writes) per_thread.push_back(ir::MakeStore(local, {zero}, ir::Load(a, {t})));
  std::vector<ir::Stmt> block_code = {ir::MakeStore(local, {zero}, ir::Load(a, {b * 4}))};
  if (block_reads_thread_value) {
    block_code.push_back(ir::MakeFor(u, 1, ir::ForKind::kThreadIdxX,
                                     ir::MakeStore(local, {zero}, ir::Load(a, {b * 4 + u}))));
    block_code.push_back(ir::MakeStore(c, {b * 4}, ir::Load(local, {zero})));
  } else {
    block_code.push_back(ir::MakeFor(t, 4, ir::ForKind::kThreadIdxX, ir::MakeSeq(per_thread)));
  }
  auto root = std::make_shared<ir::BlockNode>();
  root->name = "root";
  root->alloc_buffers = {local};
  root->body = ir::MakeFor(b, 2, ir::ForKind::kBlockIdxX, ir::MakeSeq(block_code));
  ir::KernelFunction kernel;
  kernel.name = "block_wide_local";
  kernel.params = {a, c};
  kernel.num_outputs = 1;
  kernel.body = ir::MakeBlockRealize({}, ir::IntImm(1), root);
  return kernel;
}

TEST(ThreadSimulation, ABlocksOwnCodeFillsEveryThreadsLocalCopy) {
  ir::Tensor input = ir::Tensor::FromFloats({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<ir::Tensor> out = RunKernelReference(BlockWideLocal(false, false), {input}, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].GetDouble(1), 2 + 1);
  EXPECT_EQ(out[0].GetDouble(6), 7 + 5);
  for (bool thread_writes : {true, false}) {
    try {
      RunKernelReference(BlockWideLocal(thread_writes, !thread_writes), {input}, true);
      FAIL() << "diverging local copies were not reported";
    } catch (const ir::Error& e) {
      EXPECT_NE(std::string(e.what()).find("copies"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tandem::backends
