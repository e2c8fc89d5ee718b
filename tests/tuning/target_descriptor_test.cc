// TargetDescriptor and NowUtc: what tuning records are keyed and stamped with.
#include <gtest/gtest.h>
#include <llvm-16/llvm/Config/llvm-config.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "ir/target.h"
#include "tuning/database.h"

namespace tandem::tuning {
namespace {

// The value of "|key=" in a descriptor, up to the next '|'.
std::string Field(const std::string& descriptor, const std::string& key) {
  size_t start = descriptor.find("|" + key + "=");
  if (start == std::string::npos) return "<missing>";
  start += key.size() + 2;
  return descriptor.substr(start, descriptor.find('|', start) - start);
}

TEST(TargetDescriptorTest, NamesTheVersionsAndTheSchema) {
  std::string descriptor = TargetDescriptor(ir::ParseTarget("llvm -threads=2"));
  EXPECT_EQ(descriptor.rfind("llvm -threads=2|", 0), 0u) << descriptor;
  EXPECT_EQ(Field(descriptor, "llvm"), LLVM_VERSION_STRING);
  const dnnl_version_t* onednn = dnnl_version();
  EXPECT_EQ(Field(descriptor, "onednn"), std::to_string(onednn->major) + "." +
                                             std::to_string(onednn->minor) + "." +
                                             std::to_string(onednn->patch));
  EXPECT_EQ(Field(descriptor, "schema"), "1");
  EXPECT_NE(descriptor.find("schema=1"), std::string::npos);
}

TEST(TargetDescriptorTest, ResolvesTheHostCpu) {
  std::string descriptor = TargetDescriptor(ir::Target{});
  std::string cpu = Field(descriptor, "cpu");
  EXPECT_NE(cpu, "host");
  EXPECT_FALSE(cpu.empty());
  std::string features = Field(descriptor, "features");
  ASSERT_FALSE(features.empty()) << descriptor;
  std::vector<std::string> list;
  std::stringstream in(features);
  for (std::string feature; std::getline(in, feature, ',');) list.push_back(feature);
  EXPECT_TRUE(std::is_sorted(list.begin(), list.end())) << features;
  for (const std::string& feature : list) EXPECT_EQ(feature[0], '+') << features;
#if defined(__x86_64__)
  EXPECT_NE(std::find(list.begin(), list.end(), "+sse2"), list.end()) << features;
#endif
}

TEST(TargetDescriptorTest, ExplicitCpuIsKeptAndDifferentTargetsDiffer) {
  std::string explicit_cpu =
      TargetDescriptor(ir::ParseTarget("llvm -cpu=skylake-avx512 -features=+avx512f"));
  EXPECT_EQ(Field(explicit_cpu, "cpu"), "skylake-avx512");
  EXPECT_EQ(Field(explicit_cpu, "features"), "+avx512f");
  std::string two = TargetDescriptor(ir::ParseTarget("llvm -threads=2"));
  EXPECT_EQ(two, TargetDescriptor(ir::ParseTarget("llvm -threads=2")));
  EXPECT_NE(two, TargetDescriptor(ir::ParseTarget("llvm -threads=4")));
  EXPECT_NE(two, TargetDescriptor(ir::ParseTarget("llvm")));
}

TEST(NowUtcTest, IsIso8601) {
  EXPECT_TRUE(std::regex_match(NowUtc(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << NowUtc();
}

}  // namespace
}  // namespace tandem::tuning
