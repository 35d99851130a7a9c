#pragma once
// Durations on the command line, spelled as Go and kubectl spell them: "15s", "500ms",
// "1m30s", "2h", "0". Units: ms, s, m, h. A number without a unit is refused (seconds or
// milliseconds? the flag would have to guess).
#include <expected>
#include <string>
#include <string_view>

#include "engine/time.h"

namespace stsresize {

std::expected<Duration, std::string> parse_duration(std::string_view text);

}  // namespace stsresize
