#pragma once
// A Clock that never jumps: the steady clock, offset so that it reads the wall-clock time of
// its construction. For the runtime's timing (WorkQueue delays, leader election deadlines):
// when NTP steps the system clock back, a leader timing its renew deadline on the wall clock
// would believe its lease valid for longer than it is; this clock cannot. Lease timestamps
// written from it drift from the wall clock only as much as the machine's clock is slewed
// while the process runs (others never rely on them: they time expiry themselves).
#include <chrono>

#include "engine/ports/clock.h"

namespace stsresize::runtime {

class MonotonicClock final : public Clock {
 public:
  MonotonicClock()
      : wall_at_start_(std::chrono::system_clock::now()),
        steady_at_start_(std::chrono::steady_clock::now()) {}

  TimePoint now() const override {
    return wall_at_start_ + std::chrono::duration_cast<TimePoint::duration>(
                                std::chrono::steady_clock::now() - steady_at_start_);
  }

 private:
  const TimePoint wall_at_start_;
  const std::chrono::steady_clock::time_point steady_at_start_;
};

}  // namespace stsresize::runtime
