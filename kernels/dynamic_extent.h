// Kernels for dynamic axes: one kernel, compiled once at the bounds of one or more symbols (a
// sequence length, a batch), that runs any sizes of them within their ranges [minimum, bound].
//
// A tensor of a dynamic build is allocated at the bounds; along each dynamic axis only a prefix
// of `scale * n + offset` positions is valid (n: the size of the axis's symbol; an axis follows
// one symbol at most) and the rest is junk (whatever an earlier kernel left
// there). A kernel computes the valid part correctly when no valid result depends on junk:
//   - a block iterator that walks a dynamic axis with the plain iterator as index (out[i] = ...,
//     a[i, k]) is a dynamic iterator; its iterations at or past the valid length are not needed:
//     a reduction iterator's are skipped by a predicate on the block (junk stays out of the
//     sum), a spatial one's only shorten the loops around it (a partial tile computes junk);
//   - any other index of a dynamic axis (a reshape's floordiv/floormod, a window's i + kh - 1, a
//     constant) must stay inside the valid prefix for every valid iteration and every n in the
//     range, unless a padding select bounds it (kernels/dynamic_padding.h, for the ops that pad);
//     a write must use a plain dynamic iterator; a dynamic iterator must not write a static
//     axis. Anything else is an Error naming the block and the buffer.
// PlanDynamicIterators does this analysis on the unscheduled kernel (its compute definition,
// whose indices are plain) and ApplyDynamicIterators applies it to the kernel once scheduled:
// scheduling keeps the original blocks, their names and their iterators, and binds them to
// loops; the predicates go on those blocks, and a loop whose iterations past some point reach
// only unneeded iterations of the blocks under it gets the guard `loop_var < threshold` as its
// whole body, which code generation turns into a shorter trip count (so a kernel built for 128
// rows run at 16 does the work of about 16).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"
#include "ir/type.h"

namespace tandem::kernels {

// The valid length of a tensor axis: floor((scale * n + offset) / divisor), where n is the size
// of the build's symbol number `symbol` (scale 0: a static axis, always whole, of length offset).
// A divisor above 1 comes from windows with a stride along the axis: a convolution with stride 2
// and padding 1 makes floor((n + 1) / 2) positions of n.
struct AxisExtent {
  int64_t scale = 0;
  int64_t offset = 0;
  size_t symbol = 0;    // index into the build's symbols (DynamicRanges)
  int64_t divisor = 1;  // positive
  bool dynamic() const { return scale != 0; }
  // The length when the axis's own symbol has the size n.
  int64_t At(int64_t n) const {
    int64_t numerator = scale * n + offset;
    int64_t quotient = numerator / divisor;
    return quotient * divisor > numerator ? quotient - 1 : quotient;  // rounded down
  }
  // The length at the sizes of all the build's symbols, in their order.
  int64_t At(const std::vector<int64_t>& sizes) const {
    return dynamic() ? At(sizes.at(symbol)) : offset;
  }
  bool operator==(const AxisExtent& other) const = default;
};
// One per axis of a tensor; empty for a tensor without a dynamic axis.
using TensorExtents = std::vector<AxisExtent>;
bool IsDynamic(const TensorExtents& extents);
// "[batch, 2*seq+1, 64]" for the shape at the bounds and the symbols {"batch", "seq"}.
std::string ExtentsToString(const TensorExtents& extents, const ir::Shape& shape,
                            const std::vector<std::string>& symbols);
inline std::string ExtentsToString(const TensorExtents& extents, const ir::Shape& shape,
                                   const std::string& symbol) {
  return ExtentsToString(extents, shape, std::vector<std::string>{symbol});
}

// The dynamic size's symbol and range.
struct DynamicRange {
  std::string symbol = "n";
  int64_t minimum = 1;
  int64_t bound = 1;
  bool operator==(const DynamicRange& other) const = default;
  auto operator<=>(const DynamicRange& other) const = default;
};

// "SYMBOL=MIN:MAX" (or "SYMBOL=MAX", from 1), as the --dynamic options take it; Error naming the
// text when it is not. The range itself is checked where it is used (BuildDynamic).
DynamicRange ParseDynamicRange(const std::string& text);
// "seq in [1, 128]".
std::string ToString(const DynamicRange& range);

// The symbols of one dynamic build, each with its range; an AxisExtent's `symbol` indexes them.
// The first is the one a build by buckets splits. Names are distinct.
using DynamicRanges = std::vector<DynamicRange>;
// The symbols' names, in order.
std::vector<std::string> SymbolsOf(const DynamicRanges& ranges);
// "batch in [1, 8], seq in [1, 128]".
std::string ToString(const DynamicRanges& ranges);
// Error naming the range when one is empty (minimum < 1 or bound <= minimum) or a symbol
// repeats.
void CheckDynamicRanges(const DynamicRanges& ranges);
// The symbols bound to `sizes` (one per range, in order), as an importer's symbol bindings take
// them.
std::map<std::string, int64_t> SymbolSizes(const DynamicRanges& ranges,
                                           const std::vector<int64_t>& sizes);
// Every symbol at its bound.
std::vector<int64_t> BoundsOf(const DynamicRanges& ranges);
// "dynamic axis 'seq'", or "dynamic axes 'batch', 'seq'": what an Error about a build is about.
std::string AxesText(const DynamicRanges& ranges);
// "seq=127", or "batch=8, seq=127": the symbols at `sizes` (one per range, in order).
std::string SizesText(const DynamicRanges& ranges, const std::vector<int64_t>& sizes);

// The buckets of a range: consecutive parts [minimum, b0], [b0 + 1, b1], ..., ending at the
// range's bound, each built (and tuned) at its own bound and chosen at run time by size. `text`
// lists the bucket bounds, increasing ("32,128"); the last must be the range's bound, and every
// bucket must hold at least two sizes. Empty text: the whole range as one bucket. Error naming
// the text and what is wrong.
std::vector<DynamicRange> ParseDynamicBuckets(const std::string& text, const DynamicRange& range);

// The buckets of every symbol, as a grid: each of `texts` is "B1,...,MAX" (the first symbol's
// buckets, as ParseDynamicBuckets reads them) or "SYMBOL=B1,...,MAX" (that symbol's); a symbol
// named by none keeps its whole range. One DynamicRanges per combination (one range per symbol,
// in the order of `ranges`), the first symbol's buckets outermost. Error naming the text when a
// symbol is unknown or given twice, or its list is not one ParseDynamicBuckets takes.
std::vector<DynamicRanges> ParseDynamicBucketGrid(const std::vector<std::string>& texts,
                                                  const DynamicRanges& ranges);

// Error unless `grid` (one DynamicRanges per bucket) splits ranges of the same symbols as a grid:
// each symbol's parts consecutive and not overlapping, every combination of them once (with
// `complete` false, at most once: the first buckets of a grid). Returns each symbol's whole
// range (from its first part's minimum to its last part's bound).
DynamicRanges CheckDynamicBucketGrid(const std::vector<DynamicRanges>& grid, bool complete = true);

// The key of element `element` of a tuple value (a split's results) among the extents of a
// graph's values: "value#element" ('#' is not part of value names).
std::string TupleElementName(const std::string& value, size_t element);

// The name of the kernel parameter (i64[number of symbols], before the outputs) that holds the
// symbols' sizes at run time.
inline constexpr const char* kDynamicExtentParam = "dynamic_extent";

// A block iterator over a dynamic axis: its iterations from extent.At(n) on are skipped.
struct DynamicIterator {
  std::string block;
  size_t iterator = 0;  // index into the block's iter_vars
  int64_t domain = 0;   // the iterator's extent at the bound (checked when applying)
  bool reduction = false;
  AxisExtent extent;
};

// The count of a mean whose reduction walks a dynamic axis (kernels/dynamic_means.h): `mean`'s
// compute definition sums into a buffer and divides that by the number of reduced elements, a
// constant at the bound; at the sizes n the count is static_count times the valid lengths of
// `dynamic`.
struct MeanCount {
  std::string block;   // the block that sums
  std::string buffer;  // the buffer it sums into
  int64_t static_count = 1;
  int64_t count_at_bound = 1;
  std::vector<AxisExtent> dynamic;
};

// The plan of one kernel: its dynamic iterators, and the names of all its blocks (a reduction
// block that scheduling adds, as rfactor does, is not covered by the analysis).
struct DynamicPlan {
  size_t symbols = 1;                 // the length of the extent parameter
  std::vector<TensorExtents> params;  // the parameters' extents it was made for
  // The extents of the intermediates with a dynamic axis, by buffer name.
  std::map<std::string, TensorExtents> intermediates;
  std::vector<DynamicIterator> iterators;
  std::set<std::string> blocks;
  // Reads that padding guards count as inside the valid part (kernels/dynamic_padding.h).
  bool padded_reads = false;
  // The means over a dynamic axis, whose divisions by their count the applied plan makes
  // follow the sizes.
  std::vector<MeanCount> means;
  bool has_dynamic_reduction() const;
};

// Analyzes the unscheduled kernel `kernel` whose parameters have the extents `params` (one per
// parameter, in order; empty for a static one) and whose intermediates named in `intermediates`
// have those (the values of a fused group; any other intermediate takes the extents of the
// iterators that write it). Error (naming the block, the buffer and the reason) when a valid
// result could depend on junk for some sizes within `ranges`.
// With `padded_reads` (for ops whose selects pad their input: convolutions, max pooling, a
// constant pad; or place its parts: a concatenation), a read past the valid part that such a
// select bounds by the axis's extent at the bound is accepted, and the applied plan bounds it by
// the valid length instead and moves what follows it along the axis (kernels/dynamic_padding.h).
DynamicPlan PlanDynamicIterators(const ir::KernelFunction& kernel,
                                 const std::vector<TensorExtents>& params,
                                 const DynamicRanges& ranges,
                                 const std::map<std::string, TensorExtents>& intermediates = {},
                                 bool padded_reads = false);

// `scheduled` (a schedule of the kernel `plan` was made from) with the plan applied: the
// parameter kDynamicExtentParam inserted before the outputs, a predicate on every dynamic
// iterator's block, and trip-count guards on the loops that only reach skipped iterations past
// a point; a mean's division by its count at the bound divides by its count at run time instead.
// Error when scheduling removed a block with a dynamic reduction, changed a planned iterator,
// added a reduction block, or left a planned mean's division where it cannot be found.
ir::KernelFunction ApplyDynamicIterators(const ir::KernelFunction& scheduled,
                                         const DynamicPlan& plan);

}  // namespace tandem::kernels
