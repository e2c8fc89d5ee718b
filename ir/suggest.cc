#include "ir/suggest.h"

#include <algorithm>
#include <cctype>

namespace tandem::ir {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> CloseNames(const std::string& name, const std::vector<std::string>& known,
                                    size_t max_distance) {
  std::vector<std::string> close;
  for (const std::string& k : known) {
    if (EditDistance(k, name) <= max_distance) close.push_back(k);
  }
  return close;
}

}  // namespace tandem::ir
