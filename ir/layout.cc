#include "ir/layout.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstring>

#include "ir/checked_math.h"
#include "ir/error.h"
#include "ir/ops/op_util.h"

namespace tandem::ir {
namespace {

bool IsUpper(char c) {
  return c >= 'A' && c <= 'Z';
}
bool IsLower(char c) {
  return c >= 'a' && c <= 'z';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
char ToUpper(char c) {
  return static_cast<char>(c - 'a' + 'A');
}

// Split factors larger than this are certainly a typo (and would overflow index arithmetic).
constexpr int64_t kMaxFactor = int64_t{1} << 31;

}  // namespace

Layout::Layout(const std::string& text) : name_(text) {
  auto fail = [&](size_t position, const std::string& what) {
    throw Error(fmt::format("invalid layout '{}': {} at position {}", text, what, position));
  };
  if (text.empty()) throw Error("invalid layout '': a layout names at least one axis");
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    char c = text[i];
    if (IsUpper(c)) {
      if (IndexOf(c) >= 0) fail(i, fmt::format("duplicate axis '{}'", c));
      axes_.push_back(Axis{c, 0});
      ++i;
      continue;
    }
    if (IsLower(c)) fail(i, fmt::format("sub-axis '{}' has no split factor (e.g. 8{})", c, c));
    if (!IsDigit(c)) fail(i, fmt::format("unexpected character '{}'", c));
    int64_t factor = 0;
    while (i < text.size() && IsDigit(text[i])) {
      factor = factor * 10 + (text[i] - '0');
      if (factor > kMaxFactor) fail(start, "split factor is too large");
      ++i;
    }
    if (i == text.size()) fail(start, "split factor is not followed by a lower-case axis letter");
    char sub = text[i];
    if (IsUpper(sub)) {
      fail(i, fmt::format("split factor {} must be followed by a lower-case axis letter but is "
                          "followed by primal axis '{}'",
                          factor, sub));
    }
    if (!IsLower(sub)) fail(i, fmt::format("unexpected character '{}'", sub));
    if (factor == 0) fail(start, fmt::format("sub-axis '{}' has split factor 0", sub));
    if (IndexOf(sub) >= 0) fail(i, fmt::format("duplicate sub-axis '{}'", sub));
    if (IndexOf(ToUpper(sub)) < 0) {
      fail(i, fmt::format("sub-axis '{}' comes without (or before) its primal axis '{}'", sub,
                          ToUpper(sub)));
    }
    axes_.push_back(Axis{sub, factor});
    ++i;
  }
}

std::string Layout::primal_axes() const {
  std::string out;
  for (const Axis& axis : axes_) {
    if (axis.is_primal()) out.push_back(axis.name);
  }
  return out;
}

int64_t Layout::IndexOf(char name) const {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

int64_t Layout::SplitFactor(char primal) const {
  char sub = static_cast<char>(std::tolower(static_cast<unsigned char>(primal)));
  int64_t index = IndexOf(sub);
  return index < 0 ? 1 : axes_[static_cast<size_t>(index)].factor;
}

bool Layout::SamePrimalAxes(const Layout& other) const {
  std::string mine = primal_axes();
  std::string theirs = other.primal_axes();
  if (mine.size() != theirs.size()) return false;
  for (char c : mine) {
    if (!other.Contains(c)) return false;
  }
  return true;
}

Shape ConvertShape(const Shape& shape, const Layout& from, const Layout& to) {
  if (!from.SamePrimalAxes(to)) {
    throw Error(fmt::format("layouts '{}' and '{}' do not have the same primal axes ({} vs {})",
                            from.name(), to.name(), from.primal_axes(), to.primal_axes()));
  }
  if (static_cast<int64_t>(shape.size()) != from.rank()) {
    throw Error(fmt::format("shape {} has rank {} but layout '{}' has {} axes",
                            ShapeToString(shape), shape.size(), from.name(), from.rank()));
  }
  // Logical extent of every primal axis, indexed by letter.
  std::array<int64_t, 26> extent{};
  for (size_t i = 0; i < shape.size(); ++i) {
    const Layout::Axis& axis = from.axes()[i];
    if (axis.is_primal()) {
      extent[static_cast<size_t>(axis.name - 'A')] = CheckedMul(
          shape[i], from.SplitFactor(axis.name),
          fmt::format("the logical extent of axis {} in layout '{}'", axis.name, from.name()));
    } else if (shape[i] != axis.factor) {
      throw Error(
          fmt::format("shape {} does not match layout '{}': sub-axis '{}' has extent {} "
                      "but factor {}",
                      ShapeToString(shape), from.name(), axis.name, shape[i], axis.factor));
    }
  }
  Shape out;
  for (const Layout::Axis& axis : to.axes()) {
    if (!axis.is_primal()) {
      out.push_back(axis.factor);
      continue;
    }
    int64_t total = extent[static_cast<size_t>(axis.name - 'A')];
    int64_t factor = to.SplitFactor(axis.name);
    if (total % factor != 0) {
      throw Error(
          fmt::format("cannot convert shape {} from layout '{}' to '{}': split factor {} "
                      "does not divide the extent {} of axis '{}'",
                      ShapeToString(shape), from.name(), to.name(), factor, total, axis.name));
    }
    out.push_back(total / factor);
  }
  return out;
}

Tensor TransformLayout(const Tensor& tensor, const Layout& from, const Layout& to) {
  Shape out_shape = ConvertShape(tensor.shape(), from, to);
  Tensor out(TensorType{out_shape, tensor.dtype(), to.name()});
  std::vector<int64_t> in_strides = ops::RowMajorStrides(tensor.shape());
  size_t element_size = static_cast<size_t>(SizeOf(tensor.dtype()));
  const auto* source = static_cast<const uint8_t*>(tensor.raw_data());
  auto* target = static_cast<uint8_t*>(out.raw_data());
  // Output axis k adds index[k] * scale[k] to the logical coordinate of letter letter_out[k];
  // input axis j sits at (coordinate[letter_in[j]] / divisor[j]) % modulus[j] (modulus 0: none).
  size_t rank_out = out_shape.size(), rank_in = from.axes().size();
  std::vector<size_t> letter_out(rank_out), letter_in(rank_in);
  std::vector<int64_t> scale(rank_out), divisor(rank_in), modulus(rank_in);
  for (size_t k = 0; k < rank_out; ++k) {
    const Layout::Axis& axis = to.axes()[k];
    letter_out[k] = static_cast<size_t>((axis.is_primal() ? axis.name : ToUpper(axis.name)) - 'A');
    scale[k] = axis.is_primal() ? to.SplitFactor(axis.name) : 1;
  }
  for (size_t j = 0; j < rank_in; ++j) {
    const Layout::Axis& axis = from.axes()[j];
    letter_in[j] = static_cast<size_t>((axis.is_primal() ? axis.name : ToUpper(axis.name)) - 'A');
    divisor[j] = axis.is_primal() ? from.SplitFactor(axis.name) : 1;
    modulus[j] = axis.is_primal() ? 0 : axis.factor;
  }
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  if (total == 0) return out;
  if (rank_out == 0) {
    std::memcpy(target, source, element_size);
    return out;
  }
  // An input axis depends on one letter's coordinate only, so the input offset is a sum over
  // letters of a function of that letter's coordinate: tabulated once per letter (offset_of),
  // it leaves a lookup per element, and the innermost output axis a strided walk of one table.
  std::array<int64_t, 26> extent{};
  for (size_t k = 0; k < rank_out; ++k) {
    extent[letter_out[k]] += (out_shape[k] - 1) * scale[k];
  }
  std::array<std::vector<int64_t>, 26> offset_of;
  std::vector<size_t> letters;
  for (size_t k = 0; k < rank_out; ++k) {
    size_t letter = letter_out[k];
    if (!offset_of[letter].empty()) continue;
    letters.push_back(letter);
    offset_of[letter].assign(static_cast<size_t>(extent[letter] + 1), 0);
    for (int64_t c = 0; c <= extent[letter]; ++c) {
      int64_t offset = 0;
      for (size_t j = 0; j < rank_in; ++j) {
        if (letter_in[j] != letter) continue;
        int64_t position = c / divisor[j];
        if (modulus[j] != 0) position %= modulus[j];
        offset += position * in_strides[j];
      }
      offset_of[letter][static_cast<size_t>(c)] = offset;
    }
  }
  size_t last = rank_out - 1;
  const std::vector<int64_t>& inner = offset_of[letter_out[last]];
  int64_t inner_size = out_shape[last], inner_scale = scale[last];
  std::vector<int64_t> index(rank_out, 0);
  std::array<int64_t, 26> coordinate{};
  for (int64_t flat = 0; flat < total; flat += inner_size) {
    coordinate.fill(0);
    for (size_t k = 0; k < last; ++k) coordinate[letter_out[k]] += index[k] * scale[k];
    int64_t outer = 0;
    for (size_t letter : letters) {
      if (letter != letter_out[last])
        outer += offset_of[letter][static_cast<size_t>(coordinate[letter])];
    }
    const int64_t* walk = inner.data() + coordinate[letter_out[last]];
    uint8_t* destination = target + static_cast<size_t>(flat) * element_size;
    if (element_size == 4) {
      auto* out32 = reinterpret_cast<uint32_t*>(destination);
      for (int64_t i = 0; i < inner_size; ++i) {
        std::memcpy(out32 + i, source + static_cast<size_t>(outer + walk[i * inner_scale]) * 4, 4);
      }
    } else {
      for (int64_t i = 0; i < inner_size; ++i) {
        std::memcpy(destination + static_cast<size_t>(i) * element_size,
                    source + static_cast<size_t>(outer + walk[i * inner_scale]) * element_size,
                    element_size);
      }
    }
    for (size_t k = last; k-- > 0;) {  // advance the row-major output index, last axis aside
      if (++index[k] < out_shape[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

}  // namespace tandem::ir
