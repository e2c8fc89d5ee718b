#include "ir/aligned_memory.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ir/error.h"

namespace tandem::ir {

// Steps:
//   1. the size rounded up to a cache line, the alignment chosen by the size;
//   2. a large block's whole huge pages advised as such before their first touch, so that the
//      zero fill faults them in as huge pages (the tail past the last one stays in small pages);
//   3. the block zero-filled.
std::shared_ptr<uint8_t> AllocateAligned(int64_t bytes, std::string_view what) {
  if (bytes < 0) throw Error(fmt::format("cannot allocate {} bytes for {}", bytes, what));
  int64_t size =
      (std::max<int64_t>(bytes, 1) + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  bool huge = size >= kHugePageBytes;
  void* p = nullptr;
  if (posix_memalign(&p, static_cast<size_t>(huge ? kHugePageBytes : kDataAlignment),
                     static_cast<size_t>(size)) != 0) {
    throw Error(fmt::format("out of memory allocating {} bytes for {}", bytes, what));
  }
  // Advice only: without transparent huge pages the block is ordinary memory.
  if (huge) madvise(p, static_cast<size_t>(size / kHugePageBytes * kHugePageBytes), MADV_HUGEPAGE);
  std::memset(p, 0, static_cast<size_t>(size));
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

}  // namespace tandem::ir
