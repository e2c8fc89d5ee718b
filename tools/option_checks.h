// Validators for numeric command-line options: each checks the text the user gave before it is
// converted, so that an out-of-range value is refused with the option's rule ("--repeats: must
// be an integer >= 1, got '0'") before anything runs, instead of being clamped, wrapped or
// reported in the command-line library's words.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>

namespace tandem::tools {

// An integer in [min, max] (max defaults to the largest int64, or to what the option's type
// holds when given).
CLI::Validator IntegerIn(int64_t min, int64_t max = INT64_MAX);
// A finite number >= min (inclusive) or > min (!inclusive); "nan" and "inf" are refused.
CLI::Validator FiniteNumber(double min, bool inclusive);

}  // namespace tandem::tools
