#pragma once
#include "engine/time.h"

namespace stsresize {

// The only source of time for engine/ and states/. Production uses the system clock; tests use
// a manual clock that they advance, so no test ever sleeps.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

}  // namespace stsresize
