// "Did you mean ...?" suggestions for unknown names (ops, passes, pipelines).
#pragma once

#include <string>
#include <vector>

namespace tandem::ir {

// Case-insensitive Levenshtein distance.
size_t EditDistance(const std::string& a, const std::string& b);
// The known names within `max_distance` edits of `name`, in the order given.
std::vector<std::string> CloseNames(const std::string& name, const std::vector<std::string>& known,
                                    size_t max_distance);

}  // namespace tandem::ir
