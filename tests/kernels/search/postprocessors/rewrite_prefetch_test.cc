// The rewrite_prefetch postprocessor (kernels/search/postprocessors/rewrite_prefetch.cc): a
// parallel loop over register tiles whose weight index moves only through floordiv(loop, d)
// (d tiles share each weight panel) gets tandem.prefetch_distance = d; the result computes the
// same. Only vector reads count (what the code generator prefetches). Weights indexed through
// floormod (a new panel every iteration), weights small enough for L1, panels too large for two
// to share half the L2, a serial loop, a loop that already has a distance and a single panel are
// left alone.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_parser.h"
#include "kernels/search/components.h"
#include "tests/kernels/search/golden.h"

namespace tandem::kernels {
namespace {

using testing::ExpectSameOutputs;
using testing::GoldenTarget;

// A matmul a[rows, k] x b[k, 64] tiled 8 rows x 16 columns, the tile loops fused into one
// loop `f` of `kind` over (rows / 8) x 4 tiles; `i` and `j` bind the tile's first row and
// column from `f`.
ir::KernelFunction TiledMatmul(int64_t rows, int64_t k, const std::string& kind,
                               const std::string& i, const std::string& j,
                               const std::string& annotations = "") {
  int64_t tiles = rows / 8 * 4;
  return ir::ParseKernel(fmt::format(R"(
  kernel @matmul(%a: f32[{0},{1}], %b: f32[{1},64]) -> (%output: f32[{0},64]) {{
    block root() {{
      for %f in {2} {3}{6} {{
        for %kk in {1} {{
          for %i_1 in 8 {{
            for %j_1 in 16 vectorized {{
              block matmul(%i: spatial {0} = {4} * 8 + %i_1, %j: spatial 64 = {5} * 16 + %j_1,
                           %r: reduce {1} = %kk)
                  reads(%a[%i, %r], %b[%r, %j]) writes(%output[%i, %j]) {{
                init {{
                  %output[%i, %j] = 0.0
                }}
                %output[%i, %j] = %output[%i, %j] + %a[%i, %r] * %b[%r, %j]
              }}
            }}
          }}
        }}
      }}
    }}
  }})",
                                     rows, k, tiles, kind, i, j, annotations));
}

// The prefetch distance of the outermost loop after rewrite_prefetch for `target` (0: none).
int64_t DistanceAfterRewrite(const ir::KernelFunction& kernel,
                             const SearchTarget& target = GoldenTarget()) {
  Schedule s(kernel, /*seed=*/1);
  EXPECT_TRUE(MakeRewritePrefetch(target)->Apply(s));
  ExpectSameOutputs(kernel, s.function());
  int64_t distance = 0;
  ir::VisitStmtTree(s.function().body, [&](const ir::Stmt& st) {
    const auto* loop = ir::As<ir::ForNode>(st);
    if (loop && loop->loop_var->name == "f") {
      distance = loop->annotations.GetInt(ir::kPrefetchDistanceKey, 0);
    }
  });
  return distance;
}

TEST(RewritePrefetch, PanelsSharedByConsecutiveTilesArePrefetchedOnePanelAhead) {
  // 20 KB of weights in four 16-column panels, each shared by 3 row tiles.
  EXPECT_EQ(
      DistanceAfterRewrite(TiledMatmul(24, 80, "parallel", "floormod(%f, 3)", "floordiv(%f, 3)")),
      3);
  // With 19 KB of `a` too, read as broadcasts (floormod of the loop): only the vector reads
  // count.
  EXPECT_EQ(
      DistanceAfterRewrite(TiledMatmul(24, 200, "parallel", "floormod(%f, 3)", "floordiv(%f, 3)")),
      3);
}

TEST(RewritePrefetch, LeavesLoopsThatDoNotStreamPanels) {
  // A new panel every iteration (rows outside, columns inside).
  EXPECT_EQ(
      DistanceAfterRewrite(TiledMatmul(24, 80, "parallel", "floordiv(%f, 4)", "floormod(%f, 4)")),
      0);
  // 4 KB of weights stay in L1.
  EXPECT_EQ(
      DistanceAfterRewrite(TiledMatmul(24, 16, "parallel", "floormod(%f, 3)", "floordiv(%f, 3)")),
      0);
  // A serial loop: no threads over tiles (rewrite_parallel_vectorize_unroll chose none).
  EXPECT_EQ(DistanceAfterRewrite(TiledMatmul(24, 80, "", "floormod(%f, 3)", "floordiv(%f, 3)")), 0);
  // One row tile per panel: 8 rows, every iteration a new panel.
  EXPECT_EQ(
      DistanceAfterRewrite(TiledMatmul(8, 80, "parallel", "floormod(%f, 1)", "floordiv(%f, 1)")),
      0);
}

// As in the default schedules, a panel is prefetched only where it and the next take at most
// half the core's L2: the 5 KB panels above fit a 32 KB L2 that way, not a 16 KB one.
TEST(RewritePrefetch, PrefetchesOnlyWhereTwoPanelsFitInHalfTheL2) {
  ir::KernelFunction kernel = TiledMatmul(24, 80, "parallel", "floormod(%f, 3)", "floordiv(%f, 3)");
  SearchTarget target = GoldenTarget();
  target.core.l2_bytes = 32 << 10;
  EXPECT_EQ(DistanceAfterRewrite(kernel, target), 3);
  target.core.l2_bytes = 16 << 10;
  EXPECT_EQ(DistanceAfterRewrite(kernel, target), 0);
}

TEST(RewritePrefetch, KeepsADistanceTheProgramAlreadyHas) {
  EXPECT_EQ(
      DistanceAfterRewrite(TiledMatmul(24, 80, "parallel", "floormod(%f, 3)", "floordiv(%f, 3)",
                                       " annotations {tandem.prefetch_distance=2}")),
      2);
}

}  // namespace
}  // namespace tandem::kernels
