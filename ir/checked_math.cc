#include "ir/checked_math.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace tandem::ir {

void ThrowOverflow(std::string_view what, int64_t a, char symbol, int64_t b) {
  throw Error(fmt::format("{} overflows int64: {} {} {}", what, a, symbol, b));
}

}  // namespace tandem::ir
