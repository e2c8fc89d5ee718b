// AllocateAligned: every block is zero-filled and cache-line aligned, blocks of a huge page or
// more are aligned to one (whether the system backs them with huge pages is its choice), and a
// negative size is an Error naming what was being allocated.
#include "ir/aligned_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "ir/error.h"
#include "ir/tensor.h"

namespace tandem::ir {
namespace {

uintptr_t Address(const std::shared_ptr<uint8_t>& block) {
  return reinterpret_cast<uintptr_t>(block.get());
}

TEST(AlignedMemory, SmallBlocksAreCacheLineAlignedAndZero) {
  for (int64_t bytes : {0, 1, 63, 64, 65, 4096, 100000}) {
    std::shared_ptr<uint8_t> block = AllocateAligned(bytes, "a test block");
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(Address(block) % kDataAlignment, 0u) << bytes;
    EXPECT_TRUE(std::all_of(block.get(), block.get() + bytes, [](uint8_t b) { return b == 0; }));
  }
}

TEST(AlignedMemory, LargeBlocksAreHugePageAlignedAndZero) {
  for (int64_t bytes : {kHugePageBytes, kHugePageBytes + 64, 3 * kHugePageBytes - 1}) {
    std::shared_ptr<uint8_t> block = AllocateAligned(bytes, "a test block");
    EXPECT_EQ(Address(block) % kHugePageBytes, 0u) << bytes;
    EXPECT_TRUE(std::all_of(block.get(), block.get() + bytes, [](uint8_t b) { return b == 0; }));
    block.get()[bytes - 1] = 7;  // the whole size is writable
  }
  // Just under a huge page: only cache-line alignment is promised.
  std::shared_ptr<uint8_t> block = AllocateAligned(kHugePageBytes - 64, "a test block");
  EXPECT_EQ(Address(block) % kDataAlignment, 0u);
}

TEST(AlignedMemory, NegativeSizeNamesWhatWasAllocated) {
  try {
    AllocateAligned(-5, "the arena");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("the arena"), std::string::npos) << e.message();
  }
}

TEST(AlignedMemory, TensorsUseIt) {
  Tensor large(TensorType{{1, 1 << 20}, DataType::kFloat32, ""});  // 4 MiB
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.raw_data()) % kHugePageBytes, 0u);
  EXPECT_EQ(large.GetDouble(large.num_elements() - 1), 0.0);
}

}  // namespace
}  // namespace tandem::ir
