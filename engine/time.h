#pragma once
#include <chrono>

namespace stsresize {
// Wall-clock instants (journal timestamps, annotation "since" fields) and the durations the
// engine asks to be called back after. Both come from the Clock port, never from the system.
using TimePoint = std::chrono::system_clock::time_point;
using Duration = std::chrono::milliseconds;
}  // namespace stsresize
