#include "backends/runtime/dynamic_comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "ir/error.h"

namespace tandem::backends {

namespace {

using kernels::AxisExtent;
using kernels::TensorExtents;

// Copies the common prefix block of `from` (shape `from_shape`) into `to` (shape `to_shape`):
// index tuples below both shapes on every axis.
void CopyPrefixAt(const uint8_t* from, const ir::Shape& from_shape, uint8_t* to,
                  const ir::Shape& to_shape, int64_t element_bytes, size_t axis) {
  if (axis == from_shape.size()) {
    std::memcpy(to, from, static_cast<size_t>(element_bytes));
    return;
  }
  int64_t count = std::min(from_shape[axis], to_shape[axis]);
  int64_t from_stride = element_bytes;
  int64_t to_stride = element_bytes;
  for (size_t a = axis + 1; a < from_shape.size(); ++a) {
    from_stride *= from_shape[a];
    to_stride *= to_shape[a];
  }
  if (axis + 1 == from_shape.size()) {
    std::memcpy(to, from, static_cast<size_t>(count * element_bytes));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    CopyPrefixAt(from + i * from_stride, from_shape, to + i * to_stride, to_shape, element_bytes,
                 axis + 1);
  }
}

// Steps of BuildDynamic's comparison: the extents of one value from its types at the sizes.
// sizes[0] has every symbol at its bound, sizes[1 + k] symbol k one below it; any further ones
// check the extents found from those.
class Comparison {
 public:
  Comparison(const kernels::DynamicRanges& ranges, std::vector<std::vector<int64_t>> sizes,
             std::vector<const ir::GraphFunction*> functions)
      : ranges_(ranges), sizes_(std::move(sizes)), functions_(std::move(functions)) {}

  std::map<std::string, TensorExtents> Run() {
    const ir::GraphFunction& main = *functions_[0];
    for (size_t f = 1; f < functions_.size(); ++f) {
      if (functions_[f]->nodes.size() != main.nodes.size() ||
          functions_[f]->params.size() != main.params.size()) {
        Fail(fmt::format("the graph has {} nodes at {} but {} at {}", main.nodes.size(), At(0),
                         functions_[f]->nodes.size(), At(f)));
      }
    }
    std::map<std::string, TensorExtents> values;
    for (size_t i = 0; i < main.nodes.size(); ++i) {
      const ir::Node& node = main.nodes[i];
      for (size_t f = 1; f < functions_.size(); ++f) {
        const ir::Node& other = functions_[f]->nodes[i];
        if (other.kind != node.kind || other.op != node.op || other.name != node.name) {
          Fail(fmt::format("node %{} at {} is %{} at {}", node.name, At(0), other.name, At(f)));
        }
      }
      if (node.type.is_tuple()) {
        // A call with several results (split): each element's extents, by element name.
        for (size_t k = 0; k < node.type.fields().size(); ++k) {
          TensorExtents extents = ExtentsOf(i, values, static_cast<int>(k));
          if (kernels::IsDynamic(extents)) {
            values[kernels::TupleElementName(node.name, k)] = std::move(extents);
          }
        }
        continue;
      }
      TensorExtents extents = ExtentsOf(i, values);
      if (!kernels::IsDynamic(extents)) continue;
      if (node.kind == ir::NodeKind::kCallKernel || node.kind == ir::NodeKind::kCallExtern) {
        Fail(
            fmt::format("%{} is a {} of a dynamic value; dynamic builds lower kernels "
                        "themselves (use a pipeline without kernel tuning or backend placement)",
                        node.name, ir::ToString(node.kind)));
      }
      if (node.kind == ir::NodeKind::kConstant) CheckConstant(i, extents);
      values[node.name] = std::move(extents);
    }
    return values;
  }

 private:
  [[noreturn]] void Fail(const std::string& reason) const {
    throw ir::Error(fmt::format("{}: {}", kernels::AxesText(ranges_), reason));
  }

  std::string At(size_t f) const { return kernels::SizesText(ranges_, sizes_[f]); }

  // The type of node i at size f: the node's, or its element `element` (of a tuple).
  const ir::TensorType* TypeAt(size_t f, size_t i, int element) const {
    const ir::Type& type = functions_[f]->nodes[i].type;
    if (element < 0) return type.is_tensor() ? &type.tensor() : nullptr;
    if (!type.is_tuple() || static_cast<size_t>(element) >= type.fields().size() ||
        !type.fields()[static_cast<size_t>(element)].is_tensor()) {
      return nullptr;
    }
    return &type.fields()[static_cast<size_t>(element)].tensor();
  }

  // The extents of node i (or of its tuple element `element`) from its types at the sizes;
  // `values` holds the extents of the nodes before it.
  TensorExtents ExtentsOf(size_t i, const std::map<std::string, TensorExtents>& values,
                          int element = -1) const {
    const ir::Node& node = functions_[0]->nodes[i];
    std::string name = element < 0 ? node.name : fmt::format("{} (result {})", node.name, element);
    const ir::TensorType* bound_type = TypeAt(0, i, element);
    if (!bound_type) Fail(fmt::format("%{} is {}: not a tensor", name, ir::ToString(node.type)));
    const ir::TensorType& bound = *bound_type;
    TensorExtents extents(bound.shape.size());
    std::vector<const ir::TensorType*> types = {bound_type};
    for (size_t f = 1; f < functions_.size(); ++f) {
      const ir::TensorType* type = TypeAt(f, i, element);
      if (!type || type->shape.size() != bound.shape.size() || type->dtype != bound.dtype) {
        Fail(fmt::format("%{} is {} at {} but {} at {}", name, ir::ToString(node.type), At(0),
                         ir::ToString(functions_[f]->nodes[i].type), At(f)));
      }
      types.push_back(type);
    }
    for (size_t a = 0; a < bound.shape.size(); ++a) {
      std::vector<int64_t> lengths;
      for (const ir::TensorType* type : types) lengths.push_back(type->shape[a]);
      AxisExtent extent = Affine(lengths, name, a);
      if (!FitsSamples(extent, lengths)) {
        std::optional<AxisExtent> window = WindowOfOperand(node, values, lengths, name, a);
        if (!window) {
          Fail(fmt::format(
              "axis {} of %{} is neither an affine function of {} nor a window of an operand's "
              "axis (floor((axis + c) / stride))",
              a, name,
              extent.dynamic()
                  ? ranges_[extent.symbol].symbol
                  : fmt::format("{}", fmt::join(kernels::SymbolsOf(ranges_), " or "))));
        }
        extent = *window;
      }
      if (extent.dynamic() && extent.At(ranges_[extent.symbol].minimum) < 0) {
        Fail(fmt::format("axis {} of %{} has a negative length at {}={}", a, name,
                         ranges_[extent.symbol].symbol, ranges_[extent.symbol].minimum));
      }
      extents[a] = extent;
    }
    return extents;
  }

  // The affine extent of an axis whose lengths at the sizes are `lengths`, from its slope in
  // each symbol (at one below the bound); one symbol at most moves it.
  AxisExtent Affine(const std::vector<int64_t>& lengths, const std::string& name, size_t a) const {
    AxisExtent extent{0, lengths[0], 0};
    for (size_t k = 0; k < ranges_.size(); ++k) {
      int64_t scale = lengths[0] - lengths[1 + k];
      if (scale == 0) continue;
      if (extent.dynamic()) {
        Fail(fmt::format("axis {} of %{} changes with both {} and {}", a, name,
                         ranges_[extent.symbol].symbol, ranges_[k].symbol));
      }
      if (scale < 0) {
        Fail(fmt::format("axis {} of %{} shrinks as {} grows", a, name, ranges_[k].symbol));
      }
      extent = {scale, lengths[0] - scale * ranges_[k].bound, k};
    }
    return extent;
  }

  bool FitsSamples(const AxisExtent& extent, const std::vector<int64_t>& lengths) const {
    for (size_t f = 0; f < sizes_.size(); ++f) {
      if (extent.At(sizes_[f]) != lengths[f]) return false;
    }
    return true;
  }

  // A window along a dynamic axis of one of `node`'s operands, floor((operand's length + c) /
  // stride), that fits the lengths at every size compared. Stride 1 is the operand's length
  // plus c (an elementwise op, or a window without stride after a strided one); above 1, a
  // convolution or pooling with strides makes floor((n + pad_begin + pad_end - dilation *
  // (kernel - 1) - 1) / stride) + 1 (ceil_mode and a resize by 1 / stride are of the same form).
  // Where two windows fit but differ at some size of the range, UndecidedLength names that
  // size; an Error when it was compared already.
  std::optional<AxisExtent> WindowOfOperand(const ir::Node& node,
                                            const std::map<std::string, TensorExtents>& values,
                                            const std::vector<int64_t>& lengths,
                                            const std::string& name, size_t a) const {
    std::vector<AxisExtent> fits;
    for (ir::ValueId in : node.inputs) {
      auto found = values.find(functions_[0]->node(in).name);
      if (found == values.end()) continue;
      for (const AxisExtent& operand : found->second) {
        if (!operand.dynamic()) continue;
        int64_t operand_at_bound = operand.At(sizes_[0]);
        for (int64_t stride = 1; stride <= std::min<int64_t>(operand_at_bound, 256); ++stride) {
          // floor((L + c) / stride) = lengths[0] at the bound: c in [stride * lengths[0] - L,
          // stride * lengths[0] - L + stride - 1].
          int64_t lowest = stride * lengths[0] - operand_at_bound;
          for (int64_t c = lowest; c < lowest + stride; ++c) {
            AxisExtent window = Compose(operand, c, stride);
            if (FitsSamples(window, lengths)) fits.push_back(window);
          }
        }
      }
    }
    if (fits.empty()) return std::nullopt;
    const AxisExtent& first = fits.front();
    for (const AxisExtent& other : fits) {
      std::optional<std::vector<int64_t>> at = WhereTheyDiffer(first, other);
      if (!at) at = WhereTheyDiffer(other, first);
      if (!at) continue;  // the same length at every size
      for (const std::vector<int64_t>& sampled : sizes_) {
        if (sampled == *at) {
          Fail(
              fmt::format("the sizes compared do not tell the length of axis {} of %{}: {} and "
                          "{} both fit them",
                          a, name, kernels::ExtentsToString({first}, {0}, SymbolNames()),
                          kernels::ExtentsToString({other}, {0}, SymbolNames())));
        }
      }
      throw UndecidedLength{*at};
    }
    return first;
  }

  // Sizes at which `one` and `other` differ: every symbol at its bound but one's, which varies
  // from its bound down (from the low sample on first: at size 1 the module may fold further).
  std::optional<std::vector<int64_t>> WhereTheyDiffer(const AxisExtent& one,
                                                      const AxisExtent& other) const {
    const kernels::DynamicRange& range = ranges_[one.symbol];
    std::vector<int64_t> at = sizes_[0];
    auto differs = [&](int64_t n) {
      at[one.symbol] = n;
      return one.At(at) != other.At(at);
    };
    for (int64_t n = range.bound; n >= std::max(range.minimum, LowSample(range)); --n) {
      if (differs(n)) return at;
    }
    for (int64_t n = range.minimum; n < LowSample(range); ++n) {
      if (differs(n)) return at;
    }
    return std::nullopt;
  }

  // floor((operand + c) / stride) as one extent: floor((floor((s n + o) / d) + c) / stride) is
  // floor((s n + o + c d) / (d stride)) for integers; common factors are divided out.
  static AxisExtent Compose(const AxisExtent& operand, int64_t c, int64_t stride) {
    AxisExtent e = operand;
    e.offset = operand.offset + c * operand.divisor;
    e.divisor = operand.divisor * stride;
    int64_t common = std::gcd(std::gcd(e.scale, e.offset), e.divisor);
    if (common > 1) {
      e.scale /= common;
      e.offset /= common;
      e.divisor /= common;
    }
    return e;
  }

  std::vector<std::string> SymbolNames() const { return kernels::SymbolsOf(ranges_); }

  // A constant that changes with the sizes must be the valid prefix of its value at the bounds.
  void CheckConstant(size_t i, const TensorExtents& extents) const {
    const ir::Tensor& bound = functions_[0]->nodes[i].value;
    for (size_t f = 1; f < functions_.size(); ++f) {
      const ir::Tensor& small = functions_[f]->nodes[i].value;
      ir::Tensor prefix(small.type());
      CopyPrefix(static_cast<const uint8_t*>(bound.raw_data()), bound.shape(),
                 static_cast<uint8_t*>(prefix.raw_data()), small.shape(),
                 ir::SizeOf(small.dtype()));
      if (small.num_bytes() > 0 && std::memcmp(prefix.raw_data(), small.raw_data(),
                                               static_cast<size_t>(small.num_bytes()))) {
        Fail(fmt::format(
            "the constant %{} {} at {} is not the leading part of its value at {}",
            functions_[0]->nodes[i].name,
            kernels::ExtentsToString(extents, bound.shape(), kernels::SymbolsOf(ranges_)), At(f),
            At(0)));
      }
    }
  }

  const kernels::DynamicRanges& ranges_;
  std::vector<std::vector<int64_t>> sizes_;
  std::vector<const ir::GraphFunction*> functions_;
};

}  // namespace

void CopyPrefix(const uint8_t* from, const ir::Shape& from_shape, uint8_t* to,
                const ir::Shape& to_shape, int64_t element_bytes) {
  CopyPrefixAt(from, from_shape, to, to_shape, element_bytes, 0);
}

int64_t LowSample(const kernels::DynamicRange& range) {
  return range.minimum == 1 && range.bound >= 4 ? 2 : range.minimum;
}

std::map<std::string, TensorExtents> CompareAtSizes(
    const kernels::DynamicRanges& ranges, const std::vector<std::vector<int64_t>>& sizes,
    const std::vector<const ir::GraphFunction*>& functions) {
  return Comparison(ranges, sizes, functions).Run();
}

}  // namespace tandem::backends
