#include "adapters/clock/system_clock.h"

namespace stsresize {

TimePoint SystemClock::now() const {
  return std::chrono::system_clock::now();
}

}  // namespace stsresize
