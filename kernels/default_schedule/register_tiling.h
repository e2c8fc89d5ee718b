// The register-tile planner of the default schedules (kernels/default_schedule.h, rule 2):
// which spatial axes of a reduction block to tile, and by how much, so that its accumulators
// stay in vector registers across the reduction loops.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/kernel/stmt.h"
#include "kernels/default_schedule.h"

namespace tandem::kernels::default_schedule {

// Widest vector tile (lanes) of a register tile, and of a vectorized spatial loop.
inline constexpr int64_t kMaxVectorTile = 64;
// Widest vector tile (lanes) along a dynamic axis (kernels/dynamic_extent.h): one cache line of
// f32 (16 lanes) or one native vector, whichever is wider. A run far below the bound computes
// at most that much past the valid length, which its loads touch anyway; on AVX2 a tile of two
// vectors keeps the loads per multiply-add of the static build's tiles.
inline int64_t DynamicAxisLanes(int64_t native) {
  return native > 16 ? native : 16;
}
// Narrowest vector tile of a register tile whose loads keep a constant step only inside
// aligned groups narrower than a vector register (grouped convolutions of 4 or 8 channels).
inline constexpr int64_t kMinVectorTile = 4;

// Bytes of vector operands (a convolution's weights) that stay in L1 whatever the loop order:
// half of the smallest x86 L1 data cache of the last decade (32 KB), the other half for the
// input pixels and the output lines of a tile. Larger ones stream from L2 or memory, and a
// loop over tiles that shares them panel by panel prefetches the next panel.
inline constexpr int64_t kL1ResidentOperandBytes = int64_t{16} << 10;

// Bytes of a convolution's weights that stay in L2 while the tiles of one output position cycle
// through all of them, on a core whose L2 size is not known: half of the smallest L2 of the CPUs
// we target (512 KB on Zen 3), the other half for the input rows and output lines passing
// through. Up to this size a convolution's tile loops visit every output-channel block of one
// position before moving on (SplitTileLoops), which reuses the position's input from L1 and
// writes each output pixel's channels together.
inline constexpr int64_t kL2ResidentConvolutionWeightBytes = int64_t{256} << 10;

// The same bound for `core`: half of its L2 where that is known, else
// kL2ResidentConvolutionWeightBytes.
inline int64_t L2ResidentConvolutionWeightBytes(const CpuCoreModel& core) {
  return core.l2_bytes > 0 ? core.l2_bytes / 2 : kL2ResidentConvolutionWeightBytes;
}

// True when a loop over tiles may prefetch the next weight panel of `panel_bytes` while the
// current one is in use: the two take at most half of `core`'s L2 (or its size is not known).
// The rest of L2 holds the broadcast operands that stream through. Where the two panels take
// more, the prefetch evicts the panel in use.
inline bool PrefetchedPanelFitsInL2(int64_t panel_bytes, const CpuCoreModel& core) {
  return core.l2_bytes <= 0 || 4 * panel_bytes <= core.l2_bytes;
}

// Accumulators of a tile whose taps are unrolled over overlapping windows (UnrollsWindowTaps),
// whatever the register file: the overlapping windows keep tile + taps - 1 input vectors of a
// tap row live beside the accumulators, and their addresses and masks the general registers.
// On AVX-512, 14- and 16-wide tiles of that kind spilled and ran 1.7-3.4x slower than 7-wide
// ones on 14x14 and 28x28 maps (and no faster than 8-wide ones on 56x56 and 112x112); 12 is
// AVX2's accumulator budget, under which they measured well.
inline constexpr int64_t kMaxUnrolledWindowAccumulators = 12;

// The register tile of a reduction block, MetaSchedule-style: the innermost spatial iterator
// is the vector axis (tile `vector_tile`, vectorized); `broadcast_axis` is a spatial iterator
// along which the vector operands stay the same (reused from registers) while the scalar
// (broadcast) operands change; `second_axis` one along which the broadcast operands stay the
// same (or, for a convolution, a second axis the broadcasts move along). The tile is
// vector_tile x broadcast_tile x second_tile accumulators held in registers across the
// reduction loops. An axis of -1 is not tiled.
struct RegisterTile {
  int vector_axis = -1;
  int64_t vector_tile = 1;
  int broadcast_axis = -1;
  int64_t broadcast_tile = 1;
  int second_axis = -1;
  int64_t second_tile = 1;
};

// Chooses the register tile of a reduction block by a simple model of one reduction step:
// it issues one FMA per accumulator register and one load per operand register (a strided
// vector load counts 2.5: two loads and a shuffle), two of each per cycle; the tile with the
// most useful lanes per cycle wins (ties: more accumulators, then fewer loads). `native`: f32
// lanes of a vector register; `min_tiles`: tiles the block must have at least (its threads).
// nullopt when the innermost spatial iterator cannot be vectorized with loads (a load would
// be a gather) or the output is not contiguous along it. `core`: where the core starts one FMA
// of the widest vector per cycle, a tile that wastes lanes on padding no longer pays for itself
// by its larger size; where the L1 ways are known, no tile reads more rows of a broadcast
// operand that fall into one cache set than there are ways.
// `dynamic`: the block's iterators whose extents are a dynamic range's bound
// (DefaultScheduleOptions::dynamic_iterators); a vector tile along one is one native vector.
std::optional<RegisterTile> PlanRegisterTile(const ir::Block& block, int64_t native,
                                             int64_t vector_registers, int64_t min_tiles,
                                             const CpuCoreModel& core = {},
                                             const std::vector<size_t>& dynamic = {});

}  // namespace tandem::kernels::default_schedule
