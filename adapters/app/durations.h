#pragma once
// Durations on the command line, spelled as Go and kubectl spell them: "15s", "500ms",
// "1m30s", "2h", "0". Units: ms, s, m, h. A number without a unit is refused (seconds or
// milliseconds? the flag would have to guess). Every duration the CLI prints is spelled here.
#include <expected>
#include <string>
#include <string_view>

#include "engine/time.h"

namespace stsresize {

std::expected<Duration, std::string> parse_duration(std::string_view text);

// Exact, in the units parse_duration reads, largest first: "450ms", "15s", "30m", "1h2m"; units
// that are 0 left out, so a whole value reads as the flag that set it. Milliseconds beyond a
// second show as Go shows them, a fraction ("2m13.5s"). A negative duration is "0ms".
std::string format_duration(Duration duration);

// Rounded as kubectl shows an AGE: "45s", "3m12s", "17m", "2h5m", "26h", "3d4h", "12d". Not
// exact on purpose: two units at most, so a column of ages stays narrow.
std::string human_age(Duration age);

}  // namespace stsresize
