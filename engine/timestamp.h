#pragma once
// RFC 3339 timestamps in UTC with millisecond precision ("2027-01-15T08:00:00.123Z"), the form
// used in annotations and journal payloads. Pure conversion; the time itself comes from Clock.
#include <expected>
#include <string>
#include <string_view>

#include "engine/time.h"

namespace stsresize {

// Truncates to milliseconds: what is stored is exactly what is read back.
TimePoint to_millis(TimePoint time);
std::string format_timestamp(TimePoint time);
// Accepts "YYYY-MM-DDTHH:MM:SSZ" and "YYYY-MM-DDTHH:MM:SS.fffZ" (1 to 9 fraction digits,
// truncated to milliseconds); anything else is an error quoting the input.
std::expected<TimePoint, std::string> parse_timestamp(std::string_view text);

}  // namespace stsresize
