#pragma once
// Timestamps as the Kubernetes API writes them (metav1.Time): RFC 3339 in UTC with whole
// seconds, "2027-01-15T08:00:00Z".
#include <optional>
#include <string>
#include <string_view>

#include "engine/time.h"

namespace stsresize {

std::string format_rfc3339(TimePoint time);
// Accepts what format_rfc3339 writes (fractional seconds and numeric offsets are refused).
std::optional<TimePoint> parse_rfc3339(std::string_view text);

}  // namespace stsresize
