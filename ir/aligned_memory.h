// Memory for tensor data and execution arenas.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

namespace tandem::ir {

// Alignment of every block AllocateAligned returns: a cache line, and the widest vector load.
inline constexpr int64_t kDataAlignment = 64;
// Blocks of at least one huge page are aligned to it and their whole huge pages marked for
// transparent huge pages (madvise), so that a kernel streaming weights or activations takes a
// TLB entry per 2 MiB instead of one per 4 KiB page. Where the operating system gives none
// (disabled, or none free) the block is ordinary memory; no memory is added for the rounding.
inline constexpr int64_t kHugePageBytes = int64_t{2} << 20;

// A zero-filled block of at least `bytes` bytes (at least one cache line), aligned to
// kDataAlignment and, from kHugePageBytes on, to kHugePageBytes; freed when the last owner
// lets go. Throws ir::Error naming `what` when memory runs out.
std::shared_ptr<uint8_t> AllocateAligned(int64_t bytes, std::string_view what);

}  // namespace tandem::ir
