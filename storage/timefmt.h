// timefmt.h: UTC time text for storage (internal): days for counters, RFC 3339 for import.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bounced {

// "YYYY-MM-DD" (UTC) of a Unix time.
std::string DayOf(int64_t unix_time);
// Parses "YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)" (also with a space for T, or a bare
// "YYYY-MM-DD"), or a decimal Unix time. nullopt when it is neither.
std::optional<int64_t> ParseTime(std::string_view text);

}  // namespace bounced
