#include "kernels/dynamic_extent.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/kernel/bound.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/simplify.h"
#include "kernels/dynamic_access.h"
#include "kernels/dynamic_means.h"
#include "kernels/dynamic_padding.h"

namespace tandem::kernels {

namespace {

using dynamic_access::Access;
using dynamic_access::AccessesOf;
using dynamic_access::LeafBlocks;
using ir::Expr;
using ir::ExprKind;

// "2*seq+1" or "floor((seq+1)/2)": the valid length of an axis named by its symbol among
// `symbols`.
std::string ExtentText(const AxisExtent& e, const std::vector<std::string>& symbols) {
  const std::string& symbol = symbols.at(e.symbol);
  std::string text = e.scale == 1 ? symbol : fmt::format("{}*{}", e.scale, symbol);
  if (e.offset > 0) text += fmt::format("+{}", e.offset);
  if (e.offset < 0) text += fmt::format("-{}", -e.offset);
  if (e.divisor == 1) return text;
  return e.offset == 0 ? fmt::format("floor({}/{})", text, e.divisor)
                       : fmt::format("floor(({})/{})", text, e.divisor);
}

// Analysis of one block (steps 1-4 of PlanDynamicIterators).
class BlockAnalysis {
 public:
  BlockAnalysis(const ir::BlockNode& block, std::map<const ir::BufferNode*, TensorExtents>& known,
                const std::map<std::string, TensorExtents>& intermediates,
                const DynamicRanges& ranges, bool padded_reads)
      : block_(block),
        known_(known),
        ranges_(ranges),
        padded_reads_(padded_reads),
        extents_(block.iter_vars.size()) {
    for (const Access& a : AccessesOf(block)) {
      auto given = intermediates.find(a.buffer->name);
      if (!known.count(a.buffer.get()) && given != intermediates.end()) {
        known[a.buffer.get()] = given->second;
      }
    }
    for (size_t k = 0; k < block.iter_vars.size(); ++k) index_[block.iter_vars[k].var.get()] = k;
  }

  void Run(std::vector<DynamicIterator>& out) {
    std::vector<Access> accesses = AccessesOf(block_);
    // 1. A plain iterator indexing a dynamic axis of a buffer whose extents are known is dynamic,
    // except in a read that padding guards: a concatenation's first part, read at the position
    // in the result (whose length the iterator follows) under a select that ends the part.
    for (const Access& a : accesses) {
      auto it = known_.find(a.buffer.get());
      if (it == known_.end() || it->second.empty()) continue;
      for (size_t axis = 0; axis < a.indices.size(); ++axis) {
        if (!it->second[axis].dynamic()) continue;
        if (!a.write && PaddingGuards(a, axis)) continue;
        if (std::optional<size_t> k = PlainIterator(a.indices[axis])) {
          Assign(*k, it->second[axis], a.buffer->name);
        }
      }
    }
    // 1b. A padding stage (padded[w] = select(w >= p && ..., x[w - p], 0)) writing an
    // intermediate: its position w walks the padded axis, whose valid part is the valid length
    // of x's axis plus the padding at both ends (the padded axis's extent minus x's at the
    // bound), so that the stage copies only what the valid windows read.
    for (const Access& a : accesses) {
      auto it = known_.find(a.buffer.get());
      if (a.write || it == known_.end() || it->second.empty()) continue;
      for (size_t axis = 0; axis < a.indices.size(); ++axis) {
        if (!it->second[axis].dynamic() || !PaddingGuards(a, axis)) continue;
        if (std::optional<std::pair<size_t, int64_t>> padded = PaddedPosition(a, axis, accesses)) {
          AxisExtent widened = it->second[axis];
          widened.offset += padded->second * widened.divisor;
          Assign(padded->first, widened, a.buffer->name);
        }
      }
    }
    // 2. A buffer first written here (an intermediate) gets its extents from the iterators
    // indexing it.
    for (const Access& a : accesses) {
      if (!a.write || known_.count(a.buffer.get())) continue;
      TensorExtents extents(a.indices.size());
      for (size_t axis = 0; axis < a.indices.size(); ++axis) {
        if (std::optional<size_t> k = PlainIterator(a.indices[axis]); k && extents_[*k]) {
          extents[axis] = *extents_[*k];
        }
      }
      if (!IsDynamic(extents)) extents.clear();
      known_[a.buffer.get()] = std::move(extents);
    }
    // 3. Every access must keep valid results away from junk.
    for (const Access& a : accesses) Check(a);
    // 4. The dynamic iterators.
    for (size_t k = 0; k < extents_.size(); ++k) {
      if (!extents_[k]) continue;
      out.push_back({block_.name, k, block_.iter_vars[k].extent,
                     block_.iter_vars[k].kind == ir::IterKind::kReduction, *extents_[k]});
    }
  }

 private:
  std::optional<size_t> PlainIterator(const Expr& index) const {
    if (index->kind != ExprKind::kVar) return std::nullopt;
    auto it = index_.find(index.get());
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

  // For a read `a` padded along `axis` at the index w - p (p > 0) of the block's one write, an
  // intermediate not yet known with the plain iterator w on the same axis: w's index and the
  // padding at both ends (the written axis's extent minus the read one's).
  std::optional<std::pair<size_t, int64_t>> PaddedPosition(
      const Access& a, size_t axis, const std::vector<Access>& accesses) const {
    const Access* write = nullptr;
    for (const Access& other : accesses) {
      if (!other.write) continue;
      if (write) return std::nullopt;
      write = &other;
    }
    if (!write || known_.count(write->buffer.get()) || write->indices.size() != a.indices.size()) {
      return std::nullopt;
    }
    std::optional<size_t> k = PlainIterator(write->indices[axis]);
    if (!k) return std::nullopt;
    int64_t offset = 0;
    if (!ir::AsConstInt(ir::Simplify(write->indices[axis] - a.indices[axis]), &offset) ||
        offset <= 0) {
      return std::nullopt;
    }
    int64_t padding = write->buffer->shape[axis] - a.buffer->shape[axis];
    if (padding < offset) return std::nullopt;
    return std::pair{*k, padding};
  }

  [[noreturn]] void Fail(const std::string& buffer, const std::string& reason) const {
    throw ir::Error(
        fmt::format("{}: block '{}' {} '{}', so a result inside the "
                    "valid range could depend on positions past it",
                    AxesText(ranges_), block_.name, reason, buffer));
  }

  void Assign(size_t k, const AxisExtent& extent, const std::string& buffer) {
    if (!extents_[k]) {
      extents_[k] = extent;
    } else if (!(*extents_[k] == extent)) {
      Fail(buffer,
           fmt::format("walks axes of lengths {} and {} with the iterator '{}' of",
                       ExtentText(*extents_[k], SymbolsOf(ranges_)),
                       ExtentText(extent, SymbolsOf(ranges_)), block_.iter_vars[k].var->name));
    }
  }

  // Whether the plan allows padding and a select's condition bounds `a`'s index of `axis` by the
  // buffer's extent there (kernels/dynamic_padding.h).
  bool PaddingGuards(const Access& a, size_t axis) const {
    return padded_reads_ && (BoundedByExtent(a.guards, a.indices[axis], a.buffer->shape[axis]) ||
                             PaddedAtStart(a.guards, a.indices[axis]));
  }

  bool UsesDynamicIterator(const Expr& e) const {
    for (size_t k = 0; k < extents_.size(); ++k) {
      if (extents_[k] && ir::UsesVar(e, block_.iter_vars[k].var)) return true;
    }
    return false;
  }

  void Check(const Access& a) {
    const TensorExtents& extents = known_.at(a.buffer.get());
    for (size_t axis = 0; axis < a.indices.size(); ++axis) {
      const Expr& index = a.indices[axis];
      AxisExtent axis_extent = extents.empty() ? AxisExtent{} : extents[axis];
      std::optional<size_t> plain = PlainIterator(index);
      if (a.write) {
        if (axis_extent.dynamic() && !plain) {
          Fail(a.buffer->name, fmt::format("writes axis {} with a computed index of", axis));
        }
        if (!axis_extent.dynamic() && UsesDynamicIterator(index)) {
          Fail(a.buffer->name,
               fmt::format("writes positions along the dynamic axis into the static axis {} of",
                           axis));
        }
        continue;
      }
      if (!axis_extent.dynamic() || plain) continue;
      if (ir::HasLoad(index)) {
        Fail(a.buffer->name,
             fmt::format("indexes the dynamic axis {} with loaded data, reading", axis));
      }
      // A read that padding guards (kernels/dynamic_padding.h) reads padding (or the next part
      // of a concatenation) from the valid length on once the plan is applied.
      if (PaddingGuards(a, axis)) continue;
      // The index's largest value over the valid iterations stays inside the valid prefix for
      // every size n of the axis's symbol. The iterators of other symbols range up to their
      // bounds: their largest range bounds the index from above.
      const DynamicRange& range = ranges_.at(axis_extent.symbol);
      for (int64_t n = range.minimum; n <= range.bound; ++n) {
        ir::VarRanges ranges;
        for (size_t k = 0; k < extents_.size(); ++k) {
          int64_t last = block_.iter_vars[k].extent - 1;
          if (extents_[k]) {
            const AxisExtent& e = *extents_[k];
            last = e.At(e.symbol == axis_extent.symbol ? n : ranges_.at(e.symbol).bound) - 1;
          }
          ranges[block_.iter_vars[k].var.get()] = {0, last};
        }
        // Simplified within the ranges first: a reshape's floordiv/floormod of a flattened
        // index over several dynamic axes folds back to the plain iterator.
        ir::IntInterval bound = ir::ConstIntBound(ir::Simplify(index, ranges), ranges);
        if (!bound.has_upper() || bound.max >= axis_extent.At(n)) {
          Fail(a.buffer->name,
               fmt::format("reads axis {} (valid length {}) at an index ({}) that reaches {} at "
                           "{}={}, in",
                           axis, ExtentText(axis_extent, SymbolsOf(ranges_)), ir::PrintExpr(index),
                           bound.has_upper() ? fmt::format("{}", bound.max) : "any value",
                           range.symbol, n));
        }
      }
    }
  }

  const ir::BlockNode& block_;
  std::map<const ir::BufferNode*, TensorExtents>& known_;
  const DynamicRanges& ranges_;
  bool padded_reads_;
  std::unordered_map<const ir::ExprNode*, size_t> index_;
  std::vector<std::optional<AxisExtent>> extents_;
};

}  // namespace

bool IsDynamic(const TensorExtents& extents) {
  for (const AxisExtent& e : extents) {
    if (e.dynamic()) return true;
  }
  return false;
}

std::string ExtentsToString(const TensorExtents& extents, const ir::Shape& shape,
                            const std::vector<std::string>& symbols) {
  std::vector<std::string> parts;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    if (axis < extents.size() && extents[axis].dynamic()) {
      parts.push_back(ExtentText(extents[axis], symbols));
    } else {
      parts.push_back(fmt::format("{}", shape[axis]));
    }
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

namespace {

// The whole of `text` as a decimal integer; nullopt when it is not one.
std::optional<int64_t> WholeInteger(const std::string& text) {
  try {
    size_t used = 0;
    int64_t value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
    // Not a number, or out of range: nullopt below.
  }
  return std::nullopt;
}

}  // namespace

DynamicRange ParseDynamicRange(const std::string& text) {
  size_t equals = text.find('=');
  std::string sizes = equals == std::string::npos ? std::string() : text.substr(equals + 1);
  size_t colon = sizes.find(':');
  std::optional<int64_t> minimum =
      colon == std::string::npos ? std::optional<int64_t>(1) : WholeInteger(sizes.substr(0, colon));
  std::optional<int64_t> bound =
      WholeInteger(colon == std::string::npos ? sizes : sizes.substr(colon + 1));
  if (equals == std::string::npos || equals == 0 || !minimum || !bound) {
    throw ir::Error(
        fmt::format("the dynamic range '{}' is not SYMBOL=MIN:MAX or SYMBOL=MAX", text));
  }
  return {text.substr(0, equals), *minimum, *bound};
}

std::string ToString(const DynamicRange& range) {
  return fmt::format("{} in [{}, {}]", range.symbol, range.minimum, range.bound);
}

std::vector<std::string> SymbolsOf(const DynamicRanges& ranges) {
  std::vector<std::string> symbols;
  for (const DynamicRange& range : ranges) symbols.push_back(range.symbol);
  return symbols;
}

std::string ToString(const DynamicRanges& ranges) {
  std::vector<std::string> parts;
  for (const DynamicRange& range : ranges) parts.push_back(ToString(range));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void CheckDynamicRanges(const DynamicRanges& ranges) {
  if (ranges.empty()) throw ir::Error("a dynamic build needs at least one dynamic symbol");
  for (size_t k = 0; k < ranges.size(); ++k) {
    const DynamicRange& range = ranges[k];
    if (range.minimum < 1 || range.bound < range.minimum + 1) {
      throw ir::Error(
          fmt::format("dynamic axis '{}': the range [{}, {}] must have 1 <= minimum < bound",
                      range.symbol, range.minimum, range.bound));
    }
    for (size_t j = 0; j < k; ++j) {
      if (ranges[j].symbol == range.symbol) {
        throw ir::Error(fmt::format("the dynamic symbol '{}' is given twice", range.symbol));
      }
    }
  }
}

std::map<std::string, int64_t> SymbolSizes(const DynamicRanges& ranges,
                                           const std::vector<int64_t>& sizes) {
  if (sizes.size() != ranges.size()) {
    throw ir::Error(fmt::format("{} sizes given for the {} symbols {}", sizes.size(), ranges.size(),
                                ToString(ranges)));
  }
  std::map<std::string, int64_t> symbols;
  for (size_t k = 0; k < ranges.size(); ++k) symbols[ranges[k].symbol] = sizes[k];
  return symbols;
}

std::vector<int64_t> BoundsOf(const DynamicRanges& ranges) {
  std::vector<int64_t> bounds;
  for (const DynamicRange& range : ranges) bounds.push_back(range.bound);
  return bounds;
}

std::string AxesText(const DynamicRanges& ranges) {
  return fmt::format("dynamic ax{} '{}'", ranges.size() == 1 ? "is" : "es",
                     fmt::join(SymbolsOf(ranges), "', '"));
}

std::string SizesText(const DynamicRanges& ranges, const std::vector<int64_t>& sizes) {
  std::vector<std::string> parts;
  for (size_t k = 0; k < ranges.size(); ++k) {
    parts.push_back(fmt::format("{}={}", ranges[k].symbol, sizes.at(k)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string TupleElementName(const std::string& value, size_t element) {
  return fmt::format("{}#{}", value, element);
}

std::vector<DynamicRange> ParseDynamicBuckets(const std::string& text, const DynamicRange& range) {
  if (text.empty()) return {range};
  std::vector<DynamicRange> buckets;
  int64_t minimum = range.minimum;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::optional<int64_t> parsed = WholeInteger(item);
    if (!parsed) {
      throw ir::Error(fmt::format("the buckets '{}' are not a list of sizes such as 32,128 ('{}')",
                                  text, item));
    }
    int64_t bound = *parsed;
    if (bound > range.bound) {
      throw ir::Error(fmt::format("the buckets '{}': bucket bound {} is past the range's bound {}",
                                  text, bound, range.bound));
    }
    if (bound <= minimum) {
      throw ir::Error(fmt::format(
          "the buckets '{}': the bucket from {}={} needs a bound of at least {} (a bucket holds "
          "at least two sizes), not {}",
          text, range.symbol, minimum, minimum + 1, bound));
    }
    buckets.push_back({range.symbol, minimum, bound});
    minimum = bound + 1;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (buckets.back().bound != range.bound) {
    throw ir::Error(fmt::format("the buckets '{}' end at {} but the range of {} ends at {}", text,
                                buckets.back().bound, range.symbol, range.bound));
  }
  return buckets;
}

std::vector<DynamicRanges> ParseDynamicBucketGrid(const std::vector<std::string>& texts,
                                                  const DynamicRanges& ranges) {
  std::vector<std::vector<DynamicRange>> per_symbol;
  for (const DynamicRange& range : ranges) per_symbol.push_back({range});
  std::vector<bool> given(ranges.size(), false);
  for (const std::string& text : texts) {
    size_t equals = text.find('=');
    size_t symbol = 0;
    if (equals != std::string::npos) {
      std::string name = text.substr(0, equals);
      while (symbol < ranges.size() && ranges[symbol].symbol != name) ++symbol;
      if (symbol == ranges.size()) {
        throw ir::Error(
            fmt::format("the buckets '{}' name '{}', which is not a --dynamic symbol "
                        "({})",
                        text, name, fmt::join(SymbolsOf(ranges), ", ")));
      }
    }
    if (given[symbol]) {
      throw ir::Error(fmt::format("the buckets '{}': the buckets of {} are given twice", text,
                                  ranges[symbol].symbol));
    }
    given[symbol] = true;
    per_symbol[symbol] = ParseDynamicBuckets(
        equals == std::string::npos ? text : text.substr(equals + 1), ranges[symbol]);
  }
  // Every combination, the last symbol's buckets innermost.
  std::vector<DynamicRanges> grid = {{}};
  for (const std::vector<DynamicRange>& buckets : per_symbol) {
    std::vector<DynamicRanges> longer;
    for (const DynamicRanges& prefix : grid) {
      for (const DynamicRange& bucket : buckets) {
        longer.push_back(prefix);
        longer.back().push_back(bucket);
      }
    }
    grid = std::move(longer);
  }
  return grid;
}

DynamicRanges CheckDynamicBucketGrid(const std::vector<DynamicRanges>& grid, bool complete) {
  if (grid.empty()) throw ir::Error("a bucketed build needs at least one bucket");
  const DynamicRanges& first = grid.front();
  // 1. The same symbols in every bucket.
  for (const DynamicRanges& bucket : grid) {
    bool same_symbols = bucket.size() == first.size();
    for (size_t k = 0; same_symbols && k < first.size(); ++k) {
      same_symbols = bucket[k].symbol == first[k].symbol;
    }
    if (!same_symbols) {
      throw ir::Error(fmt::format("the bucket {} has other symbols than the bucket {}",
                                  ToString(bucket), ToString(first)));
    }
  }
  // 2. Each symbol's parts consecutive; every combination of them once.
  DynamicRanges whole;
  size_t combinations = 1;
  for (size_t k = 0; k < first.size(); ++k) {
    std::map<int64_t, int64_t> parts;  // minimum -> bound
    for (const DynamicRanges& bucket : grid) {
      auto [it, added] = parts.emplace(bucket[k].minimum, bucket[k].bound);
      if (!added && it->second != bucket[k].bound) {
        throw ir::Error(
            fmt::format("the buckets {} and {} overlap", ToString(bucket[k]),
                        ToString(DynamicRange{bucket[k].symbol, it->first, it->second})));
      }
    }
    for (auto it = std::next(parts.begin()); it != parts.end(); ++it) {
      auto previous = std::prev(it);
      if (it->first != previous->second + 1) {
        throw ir::Error(fmt::format(
            "the bucket {} does not follow the bucket {}",
            ToString(DynamicRange{first[k].symbol, it->first, it->second}),
            ToString(DynamicRange{first[k].symbol, previous->first, previous->second})));
      }
    }
    whole.push_back({first[k].symbol, parts.begin()->first, parts.rbegin()->second});
    combinations *= parts.size();
  }
  std::set<DynamicRanges> seen;
  for (const DynamicRanges& bucket : grid) {
    if (!seen.insert(bucket).second) {
      throw ir::Error(fmt::format("the bucket {} is given twice", ToString(bucket)));
    }
  }
  if (complete && seen.size() != combinations) {
    throw ir::Error(fmt::format("the buckets do not cover {}: {} of {} combinations",
                                ToString(whole), seen.size(), combinations));
  }
  return whole;
}

bool DynamicPlan::has_dynamic_reduction() const {
  for (const DynamicIterator& it : iterators) {
    if (it.reduction) return true;
  }
  return false;
}

DynamicPlan PlanDynamicIterators(const ir::KernelFunction& kernel,
                                 const std::vector<TensorExtents>& params,
                                 const DynamicRanges& ranges,
                                 const std::map<std::string, TensorExtents>& intermediates,
                                 bool padded_reads) {
  if (params.size() != kernel.params.size()) {
    throw ir::Error(fmt::format("kernel '{}' has {} parameters but {} extents were given",
                                kernel.name, kernel.params.size(), params.size()));
  }
  std::map<const ir::BufferNode*, TensorExtents> known;
  for (size_t p = 0; p < params.size(); ++p) {
    if (!params[p].empty() && params[p].size() != kernel.params[p]->shape.size()) {
      throw ir::Error(fmt::format("kernel '{}': the extents of '{}' have the wrong rank",
                                  kernel.name, kernel.params[p]->name));
    }
    known[kernel.params[p].get()] = params[p];
  }
  for (const TensorExtents& extents : params) {
    for (const AxisExtent& e : extents) {
      if (e.dynamic() && e.symbol >= ranges.size()) {
        throw ir::Error(fmt::format("kernel '{}': an extent follows symbol {} of {}", kernel.name,
                                    e.symbol, ranges.size()));
      }
    }
  }
  DynamicPlan plan;
  plan.symbols = ranges.size();
  plan.params = params;
  plan.padded_reads = padded_reads;
  try {
    for (const ir::BlockRealizeNode* realize : LeafBlocks(kernel.body)) {
      plan.blocks.insert(realize->block->name);
      BlockAnalysis(*realize->block, known, intermediates, ranges, padded_reads)
          .Run(plan.iterators);
    }
  } catch (const ir::Error& e) {
    throw ir::Error(fmt::format("kernel '{}': {}", kernel.name, e.what()));
  }
  plan.means = PlanMeanCounts(kernel, plan.iterators);
  std::set<const ir::BufferNode*> parameters;
  for (const ir::Buffer& param : kernel.params) parameters.insert(param.get());
  for (const auto& [buffer, extents] : known) {
    if (!parameters.count(buffer) && IsDynamic(extents)) plan.intermediates[buffer->name] = extents;
  }
  return plan;
}

}  // namespace tandem::kernels
