// TargetDescriptor, RecordKey and NowUtc: what tuning records are keyed and stamped with.
#include <gtest/gtest.h>
#include <llvm-16/llvm/Config/llvm-config.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "backends/external/external_backend.h"
#include "backends/llvm/codegen.h"
#include "backends/target/resolved_target.h"
#include "ir/error.h"
#include "ir/target.h"
#include "tuning/database/database.h"

namespace tandem::tuning {
namespace {

TEST(TargetDescriptorTest, NamesTheVersionsAndTheSchema) {
  std::string descriptor = TargetDescriptor(ir::ParseTarget("llvm -cpu=x86-64-v3 -threads=2"));
  EXPECT_EQ(descriptor.rfind("llvm -cpu=x86-64-v3 -threads=2|", 0), 0u) << descriptor;
  EXPECT_EQ(DescriptorField(descriptor, "vector-bits"), "256");
  EXPECT_EQ(DescriptorField(descriptor, "llvm"), LLVM_VERSION_STRING);
  const dnnl_version_t* onednn = dnnl_version();
  EXPECT_EQ(DescriptorField(descriptor, "onednn"), std::to_string(onednn->major) + "." +
                                                       std::to_string(onednn->minor) + "." +
                                                       std::to_string(onednn->patch));
  // Every external backend's library version, as the backend reports it.
  const backends::ExternalBackendRegistry& registry = backends::ExternalBackendRegistry::Global();
  for (const std::string& name : registry.Names()) {
    std::string version = registry.Get(name).version();
    EXPECT_FALSE(version.empty()) << name;
    EXPECT_EQ(DescriptorField(descriptor, name), version) << name;
  }
  EXPECT_EQ(DescriptorField(descriptor, "codegen"), std::to_string(backends::kCodegenVersion));
  EXPECT_EQ(DescriptorField(descriptor, "schema"), "1");
  EXPECT_FALSE(IsStaleDescriptor(descriptor));
}

// The descriptor names a CPU, never "host", and a thread count: it means the same on the machine
// that reads it as on the one that wrote it.
TEST(TargetDescriptorTest, ResolvesTheHostCpuAndTheThreads) {
  std::string descriptor = TargetDescriptor(ir::Target{});
  ir::Target target = ir::ParseTarget(descriptor.substr(0, descriptor.find('|')));
  EXPECT_NE(target.cpu, "host");
  EXPECT_FALSE(target.cpu.empty());
  EXPECT_GT(target.num_threads, 0);
  EXPECT_EQ(target.cpu, backends::GetHostCpu().name);
  // The resolved target is itself a valid target, resolving to itself.
  EXPECT_EQ(TargetDescriptor(target), descriptor);
  if (!backends::GetHostCpu().configured) {
    std::vector<std::string> list;
    std::stringstream in(target.features);
    for (std::string feature; std::getline(in, feature, ',');) list.push_back(feature);
    EXPECT_TRUE(std::is_sorted(list.begin(), list.end())) << target.features;
#if defined(__x86_64__)
    EXPECT_NE(std::find(list.begin(), list.end(), "+sse2"), list.end()) << target.features;
#endif
  }
}

TEST(TargetDescriptorTest, ExplicitCpuIsKeptAndDifferentTargetsDiffer) {
  std::string explicit_cpu =
      TargetDescriptor(ir::ParseTarget("llvm -cpu=skylake-avx512 -features=+avx512f -threads=2"));
  EXPECT_EQ(explicit_cpu.rfind("llvm -cpu=skylake-avx512 -features=+avx512f -threads=2|", 0), 0u)
      << explicit_cpu;
  EXPECT_EQ(DescriptorField(explicit_cpu, "vector-bits"), "512");
  std::string two = TargetDescriptor(ir::ParseTarget("llvm -threads=2"));
  EXPECT_EQ(two, TargetDescriptor(ir::ParseTarget("llvm -threads=2")));
  EXPECT_NE(two, TargetDescriptor(ir::ParseTarget("llvm -threads=4")));
}

// threads=0 is resolved to the machine's thread count: a record made with every thread of a
// 2-thread machine is not served to a run with every thread of a 16-thread one.
TEST(TargetDescriptorTest, ZeroThreadsResolveToTheHardwareThreads) {
  std::string every = TargetDescriptor(ir::ParseTarget("llvm -cpu=x86-64-v3"));
  ir::Target resolved = ir::ParseTarget(every.substr(0, every.find('|')));
  EXPECT_EQ(resolved.num_threads,
            static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(TargetDescriptorTest, RecordKeysDifferByMeasurementOptions) {
  ir::Target target = ir::ParseTarget("llvm -cpu=x86-64-v3 -threads=2");
  MeasureOptions plain, flushed, longer;
  flushed.flush_cache = true;
  longer.repeats = plain.repeats + 2;
  EXPECT_EQ(RecordKey(target, plain).rfind(TargetDescriptor(target) + "|measure=", 0), 0u);
  EXPECT_NE(RecordKey(target, plain), RecordKey(target, flushed));
  EXPECT_NE(RecordKey(target, plain), RecordKey(target, longer));
  EXPECT_EQ(RecordKey(target, plain), RecordKey(target, MeasureOptions{}));
}

TEST(TargetDescriptorTest, AnotherCodegenVersionIsStale) {
  std::string descriptor = TargetDescriptor(ir::ParseTarget("llvm -cpu=x86-64-v3 -threads=2"));
  std::string older =
      std::regex_replace(descriptor, std::regex("\\|codegen=[0-9]+"),
                         "|codegen=" + std::to_string(backends::kCodegenVersion - 1));
  ASSERT_NE(older, descriptor);
  EXPECT_TRUE(IsStaleDescriptor(older));
  EXPECT_TRUE(IsStaleDescriptor("llvm|cpu=znver3|llvm=16.0.6|schema=1"));  // before versions
}

TEST(TargetDescriptorTest, OnlyCpuTargetsHaveRecords) {
  ir::Target cuda = ir::ParseTarget("cuda -arch=sm_90");
  try {
    TargetDescriptor(cuda);
    FAIL() << "a cuda target was accepted";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tuning records for the cuda target"),
              std::string::npos)
        << e.what();
  }
}

TEST(NowUtcTest, IsIso8601) {
  EXPECT_TRUE(std::regex_match(NowUtc(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << NowUtc();
}

}  // namespace
}  // namespace tandem::tuning
