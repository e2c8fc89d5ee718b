// Symbolic dimensions of ONNX graph inputs named by arithmetic on other symbols, as exporters
// name a cache's total length: "past_sequence_length + 1",
// "past_sequence_length + sequence_length", "2*seq". Such a name is an expression of integers,
// symbol names ([A-Za-z_][A-Za-z0-9_.]*), +, -, * and parentheses; any other name is one symbol.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace tandem::frontend {

// The symbols whose sizes give the extent of a dimension named `dim_param`: the names in it when
// it is an expression with at least one operator, the name itself otherwise.
std::set<std::string> DimParamSymbols(const std::string& dim_param);

// The extent of a dimension named `dim_param` with the symbols' sizes `sizes`: the size bound to
// that exact name when there is one; else, for an expression whose symbols all have sizes, its
// value; nullopt otherwise (also when the value overflows int64).
std::optional<int64_t> DimParamExtent(const std::string& dim_param,
                                      const std::map<std::string, int64_t>& sizes);

}  // namespace tandem::frontend
