#pragma once
#include "engine/ports/clock.h"

namespace stsresize {

// Time that moves only when a test says so.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint{std::chrono::seconds{1'800'000'000}})
      : now_(start) {}
  TimePoint now() const override { return now_; }
  void advance(Duration by) { now_ += by; }
  void set(TimePoint to) { now_ = to; }

 private:
  TimePoint now_;
};

}  // namespace stsresize
