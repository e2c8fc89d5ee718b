// A nesting bound for JSON read from files and databases.
//
// nlohmann::json parses iteratively, but converting, comparing, printing or walking a parsed value
// recurses once per level, so text nested deeper than any Tandem record is rejected before it is
// parsed. The scan is linear and allocates nothing.
#pragma once

#include <string>
#include <string_view>

namespace tandem::ir {

// Arrays and objects nested deeper than this are rejected. Tandem's own records (traces with
// nested tuning passes, decision maps) stay far below it.
inline constexpr int kMaxJsonDepth = 256;

// Throws ir::Error naming the limit and the line/column of the first bracket past it when `text`
// nests arrays and objects deeper than kMaxJsonDepth. `source` names the file or record (may be
// empty). Brackets inside strings do not count; malformed text is left to the JSON parser.
void CheckJsonDepth(std::string_view text, const std::string& source = "");

}  // namespace tandem::ir
