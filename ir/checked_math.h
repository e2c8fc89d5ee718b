// Overflow-checked int64 arithmetic for shapes, element counts, byte sizes and offsets.
//
// Every quantity derived from user input (a shape, an attribute, a planned offset) is computed
// with these helpers; an overflow is an Error naming `what` (e.g. "element count of
// f32[...]", "padded extent of axis H"), which callers extend with the op and node.
#pragma once

#include <cstdint>
#include <string_view>

namespace tandem::ir {

// Throws Error("{what} overflows int64: {a} {symbol} {b}").
[[noreturn]] void ThrowOverflow(std::string_view what, int64_t a, char symbol, int64_t b);

inline int64_t CheckedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) ThrowOverflow(what, a, 'x', b);
  return result;
}

inline int64_t CheckedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) ThrowOverflow(what, a, '+', b);
  return result;
}

inline int64_t CheckedSub(int64_t a, int64_t b, std::string_view what) {
  int64_t result = 0;
  if (__builtin_sub_overflow(a, b, &result)) ThrowOverflow(what, a, '-', b);
  return result;
}

}  // namespace tandem::ir
