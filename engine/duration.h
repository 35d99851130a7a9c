#pragma once
// Durations spelled as Go and kubectl spell them: "15s", "500ms", "1m30s", "2h", "0". Units:
// ms, s, m, h. A number without a unit is refused (seconds or milliseconds? a reader would have
// to guess). The one parser, for the command line's flags (adapters/app/durations.h) and for
// the StatefulSet's annotations (stsresize.dev/scaledown-claims). Pure.
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

}  // namespace stsresize
