// The CUDA driver layer: without a device every entry point is an Error (never a crash) whose
// message says why; with one, buffers round-trip, hand-written PTX loads, launches, is validated
// and timed, and a kernel fault is an Error naming the kernel.
#include "backends/cuda/cuda_driver.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/external/external_backend.h"
#include "ir/error.h"

namespace tandem::backends::cuda {
namespace {

// Checked with `ptxas -arch=sm_80`. The comments exercise the entry parser.
constexpr const char* kPtx = R"(
.version 7.8
.target sm_80
.address_size 64

// out[i] = a[i] + b[i], i = ctaid.x * ntid.x + tid.x (no bounds check: the grid covers n exactly)
.visible .entry add_f32(
    .param .u64 a,
    .param .u64 b,
    .param .u64 out
)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<11>;
    .reg .f32 %f<4>;

    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    mul.wide.s32 %rd7, %r4, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
    ret;
}

/* stores 1.0f through its argument: given 0, an illegal address (.entry in a comment) */
.visible .entry store_one(
    .param .u64 p
)
{
    .reg .b64 %rd<2>;
    .reg .f32 %f<2>;

    ld.param.u64 %rd1, [p];
    mov.f32 %f1, 0f3F800000;
    st.global.f32 [%rd1], %f1;
    ret;
}
)";

#define TANDEM_REQUIRE_CUDA() \
  if (!CudaAvailable()) GTEST_SKIP() << CudaUnavailableReason()

LaunchDims Dims1d(int64_t grid, int64_t block) {
  LaunchDims dims;
  dims.grid[0] = grid;
  dims.block[0] = block;
  return dims;
}

// Runs on every machine: on one without a device (the build machine), the reason and the Errors.
TEST(CudaDriverTest, UnavailableIsAnErrorNotACrash) {
  const std::string reason = CudaUnavailableReason();
  if (CudaAvailable()) {
    EXPECT_EQ(reason, "");
    EXPECT_EQ(CudaStateOfThisProcess(), CudaState::kInitializedHere);
    EXPECT_NO_THROW(Device());
    return;
  }
  EXPECT_EQ(reason.rfind("no CUDA device: ", 0), 0u) << reason;
  try {
    DeviceBuffer buffer(16);
    FAIL() << "DeviceBuffer was allocated without a device";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.message(), reason);
  }
  EXPECT_THROW(Device(), ir::Error);
  EXPECT_THROW(CudaModule::Load(kPtx), ir::Error);
}

TEST(CudaDriverTest, DeviceInfo) {
  TANDEM_REQUIRE_CUDA();
  const DeviceInfo& info = Device();
  std::printf("%s (%s): %d SMs, %lld MiB, driver %d, %lld bytes shared/block (opt-in)\n",
              info.name.c_str(), info.arch().c_str(), info.multiprocessor_count,
              static_cast<long long>(info.total_memory_bytes >> 20), info.driver_version,
              static_cast<long long>(info.max_shared_memory_per_block));
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.compute_capability_major, 7);
  EXPECT_EQ(info.arch(), "sm_" + std::to_string(info.compute_capability_major) +
                             std::to_string(info.compute_capability_minor));
  EXPECT_GT(info.multiprocessor_count, 0);
  EXPECT_EQ(info.max_threads_per_block, 1024);
  EXPECT_GE(info.max_shared_memory_per_block, 48 * 1024);
  EXPECT_GT(info.max_registers_per_block, 0);
  EXPECT_GE(info.driver_version, 12000);
  EXPECT_GT(info.total_memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(CudaStateOfThisProcess(), CudaState::kInitializedHere);
}

TEST(CudaDriverTest, BufferRoundTrip) {
  TANDEM_REQUIRE_CUDA();
  std::vector<float> in(1000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.5f * static_cast<float>(i) - 7.0f;
  DeviceBuffer buffer(in.size() * sizeof(float));
  EXPECT_NE(buffer.pointer(), 0u);
  EXPECT_EQ(buffer.bytes(), in.size() * sizeof(float));
  buffer.CopyFromHost(in.data(), buffer.bytes());
  std::vector<float> out(in.size(), -1.0f);
  buffer.CopyToHost(out.data(), buffer.bytes());
  EXPECT_EQ(out, in);

  // Part of the buffer, at an offset.
  std::vector<float> part(10, 0.0f);
  buffer.CopyToHost(part.data(), 10 * sizeof(float), 100 * sizeof(float));
  EXPECT_EQ(part, std::vector<float>(in.begin() + 100, in.begin() + 110));
  const float value = 42.0f;
  buffer.CopyFromHost(&value, sizeof(float), 999 * sizeof(float));
  buffer.CopyToHost(out.data(), buffer.bytes());
  EXPECT_EQ(out[999], 42.0f);
  EXPECT_EQ(out[998], in[998]);

  buffer.Zero();
  buffer.CopyToHost(out.data(), buffer.bytes());
  EXPECT_EQ(out, std::vector<float>(in.size(), 0.0f));

  // Out of range: an Error, nothing copied.
  EXPECT_THROW(buffer.CopyFromHost(in.data(), buffer.bytes(), 4), ir::Error);
  EXPECT_THROW(buffer.CopyToHost(out.data(), 4, buffer.bytes() + 1), ir::Error);

  // Moves leave the source empty; a zero-byte buffer allocates nothing.
  const uint64_t pointer = buffer.pointer();
  DeviceBuffer moved(std::move(buffer));
  EXPECT_EQ(moved.pointer(), pointer);
  EXPECT_EQ(buffer.pointer(), 0u);  // NOLINT(bugprone-use-after-move)
  DeviceBuffer empty(0);
  EXPECT_EQ(empty.pointer(), 0u);
  empty = std::move(moved);
  EXPECT_EQ(empty.pointer(), pointer);
}

TEST(CudaDriverTest, LoadLaunchAndCheckResults) {
  TANDEM_REQUIRE_CUDA();
  std::unique_ptr<CudaModule> module = CudaModule::Load(kPtx);
  EXPECT_TRUE(module->HasKernel("add_f32"));
  EXPECT_TRUE(module->HasKernel("store_one"));
  EXPECT_FALSE(module->HasKernel("add"));
  EXPECT_EQ(module->KernelNames(), (std::vector<std::string>{"add_f32", "store_one"}));
  EXPECT_GT(module->Registers("add_f32"), 0);

  const int n = 4 * 256;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.25f * static_cast<float>(n - i);
  }
  DeviceBuffer da(n * sizeof(float)), db(n * sizeof(float)), dout(n * sizeof(float));
  da.CopyFromHost(a.data(), da.bytes());
  db.CopyFromHost(b.data(), db.bytes());
  dout.Zero();
  module->Launch("add_f32", Dims1d(4, 256), {da.pointer(), db.pointer(), dout.pointer()});
  module->Synchronize();
  std::vector<float> out(n);
  dout.CopyToHost(out.data(), dout.bytes());
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << "at " << i;
}

TEST(CudaDriverTest, LaunchErrors) {
  TANDEM_REQUIRE_CUDA();
  std::unique_ptr<CudaModule> module = CudaModule::Load(kPtx);
  DeviceBuffer buffer(1024 * sizeof(float));
  const std::vector<uint64_t> three = {buffer.pointer(), buffer.pointer(), buffer.pointer()};
  try {
    module->Launch("add", Dims1d(1, 32), three);
    FAIL() << "launched an unknown kernel";
  } catch (const ir::Error& e) {
    const std::string message = e.message();
    EXPECT_NE(message.find("'add'"), std::string::npos) << message;
    EXPECT_NE(message.find("add_f32, store_one"), std::string::npos) << message;
  }
  EXPECT_THROW(module->Registers("add"), ir::Error);

  EXPECT_THROW(module->Launch("add_f32", Dims1d(0, 32), three), ir::Error);
  EXPECT_THROW(module->Launch("add_f32", Dims1d(1, 0), three), ir::Error);
  EXPECT_THROW(module->Launch("add_f32", Dims1d(-1, 32), three), ir::Error);
  EXPECT_THROW(module->Launch("add_f32", Dims1d(1, 2048), three), ir::Error);
  LaunchDims too_many_threads = Dims1d(1, 32);
  too_many_threads.block[1] = 32;
  too_many_threads.block[2] = 2;  // 2048 threads
  try {
    module->Launch("add_f32", too_many_threads, three);
    FAIL() << "launched 2048 threads per block";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.message()).find("2048 threads per block"), std::string::npos)
        << e.message();
  }
  LaunchDims shared = Dims1d(1, 32);
  shared.dynamic_shared_bytes = -1;
  EXPECT_THROW(module->Launch("add_f32", shared, three), ir::Error);
  shared.dynamic_shared_bytes = Device().max_shared_memory_per_block + 1;
  EXPECT_THROW(module->Launch("add_f32", shared, three), ir::Error);
  EXPECT_THROW(module->Launch("add_f32", Dims1d(1, 32), {buffer.pointer()}), ir::Error);

  // Nothing reached the driver: the module still works, with opt-in dynamic shared memory too.
  shared.dynamic_shared_bytes = Device().max_shared_memory_per_block;
  module->Launch("add_f32", shared, three);
  module->Synchronize();
}

TEST(CudaDriverTest, BadPtxIsAnErrorWithTheJitLog) {
  TANDEM_REQUIRE_CUDA();
  try {
    CudaModule::Load(
        ".version 7.8\n.target sm_80\n.address_size 64\n"
        ".visible .entry broken()\n{\n  bogus.instruction %r1;\n  ret;\n}\n");
    FAIL() << "loaded invalid PTX";
  } catch (const ir::Error& e) {
    const std::string message = e.message();
    std::printf("%s\n", message.c_str());
    EXPECT_NE(message.find("cuModuleLoadDataEx"), std::string::npos) << message;
    EXPECT_NE(message.find("CUDA_ERROR_"), std::string::npos) << message;
    EXPECT_EQ(message.find("(no JIT log)"), std::string::npos) << message;
  }
}

TEST(CudaDriverTest, TimeMilliseconds) {
  TANDEM_REQUIRE_CUDA();
  std::unique_ptr<CudaModule> module = CudaModule::Load(kPtx);
  const int64_t n = int64_t{1} << 22;
  DeviceBuffer a(n * sizeof(float)), b(n * sizeof(float)), out(n * sizeof(float));
  a.Zero();
  b.Zero();
  const double milliseconds = module->TimeMilliseconds([&] {
    for (int i = 0; i < 10; ++i) {
      module->Launch("add_f32", Dims1d(n / 256, 256), {a.pointer(), b.pointer(), out.pointer()});
    }
  });
  std::printf("10 launches of add_f32 over %lld floats: %.3f ms\n", static_cast<long long>(n),
              milliseconds);
  EXPECT_GT(milliseconds, 0.0);
  EXPECT_LT(milliseconds, 10000.0);
}

// A kernel fault (here a store to address 0) is an Error on Synchronize naming the kernel. The
// fault leaves the CUDA context unusable for the rest of the process, so the fault happens in a
// fresh process: a death test in the "threadsafe" style re-executes this test program to run
// just this test (a plain fork would not do: CUDA does not work in a forked child).
TEST(CudaDriverDeathTest, KernelFaultIsAnErrorOnSynchronize) {
  TANDEM_REQUIRE_CUDA();
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        try {
          std::unique_ptr<CudaModule> module = CudaModule::Load(kPtx);
          module->Launch("store_one", Dims1d(1, 1), {0});
          module->Synchronize();
          std::fprintf(stderr, "no error\n");
        } catch (const ir::Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(0);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "kernel 'store_one'.*CUDA_ERROR_.*unusable");
  GTEST_FLAG_SET(death_test_style, style);
}

}  // namespace
}  // namespace tandem::backends::cuda
