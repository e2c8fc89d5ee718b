// The Winograd minimal-filtering matrices F(m x m, 3 x 3) shared by the reference semantics of
// the winograd_* ops (ir/ops/winograd_ops.cc) and their compute definitions
// (kernels/compute/winograd_compute.cc), so that both compute exactly the same transforms.
//
// With a = m + 2, a 3x3 convolution of an a x a input tile d with filter g gives the m x m
// output tile Y = A^T [(G g G^T) . (B^T d B)] A (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks"). F(2x2) uses the points 0, 1, -1, inf; F(4x4) uses 0, 1, -1,
// 2, -2, inf, whose float32 error stays near 1e-6 relative for the channel counts of CNNs.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::ir::ops {

struct WinogradMatrices {
  int64_t tile = 0;                     // m: output tile extent
  int64_t size = 0;                     // a = m + 2: input tile extent
  std::vector<std::vector<double>> bt;  // B^T, [a][a]
  std::vector<std::vector<double>> g;   // G, [a][3]
  std::vector<std::vector<double>> at;  // A^T, [m][a]
};

// The matrices for output tile `tile` (2 or 4); throws ir::Error for any other tile.
const WinogradMatrices& Winograd(int64_t tile);

// Number of tiles of extent `tile` covering `extent` output positions (the last may be partial).
inline int64_t WinogradTiles(int64_t extent, int64_t tile) {
  return (extent + tile - 1) / tile;
}

}  // namespace tandem::ir::ops
