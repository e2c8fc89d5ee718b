// Small text helpers for the HTML pages Tandem writes (the tuning report): escaping and
// human-readable durations.
#pragma once

#include <string>

namespace tandem::report {

// `text` with &, <, >, " and ' replaced by character references: safe in element content and in
// quoted attribute values.
std::string HtmlEscape(const std::string& text);

// A duration with a unit that fits it: "812 ns", "12.3 us", "4.56 ms", "1.23 s", "2m 05s";
// "-" for a value that is not finite or not positive.
std::string FormatDuration(double seconds);

// The first line of `text`, cut to `max_length` characters with "..." when longer.
std::string Shorten(const std::string& text, size_t max_length);

}  // namespace tandem::report
