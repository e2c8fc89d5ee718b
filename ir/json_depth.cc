#include "ir/json_depth.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace tandem::ir {

void CheckJsonDepth(std::string_view text, const std::string& source) {
  int depth = 0;
  int line = 1;
  int column = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw Error(fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth),
                    ErrorLocation{.file = source, .line = line, .column = column});
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace tandem::ir
