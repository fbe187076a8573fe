// Text for the timeline SVG (timeline_svg.cc): labels made safe for XML, device lists and
// durations written compactly, numbers independent of the C locale. Not an API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace alpa::timeline_internal {

// Fixed-point text independent of the C locale (std::to_chars), -0 printed as 0.
std::string Fixed(double v, int decimals);
std::string Int(int64_t v);

// The input as valid UTF-8 without XML-forbidden control characters: an invalid byte or a
// control character becomes '?', so any label yields a well-formed document.
std::u32string DecodeLabel(std::string_view s);
// Escaped for XML text and attribute values.
void AppendEscaped(std::string* out, const std::u32string& s);
// At most max_chars characters; a cut one ends in an ellipsis.
std::u32string Ellipsize(std::u32string s, int64_t max_chars);
// DecodeLabel, Ellipsize and AppendEscaped in one.
std::string Escaped(std::string_view s, int64_t max_chars);

// "dev 0-7", "dev 0-3,8-11", "dev 5"; cut to max_chars with the device count kept:
// "dev 0,8,16,… (64)".
std::string DeviceRuns(std::vector<int64_t> devices, int64_t max_chars);
// A duration for the header: four significant digits in s, ms, µs or ns.
std::string Duration(double seconds);

}  // namespace alpa::timeline_internal
