#include "adapters/runtime/monotonic_clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace stsresize::runtime {
namespace {

using std::chrono::milliseconds;

TEST(MonotonicClock, StartsAtTheWallClockAndAdvancesWithRealTime) {
  const MonotonicClock clock;
  const auto wall = std::chrono::system_clock::now();
  EXPECT_LT(std::chrono::abs(clock.now() - wall), milliseconds{100});
  const TimePoint first = clock.now();
  std::this_thread::sleep_for(milliseconds{20});
  const TimePoint second = clock.now();
  EXPECT_GE(second - first, milliseconds{20});
  EXPECT_LT(second - first, milliseconds{2000});
}

TEST(MonotonicClock, NeverGoesBackwards) {
  const MonotonicClock clock;
  TimePoint previous = clock.now();
  for (int i = 0; i < 100'000; ++i) {
    const TimePoint next = clock.now();
    ASSERT_GE(next, previous) << "reading " << i;
    previous = next;
  }
}

}  // namespace
}  // namespace stsresize::runtime
